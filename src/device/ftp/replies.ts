// FTP replies: the error a handler throws to answer with a code, and how file-system errors map to codes.
import { CardError } from "../card/card.js";
import { toFtpReply } from "../errors.js";

/**
 * A reply to send; thrown by handlers to stop with an error. It is the FTP answer itself, not a kind of error: its
 * number is `replyCode`, so `code` on the device's errors is always a row of the errors table (or the system's).
 */
export class Reply extends Error {
  constructor(
    readonly replyCode: number,
    readonly text: string,
  ) {
    super(`${replyCode} ${text}`);
  }
}

/**
 * `SITE FREE`'s text as the firmware's FTP server (SimpleFTPServer, FtpServer.cpp) words it: free space and capacity
 * in kB (1 024 bytes) while the capacity is under 1 000 MB, else in MB (1 024 kB), each rounded down.
 */
export function freeSpaceText(freeBytes: number, totalBytes: number): string {
  const free = Math.floor(freeBytes / 1024);
  const capacity = Math.floor(totalBytes / 1024);
  if (Math.floor(capacity / 1024) < 1000) return `${free} kB free of ${capacity} kB capacity`;
  return `${Math.floor(free / 1024)} MB free of ${Math.floor(capacity / 1024)} MB capacity`;
}

/** `"` inside a quoted path is doubled (RFC 959 §7). */
export function quote(path: string): string {
  return `"${path.replaceAll('"', '""')}"`;
}

/** What was being done when the card refused: reaching a path, naming a new entry, or receiving an upload's bytes. */
export type CardStep = "path" | "new-name" | "upload";

/**
 * The one mapping from the card's refusals (CardError) and the file-system errors it passes on to FTP replies (the
 * errors table's `ftp`). A new name refused is 553 whatever the reason; an upload's space or name refused says so.
 * Anything unexpected is rethrown (→ 451).
 */
export function cardReply(e: unknown, step: CardStep = "path"): never {
  if (e instanceof Reply) throw e;
  if (e instanceof CardError) {
    if (step === "new-name") throw new Reply(553, `File name not allowed: ${e.message}.`);
    if (step === "upload" && e.code === "DEVICE_NAME_NOT_ALLOWED") throw new Reply(553, e.message);
  }
  const reply = toFtpReply(e);
  if (reply === undefined) throw e;
  throw new Reply(reply.code, e instanceof CardError && step === "upload" && reply.code === 552 ? `Upload aborted: ${reply.text}` : reply.text);
}
