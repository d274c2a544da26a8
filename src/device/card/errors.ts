// The one way the card refuses an operation; `code` tells each caller (web upload, FTP) which answer fits.

export type CardErrorCode =
  /** A client name the web upload refuses (NUL, "..", a link leading out, a file where a folder must be). */
  | "unsafe-path"
  /** Nothing reachable there: missing, or one of the card's own internal names. */
  | "not-found"
  /** The path exists but resolves outside the card (a symlink leading out). */
  | "outside"
  /** A new entry may not take that name (the card root, an internal name, the FAT rules). */
  | "name-not-allowed"
  /** A name with control characters: no door creates, reaches or lists one (they would split listing lines). */
  | "control-character"
  /** The card cannot hold the bytes. */
  | "no-space"
  /** The card cannot hold a file this big (FAT32: under 4 GiB). */
  | "too-big"
  /** Another write to the same file is in progress. */
  | "busy"
  /** The card belongs to the USB host (MSC mode), or the write was aborted. */
  | "not-writable";

export class CardError extends Error {
  override readonly name = "CardError";
  constructor(
    readonly code: CardErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A client-supplied name, safe to put in a message (control characters replaced, length capped). */
export function printable(name: string): string {
  // C0 and C1 controls and DEL (terminal escapes), and the bidirectional overrides that reorder what a line shows.
  return name.replace(/[\0-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, "?").slice(0, 200);
}
