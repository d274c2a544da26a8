// What a mirror has to do, from the local tree and the card's tree: the one place that decides what is
// up to date, what to upload, and what to delete.
import type { RemoteEntry } from "../ftp/remote.js";
import type { LocalEntry, LocalTree } from "./local-tree.js";
import { messageOf } from "../errors.js";
import { isPhotoName } from "../photos/names.js";

/**
 * What the card should hold, by path on the card. Without a frame profile that is the local tree itself; with
 * one, a photo's entry is its converted JPEG (`size` undefined while it is still to be converted) carrying the
 * source's modification time.
 */
export interface PlanInput extends Omit<LocalTree, "entries"> {
  entries: Map<string, Omit<LocalEntry, "size"> & { size: number | undefined }>;
}

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
  /** Files whose size is known only once converted: decided then, by decideUpload. */
  pending: { rel: string; remote: RemoteEntry | undefined }[];
  /** What cannot be mirrored as asked, with why (reported as failures). */
  problems: { rel: string; reason: string }[];
  /** Files --delete would have removed, held back by the delete guard (see guardDeletes). */
  heldDeletes: string[];
}

/** How much of the card one sync may delete without `force`: a share of its files (0–1) or a number of files. */
export type DeleteLimit = { share: number } | { files: number };

export interface DeleteGuard {
  limit: DeleteLimit;
  force: boolean;
}

/** --max-delete's default: half of the card's files. */
export const DEFAULT_DELETE_GUARD: DeleteGuard = { limit: { share: 0.5 }, force: false };

/** How far apart two modification times may be and still be the same: FAT cards keep times to 2 s. */
const MTIME_SLACK_MS = 2_000;

function isUnder(rel: string, dir: string): boolean {
  return rel === dir || rel.startsWith(dir + "/");
}

function depth(rel: string): number {
  return rel.split("/").length;
}

/**
 * Whether a local file goes to the card, given the card's entry of that name (a file, or nothing); undefined when
 * the card's copy is up to date.
 */
export function decideUpload(
  rel: string,
  l: { abs: string; size: number; mtimeMs: number },
  r: RemoteEntry | undefined,
  canSetTimes: boolean,
): Upload | undefined {
  const upload = (why: Upload["why"]): Upload => ({ rel, abs: l.abs, size: l.size, mtimeMs: l.mtimeMs, why });
  if (!r || r.type !== "file") return upload("new");
  const sameTime = r.mtimeMs === undefined || (canSetTimes ? Math.abs(r.mtimeMs - l.mtimeMs) <= MTIME_SLACK_MS : r.mtimeMs >= l.mtimeMs - MTIME_SLACK_MS);
  return r.size === l.size && sameTime ? undefined : upload("changed");
}

/**
 * `canSetTimes`: the server takes MFMT, so uploaded files carry the local modification time and "changed" means
 * the times differ. Without it an uploaded file carries its upload time, so only a local file newer than the
 * card's copy counts as changed.
 */
export function makePlan(local: PlanInput, remote: Map<string, RemoteEntry>, opts: { delete: boolean; canSetTimes: boolean; guard?: DeleteGuard }): Plan {
  const plan: Plan = { mkdirs: [], uploads: [], deleteFiles: [], deleteDirs: [], unchanged: 0, pending: [], problems: [], heldDeletes: [] };
  const blocked: string[] = [...local.unreadable.keys()];
  for (const [rel, reason] of local.unreadable) plan.problems.push({ rel, reason: `cannot read this local folder (${reason})` });
  for (const rel of local.skipped) plan.problems.push({ rel, reason: "not a regular file or folder; skipped" });
  for (const rel of local.outside)
    plan.problems.push({ rel, reason: "a link that leads outside the folder; skipped (--follow-links uploads what it points to)" });

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
    const onCard = r?.type === "file" ? r : undefined;
    if (l.size === undefined) {
      plan.pending.push({ rel, remote: onCard });
      continue;
    }
    const u = decideUpload(rel, { abs: l.abs, size: l.size, mtimeMs: l.mtimeMs }, onCard, opts.canSetTimes);
    if (u) plan.uploads.push(u);
    else plan.unchanged++;
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
  if (opts.delete) guardDeletes(plan, local, remote, opts.guard ?? DEFAULT_DELETE_GUARD);
  return plan;
}

/**
 * Holds back what --delete would remove (files and folders not in the source; a name that changes type is still
 * replaced) when the source lists no file at all, whatever `force` says, or when it is more of the card's files
 * than the limit allows without `force`: an emptied or mistyped share must not empty the frame.
 */
function guardDeletes(plan: Plan, local: PlanInput, remote: Map<string, RemoteEntry>, guard: DeleteGuard): void {
  const removals = plan.deleteFiles.filter((rel) => !local.entries.has(rel));
  if (removals.length === 0) return;
  const files = [...remote].filter(([, r]) => r.type === "file").map(([rel]) => rel);
  const limit = guard.limit;
  const over = (count: number, total: number): boolean => count > ("share" in limit ? Math.floor(total * limit.share) : limit.files);
  // Photos are also counted among photos: other files on the card (notes, videos) must not make room for deleting them.
  const photos = files.filter(isPhotoName).length;
  const removedPhotos = removals.filter(isPhotoName).length;
  const sourceEmpty = ![...local.entries.values()].some((e) => e.type === "file");
  let reason: string | undefined;
  if (sourceEmpty) reason = messageOf("FRAMEFI_DELETE_EMPTY_SOURCE", {});
  else if (!guard.force) {
    const shown = "share" in limit ? `${Math.round(limit.share * 100)}%` : String(limit.files);
    if (over(removals.length, files.length)) reason = messageOf("FRAMEFI_DELETE_TOO_MANY", { count: removals.length, total: files.length, max: shown });
    else if (over(removedPhotos, photos)) reason = messageOf("FRAMEFI_DELETE_TOO_MANY_PHOTOS", { count: removedPhotos, total: photos, max: shown });
  }
  if (reason === undefined) return;
  plan.heldDeletes = removals;
  plan.deleteFiles = plan.deleteFiles.filter((rel) => local.entries.has(rel));
  plan.deleteDirs = plan.deleteDirs.filter((rel) => local.entries.has(rel));
  plan.problems.push({ rel: "--delete", reason });
}
