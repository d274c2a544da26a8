// What a mirror has to do, from the local tree and the card's tree: the one place that decides what is
// up to date, what to upload, and what to delete.
import type { RemoteEntry } from "./ftp.js";
import type { LocalTree } from "./local-tree.js";

export interface Upload {
  rel: string;
  abs: string;
  size: number;
  mtimeMs: number;
  why: "new" | "changed";
}

export interface Plan {
  /** Folders to create, parents first. */
  mkdirs: string[];
  uploads: Upload[];
  /** Files to delete on the card. */
  deleteFiles: string[];
  /** Folders to delete on the card, deepest first (after their files). */
  deleteDirs: string[];
  unchanged: number;
  /** What cannot be mirrored as asked, with why (reported as failures). */
  problems: { rel: string; reason: string }[];
}

/** How far apart two modification times may be and still be the same: FAT cards keep times to 2 s. */
const MTIME_SLACK_MS = 2_000;

function isUnder(rel: string, dir: string): boolean {
  return rel === dir || rel.startsWith(dir + "/");
}

function depth(rel: string): number {
  return rel.split("/").length;
}

/**
 * `canSetTimes`: the server takes MFMT, so uploaded files carry the local modification time and "changed" means
 * the times differ. Without it an uploaded file carries its upload time, so only a local file newer than the
 * card's copy counts as changed.
 */
export function makePlan(local: LocalTree, remote: Map<string, RemoteEntry>, opts: { delete: boolean; canSetTimes: boolean }): Plan {
  const plan: Plan = { mkdirs: [], uploads: [], deleteFiles: [], deleteDirs: [], unchanged: 0, problems: [] };
  const blocked: string[] = [...local.unreadable.keys()];
  for (const [rel, reason] of local.unreadable) plan.problems.push({ rel, reason: `cannot read this local folder (${reason})` });
  for (const rel of local.skipped) plan.problems.push({ rel, reason: "not a regular file or folder; skipped" });
  for (const rel of local.outside) plan.problems.push({ rel, reason: "a link that leads outside the folder; skipped (--follow-links uploads what it points to)" });

  for (const [rel, l] of local.entries) {
    if (blocked.some((b) => isUnder(rel, b))) continue;
    if (/[\r\n]/.test(rel)) {
      plan.problems.push({ rel, reason: "a name with a line break cannot travel over FTP; rename it" });
      continue;
    }
    const r = remote.get(rel);
    if (r && r.type !== l.type) {
      if (!opts.delete) {
        const what = r.type === "dir" ? "a folder" : "a file";
        plan.problems.push({ rel, reason: `the card has ${what} of that name; rerun with --delete to replace it` });
        if (l.type === "dir") blocked.push(rel);
        continue;
      }
      if (r.type === "file") plan.deleteFiles.push(rel);
      else plan.deleteDirs.push(rel);
    }
    if (l.type === "dir") {
      if (!r || r.type !== "dir") plan.mkdirs.push(rel);
      continue;
    }
    if (!r || r.type !== "file") {
      plan.uploads.push({ rel, abs: l.abs, size: l.size, mtimeMs: l.mtimeMs, why: "new" });
      continue;
    }
    const sameTime =
      r.mtimeMs === undefined ||
      (opts.canSetTimes ? Math.abs(r.mtimeMs - l.mtimeMs) <= MTIME_SLACK_MS : r.mtimeMs >= l.mtimeMs - MTIME_SLACK_MS);
    if (r.size === l.size && sameTime) plan.unchanged++;
    else plan.uploads.push({ rel, abs: l.abs, size: l.size, mtimeMs: l.mtimeMs, why: "changed" });
  }

  if (opts.delete) {
    // What is on the card and not in the folder; a name in both with different types was handled above.
    for (const [rel, r] of remote) {
      if (local.entries.has(rel) || blocked.some((b) => isUnder(rel, b))) continue;
      if (r.type === "file") plan.deleteFiles.push(rel);
      else plan.deleteDirs.push(rel);
    }
  }
  plan.mkdirs.sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
  plan.deleteDirs.sort((a, b) => depth(b) - depth(a) || a.localeCompare(b));
  return plan;
}
