// Folder listings in the formats clients parse: `ls -l` lines for LIST, RFC 3659 facts for MLSD/MLST.
import type { CardEntry } from "../card/card.js";
import { timeVal } from "../../shared/ftp-time.js";

/** The facts we offer (RFC 3659 §7.5); all are on by default. */
export const ALL_FACTS = ["type", "size", "modify", "perm"] as const;
export type Fact = (typeof ALL_FACTS)[number];

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const HALF_YEAR_MS = 182 * 24 * 3600 * 1000;
const two = (n: number): string => String(n).padStart(2, "0");

/** One `ls -l` line, as vsftpd writes it (times in UTC; year instead of time when older than six months). */
export function listLine(e: CardEntry, now: number): string {
  const mode = e.isDir ? "drwxr-xr-x" : "-rw-r--r--";
  const t = e.mtime;
  const recent = Math.abs(now - t.getTime()) < HALF_YEAR_MS;
  const when = recent ? `${two(t.getUTCHours())}:${two(t.getUTCMinutes())}` : ` ${t.getUTCFullYear()}`;
  const date = `${MONTHS[t.getUTCMonth()]} ${String(t.getUTCDate()).padStart(2, " ")} ${when}`;
  return `${mode}    1 ftp      ftp      ${String(e.size).padStart(12, " ")} ${date} ${e.name}`;
}

/** "type=file;size=3;modify=…;perm=…; name" with the selected facts. */
export function factsLine(e: CardEntry, facts: ReadonlySet<Fact>, name = e.name): string {
  const parts: string[] = [];
  if (facts.has("type")) parts.push(`type=${e.isDir ? "dir" : "file"}`);
  if (facts.has("size") && !e.isDir) parts.push(`size=${e.size}`);
  if (facts.has("modify")) parts.push(`modify=${timeVal(e.mtime)}`);
  if (facts.has("perm")) parts.push(`perm=${e.isDir ? "flcdmpe" : "adfrw"}`);
  return `${parts.map((p) => p + ";").join("")} ${name}`;
}
