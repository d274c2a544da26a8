// What a FAT32 card can hold: the rules every write path checks on a USB gadget image (always) and on a folder
// card started with --fat-names, so nothing is accepted that the frame could not read.
import { readdirSync } from "node:fs";

/** FAT32 stores a file's size in 32 bits: 4 GiB minus one byte is the largest file. */
export const FAT_MAX_FILE_BYTES = 2 ** 32 - 1;

/** Characters a long FAT name cannot contain (besides control characters). */
const FORBIDDEN = /["*:<>?\\|]/;
const CONTROL = /[\x00-\x1f\x7f]/;

/** Why FAT cannot hold `name` (one path component) as it is, or undefined when it can. */
export function fatNameProblem(name: string): string | undefined {
  const bad = FORBIDDEN.exec(name)?.[0];
  if (bad !== undefined) return `FAT cards cannot hold the character ${bad} in a name (none of " * : < > ? \\ |); rename the file`;
  if (CONTROL.test(name)) return "FAT cards cannot hold control characters in a name; rename the file";
  if (/[. ]$/.test(name)) return "FAT cards drop a dot or space at the end of a name; rename the file";
  // Long names are stored in UTF-16 code units, at most 255 of them.
  if (name.length > 255) return "FAT cards hold names of at most 255 characters; shorten it";
  return undefined;
}

/** Why a file of `bytes` cannot go on a FAT card, or undefined. */
export function fatSizeProblem(bytes: number): string | undefined {
  return bytes > FAT_MAX_FILE_BYTES ? "FAT32 cards hold files smaller than 4 GiB; split or shrink the file" : undefined;
}

/**
 * The name among `names` that `name` would collide with on FAT, which ignores case ("a.jpg" and "A.JPG" are one
 * file there), or undefined. A name spelled exactly `name` is no collision: it is replaced.
 */
export function caseTwinAmong(names: readonly string[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return names.find((n) => n !== name && n.toLowerCase() === lower);
}

/**
 * The existing entry of `folder` that `name` would collide with on FAT (see caseTwinAmong), or undefined.
 * Synchronous: a caller that makes the entry in the same turn of the event loop cannot race another upload.
 */
export function fatCaseTwin(folder: string, name: string): string | undefined {
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch {
    return undefined;
  }
  return caseTwinAmong(entries, name);
}
