// FTP replies: the error a handler throws to answer with a code, and how file-system errors map to codes.
import { CardError } from "../card/card.js";

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

/** The card's refusal → 550 (a path missing, outside the card, not allowed), 552 (no room) or 450 (busy). */
export function pathReply(e: unknown): never {
  if (!(e instanceof CardError)) throw e;
  if (e.code === "no-space" || e.code === "too-big") throw new Reply(552, e.message);
  if (e.code === "busy") throw new Reply(450, e.message);
  throw new Reply(550, e.message);
}

/** A file-system error → the FTP reply a client understands; anything unexpected is rethrown (→ 451). */
export function fsReply(e: unknown): never {
  if (e instanceof Reply) throw e;
  if (e instanceof CardError) pathReply(e);
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
