// Folder listings in the formats clients parse: `ls -l` lines for LIST, RFC 3659 facts for MLSD/MLST.
import { readdir, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import type { CardFileSystem } from "../card/card.js";
import { timeVal } from "../../shared/ftp-time.js";

export interface Entry {
  name: string;
  isDir: boolean;
  size: number;
  mtime: Date;
}

/** The facts we offer (RFC 3659 §7.5); all are on by default. */
export const ALL_FACTS = ["type", "size", "modify", "perm"] as const;
export type Fact = (typeof ALL_FACTS)[number];

export async function entryOf(real: string, name: string): Promise<Entry> {
  const st = await stat(real);
  return { name, isDir: st.isDirectory(), size: st.isDirectory() ? 0 : st.size, mtime: st.mtime };
}

/** The visible entries of a folder: no uploads in progress, no symlinks leading outside the card, nothing unreadable. */
export async function readFolder(card: CardFileSystem, real: string): Promise<Entry[]> {
  const dirents = await readdir(real, { withFileTypes: true });
  const entries = await Promise.all(
    dirents.map(async (d): Promise<Entry | undefined> => {
      if (card.isInternal(d.name)) return undefined;
      let target = join(real, d.name);
      try {
        if (d.isSymbolicLink()) {
          target = await realpath(target);
          if (!card.inside(target)) return undefined;
        }
        return await entryOf(target, d.name);
      } catch {
        return undefined; // vanished or dangling while we listed
      }
    }),
  );
  return entries.filter((e): e is Entry => e !== undefined).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const HALF_YEAR_MS = 182 * 24 * 3600 * 1000;
const two = (n: number): string => String(n).padStart(2, "0");

/** One `ls -l` line, as vsftpd writes it (times in UTC; year instead of time when older than six months). */
export function listLine(e: Entry, now: number): string {
  const mode = e.isDir ? "drwxr-xr-x" : "-rw-r--r--";
  const t = e.mtime;
  const recent = Math.abs(now - t.getTime()) < HALF_YEAR_MS;
  const when = recent ? `${two(t.getUTCHours())}:${two(t.getUTCMinutes())}` : ` ${t.getUTCFullYear()}`;
  const date = `${MONTHS[t.getUTCMonth()]} ${String(t.getUTCDate()).padStart(2, " ")} ${when}`;
  return `${mode}    1 ftp      ftp      ${String(e.size).padStart(12, " ")} ${date} ${e.name}`;
}

/** "type=file;size=3;modify=…;perm=…; name" with the selected facts. */
export function factsLine(e: Entry, facts: ReadonlySet<Fact>, name = e.name): string {
  const parts: string[] = [];
  if (facts.has("type")) parts.push(`type=${e.isDir ? "dir" : "file"}`);
  if (facts.has("size") && !e.isDir) parts.push(`size=${e.size}`);
  if (facts.has("modify")) parts.push(`modify=${timeVal(e.mtime)}`);
  if (facts.has("perm")) parts.push(`perm=${e.isDir ? "flcdmpe" : "adfrw"}`);
  return `${parts.map((p) => p + ";").join("")} ${name}`;
}
