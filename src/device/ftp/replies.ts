// FTP replies: the error a handler throws to answer with a code, and how file-system errors map to codes.
import { CardError, type CardErrorCode } from "../card/card.js";

/** A reply to send; thrown by handlers to stop with an error. */
export class Reply extends Error {
  constructor(
    readonly code: number,
    readonly text: string,
  ) {
    super(`${code} ${text}`);
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

/** The reply code for each way the card refuses: 552 no room, 450 busy, 553 a name no door takes, 550 the rest. */
const CARD_REFUSALS: Record<CardErrorCode, number> = {
  "unsafe-path": 550,
  "not-found": 550,
  outside: 550,
  "name-not-allowed": 550,
  "control-character": 553,
  "no-space": 552,
  "too-big": 552,
  busy: 450,
  "not-writable": 550,
};

/** What was being done when the card refused: reaching a path, naming a new entry, or receiving an upload's bytes. */
export type CardStep = "path" | "new-name" | "upload";

/**
 * The one mapping from the card's refusals (CardError) and the file-system errors it passes on to FTP replies. A new
 * name refused is 553 whatever the reason; an upload's space or name refused says so. Anything unexpected is
 * rethrown (→ 451).
 */
export function cardReply(e: unknown, step: CardStep = "path"): never {
  if (e instanceof Reply) throw e;
  if (e instanceof CardError) {
    if (step === "new-name") throw new Reply(553, `File name not allowed: ${e.message}.`);
    if (step === "upload" && e.code === "name-not-allowed") throw new Reply(553, e.message);
    const code = CARD_REFUSALS[e.code];
    throw new Reply(code, step === "upload" && code === 552 ? `Upload aborted: ${e.message}` : e.message);
  }
  switch ((e as NodeJS.ErrnoException).code) {
    case "ENOENT":
      throw new Reply(550, "No such file or folder.");
    case "EEXIST":
      throw new Reply(550, "It already exists.");
    case "ENOTEMPTY":
      throw new Reply(550, "Folder not empty.");
    case "EISDIR":
      throw new Reply(550, "That is a folder.");
    case "ENOTDIR":
      throw new Reply(550, "Not a folder.");
    case "EACCES":
    case "EPERM":
      throw new Reply(550, "Permission denied.");
    case "EINVAL":
      throw new Reply(550, "Invalid request (a folder cannot move into itself).");
    case "ENOSPC":
      throw new Reply(552, "The card's filesystem is full.");
    case "ENAMETOOLONG":
      throw new Reply(553, "File name not allowed: a name is longer than 255 bytes or the path too long.");
    case "ELOOP":
      throw new Reply(550, "Too many levels of symbolic links.");
    default:
      throw e;
  }
}
