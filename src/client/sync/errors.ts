// The errors of a sync that the CLI tells apart, in a module of their own so that the CLI can recognise them
// without loading the FTP client.
import type { ModeName } from "../api/index.js";
import { type ErrorArgs, FrameFiError } from "../errors.js";

/** The FTP server refused the login (530): wrong FTP user or password. */
export class FtpLoginError extends FrameFiError {
  override name = "FtpLoginError";
  constructor(host: string, port: number, user: string) {
    super("FRAMEFI_FTP_LOGIN_REFUSED", { host, port, user });
  }
}

/** No FTP server answered in time. */
export class FtpUnreachableError extends FrameFiError {
  override name = "FtpUnreachableError";
}

/** A local file could not be read, or changed while it was sent: that file fails, the connection is fine. */
export class LocalFileError extends FrameFiError {
  override name = "LocalFileError";

  static unreadable(cause: unknown): LocalFileError {
    const e = cause as NodeJS.ErrnoException;
    return new LocalFileError("FRAMEFI_LOCAL_UNREADABLE", { reason: e.code ?? e.message }, { cause });
  }

  static changed(): LocalFileError {
    return new LocalFileError("FRAMEFI_LOCAL_CHANGED", {});
  }
}

/** The sync stopped before its end (Ctrl-C, or no FTP connection left); the device is back in `mode`. */
export class SyncStopped extends FrameFiError {
  override name = "SyncStopped";
  constructor(
    /** Why, in the library's words (the CLI words its cause its own way). */
    reason: string,
    override readonly cause: unknown,
    readonly mode: ModeName | undefined,
    readonly interrupted: boolean,
  ) {
    const where = mode ? `The device is back in ${mode} mode.` : "Could not put the device back in its mode: check it with framefi status.";
    const parts = { reason: sentence(reason), where };
    const refused = cause instanceof FrameFiError && REFUSED_LOGINS.has(cause.code);
    const args: ErrorArgs = interrupted
      ? ["FRAMEFI_SYNC_INTERRUPTED", parts, { cause }]
      : refused
        ? ["FRAMEFI_SYNC_REFUSED", parts, { cause }]
        : ["FRAMEFI_SYNC_STOPPED", parts, { cause }];
    super(...args);
  }
}

/** A refused login: the same sync again would be refused the same way. */
const REFUSED_LOGINS = new Set(["FRAMEFI_LOGIN_REFUSED", "FRAMEFI_FORBIDDEN", "FRAMEFI_FTP_LOGIN_REFUSED"]);

/** `text` ending as a sentence does. */
export function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
