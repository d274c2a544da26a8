// What `framefi` says of an error, and the code it exits with: the error's row in ../errors.ts, in the command line's
// own words where the row has them. Errors that are not the client's are a bug to report.
import { DeviceHttpError } from "../api/index.js";
import { blankControls } from "../api/text.js";
import { fill } from "../../shared/message-template.js";
import { ERRORS, EXIT, FrameFiError, type Row } from "../errors.js";
import { SyncStopped, sentence } from "../sync/errors.js";
import { type Connection, hostHint } from "./connection.js";

export interface Description {
  /** The line for stderr, after "framefi: ". */
  line: string;
  /** What happened and what to do, without the address's hint: the line of a file, or the reason of a stopped sync. */
  reason: string;
  exit: number;
  /** The device's JSON answer, which --json prints on stdout. */
  answer?: string;
}

/**
 * `e` as `framefi` tells it; `conn`: where the device's address came from, told when the answer may not be the device's.
 * One line, whatever the values it quotes hold (a line break in an option's value, an escape sequence).
 */
export function describe(e: unknown, conn?: Connection): Description {
  const told = describeAsIs(e, conn);
  return { ...told, line: blankControls(told.line), reason: blankControls(told.reason) };
}

function describeAsIs(e: unknown, conn?: Connection): Description {
  if (!(e instanceof FrameFiError)) {
    const reason = (e as Error)?.message ?? String(e);
    return { line: `unexpected error: ${reason}. Please report it.`, reason, exit: broken(e) ? EXIT.unreachable : EXIT.deviceError };
  }
  const row: Row = ERRORS[e.code];
  if (e instanceof SyncStopped) {
    const cause = describeAsIs(e.cause);
    const line = fill(row.cli ?? row.message, { ...e.parts, reason: sentence(cause.reason) });
    return { line, reason: line, exit: e.interrupted ? row.exit : cause.exit };
  }
  const reason = row.cli ? fill(row.cli, e.parts) : e.message;
  const answer = e instanceof DeviceHttpError && e.body.trim().startsWith("{") ? e.body.trimEnd() : undefined;
  return { line: reason + (conn ? addressHint(e, conn) : ""), reason, exit: row.exit, ...(answer ? { answer } : {}) };
}

/** Whether `e` is a connection that broke (the FTP server went away, or the device left FTP mode). */
function broken(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return typeof code === "string" && /^(ECONN|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)/.test(code);
}

/** Where the address came from, for an answer that may not be the device's (a ProtocolError names the path itself). */
function addressHint(e: FrameFiError, conn: Connection): string {
  switch (e.code) {
    case "FRAMEFI_DEVICE_UNREACHABLE":
    case "FRAMEFI_CERT_UNTRUSTED":
    case "FRAMEFI_CERT_INVALID":
      return hostHint(conn);
    case "FRAMEFI_NOT_THE_API":
    case "FRAMEFI_API_NOT_AT_ROOT":
    case "FRAMEFI_ANSWER_TOO_LONG":
      return hostHint(conn, false);
  }
  return e instanceof DeviceHttpError && (e.status === 404 || !e.fromApi) ? hostHint(conn) : "";
}
