// The errors of a sync that the CLI tells apart, in a module of their own so that the CLI can recognise them
// without loading the FTP client.
import type { ModeName } from "../api/index.js";

/** The FTP server refused the login (530): wrong FTP user or password. */
export class FtpLoginError extends Error {
  override name = "FtpLoginError";
}

/** No FTP server answered in time. */
export class FtpUnreachableError extends Error {
  override name = "FtpUnreachableError";
}

/** A local file could not be read, or changed while it was sent: that file fails, the connection is fine. */
export class LocalFileError extends Error {
  override name = "LocalFileError";

  static unreadable(cause: unknown): LocalFileError {
    const e = cause as NodeJS.ErrnoException;
    return new LocalFileError(`cannot read the local file (${e.code ?? e.message})`, { cause });
  }

  static changed(): LocalFileError {
    return new LocalFileError("the file changed while it was being sent; run the sync again");
  }
}

/** The sync stopped before its end (Ctrl-C, or no FTP connection left); the device is back in `mode`. */
export class SyncStopped extends Error {
  override name = "SyncStopped";
  constructor(
    message: string,
    override readonly cause: unknown,
    readonly mode: ModeName | undefined,
    readonly interrupted: boolean,
  ) {
    super(message);
  }
}
