// What clients see of the card's folders: a folder's visible entries and one entry's facts.
import { lstatSync, type Stats } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { hasControlCharacter, isInternalName, type CardPath } from "./paths.js";

/** One entry of a folder listing. */
export interface CardEntry {
  name: string;
  isDir: boolean;
  size: number;
  mtime: Date;
}

/** The entry itself (a symlink stays a link), or undefined when there is none or it cannot be read. Synchronous. */
export function entryStats(target: CardPath): Stats | undefined {
  try {
    // No exception for a new file: building one (with its stack) cost more than the lookup itself.
    return lstatSync(target.absolute, { throwIfNoEntry: false });
  } catch {
    return undefined; // a name too long, say: refused when the file lands
  }
}

export async function entryOf(real: string, name: string): Promise<CardEntry> {
  const st = await stat(real);
  return { name, isDir: st.isDirectory(), size: st.isDirectory() ? 0 : st.size, mtime: st.mtime };
}

/**
 * The visible entries of a folder: no uploads in progress, no symlinks leading outside the card, nothing unreadable,
 * and no names with control characters (put on the card by other means): a CR or LF in a name would split its
 * listing line in two, and an escaped spelling would name a file that does not exist.
 */
export async function readFolder(real: string, inside: (real: string) => boolean): Promise<CardEntry[]> {
  const dirents = await readdir(real, { withFileTypes: true });
  const entries = await Promise.all(
    dirents.map(async (d): Promise<CardEntry | undefined> => {
      if (isInternalName(d.name) || hasControlCharacter(d.name)) return undefined;
      let target = join(real, d.name);
      try {
        if (d.isSymbolicLink()) {
          target = await realpath(target);
          if (!inside(target)) return undefined;
        }
        return await entryOf(target, d.name);
      } catch {
        return undefined; // vanished or dangling while we listed
      }
    }),
  );
  return entries.filter((e): e is CardEntry => e !== undefined).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
