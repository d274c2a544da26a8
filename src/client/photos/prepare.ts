// From the local tree to what the card should hold, when a frame profile, --dedupe or a capacity limit is given:
// every file identified by its content (hash, date taken), duplicates set aside, photos renamed to `.jpg` and
// found in the conversion cache or queued for conversion, files that are not photos copied or skipped.
import { readFile } from "node:fs/promises";
import { FrameFiError, messageOf } from "../errors.js";
import type { LocalTree } from "../sync/local-tree.js";
import type { PlanInput } from "../sync/plan.js";
import { hashOf, type PhotoCache } from "./cache.js";
import { forEachLimited, WORKERS } from "./queue.js";
import type { HeicDecoder } from "./heic.js";
import { convertPair, convertPhoto, dateTaken, isPortrait } from "./convert.js";
import { isPhotoName } from "./names.js";
import { findPairs } from "./pair.js";
import { profileId, type FrameProfile, type PhotoOptions } from "./profile.js";

/** A photo still to be converted, by its path on the card. */
export interface ConvertJob {
  rel: string;
  /** The source's path in the folder. */
  source: string;
  abs: string;
  /** The source's size and modification time (a pair's: both sizes, the newer time). */
  size: number;
  mtimeMs: number;
  hash: string;
  /** Where the converted photo goes in the cache, and its name there (cacheKey). */
  output: string;
  key: string;
  /** With --pair-portraits: the photo shown beside this one, in the same file. */
  partner?: { source: string; abs: string; size: number; mtimeMs: number; hash: string };
}

export interface Prepared {
  input: PlanInput;
  jobs: Map<string, ConvertJob>;
  /** Date taken, else modification time, of each file by its path on the card. */
  dates: Map<string, number>;
  duplicates: { rel: string; sameAs: string }[];
  /** Files not sent, with why (not photos under --others skip). */
  skipped: { rel: string; reason: string }[];
  /** Files that cannot be sent as asked (reported as failures). */
  problems: { rel: string; reason: string }[];
  /** Photos found converted in the cache. */
  fromCache: number;
}

/** "2024/IMG_1.HEIC" → "2024/IMG_1.jpg". */
export function jpegName(rel: string): string {
  return rel.replace(/(?:\.[^./]*)?$/, ".jpg");
}

export async function preparePhotos(local: LocalTree, opts: PhotoOptions, cache: PhotoCache): Promise<Prepared> {
  const { profile } = opts;
  const pid = profile ? profileId(profile) : "";
  const out: Prepared = {
    input: { entries: new Map(), unreadable: local.unreadable, skipped: local.skipped, outside: local.outside },
    jobs: new Map(),
    dates: new Map(),
    duplicates: [],
    skipped: [],
    problems: [],
    fromCache: 0,
  };
  const files = [...local.entries].filter(([, e]) => e.type === "file").sort(([a], [b]) => a.localeCompare(b));
  const ids = new Map<string, { hash: string; takenMs: number | undefined }>();
  await forEachLimited(files, WORKERS, async ([rel, e]) => {
    try {
      ids.set(rel, await cache.identify(e.abs, (abs) => (isPhotoName(rel) ? dateTaken(abs) : Promise.resolve(undefined))));
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      out.problems.push({ rel, reason: messageOf("FRAMEFI_LOCAL_UNREADABLE", { reason }) });
    }
  });

  const pairs = profile?.look?.pairPortraits ? await pairsOf(files, ids, opts.dedupe) : new Map<string, string>();
  const paired = new Map([...pairs].map(([a, b]) => [b, a]));

  const firstOf = new Map<string, string>();
  /** Card path → the source that takes it. */
  const owner = new Map<string, string>();
  for (const [rel, e] of local.entries) {
    if (e.type === "dir") {
      out.input.entries.set(rel, e);
      continue;
    }
    const id = ids.get(rel);
    if (!id) continue;
    if (opts.dedupe) {
      const first = firstOf.get(id.hash);
      if (first !== undefined) {
        out.duplicates.push({ rel, sameAs: first });
        continue;
      }
      firstOf.set(id.hash, rel);
    }
    const photo = profile !== undefined && isPhotoName(rel);
    if (profile && !photo && opts.others === "skip") {
      out.skipped.push({ rel, reason: "not a photo (--others skip)" });
      continue;
    }
    const first = paired.get(rel);
    if (first !== undefined) {
      out.skipped.push({ rel, reason: `shown beside ${first} in ${jpegName(first)} (--pair-portraits)` });
      continue;
    }
    const cardRel = photo ? jpegName(rel) : rel;
    const taken = owner.get(cardRel);
    if (taken !== undefined) {
      out.problems.push({ rel, reason: `${taken} already becomes ${cardRel} on the card; rename one of them` });
      continue;
    }
    owner.set(cardRel, rel);
    out.dates.set(cardRel, id.takenMs ?? e.mtimeMs);
    if (!photo) {
      out.input.entries.set(cardRel, e);
      continue;
    }
    const second = pairs.get(rel);
    const secondEntry = second === undefined ? undefined : local.entries.get(second);
    const partner =
      second !== undefined && secondEntry?.type === "file"
        ? { source: second, abs: secondEntry.abs, size: secondEntry.size, mtimeMs: secondEntry.mtimeMs, hash: ids.get(second)!.hash }
        : undefined;
    const key = partner ? pairKey(id.hash, partner.hash) : cacheKey(id, e.mtimeMs, profile);
    const size = await cache.lookup(pid, key);
    // A pair's time on the card is its newer photo's: a changed second photo is uploaded again, even at the same size.
    const mtimeMs = partner ? Math.max(e.mtimeMs, partner.mtimeMs) : e.mtimeMs;
    out.input.entries.set(cardRel, { type: "file", abs: cache.outputPath(pid, key), size, mtimeMs });
    if (size === undefined) {
      const job: ConvertJob = {
        rel: cardRel,
        source: rel,
        abs: e.abs,
        size: e.size,
        mtimeMs,
        hash: id.hash,
        output: cache.outputPath(pid, key),
        key,
      };
      if (partner) {
        job.partner = partner;
        job.size += partner.size;
      }
      out.jobs.set(cardRel, job);
    } else out.fromCache++;
  }
  return out;
}

/**
 * A photo is filed in the cache under its content's hash; one without a date taken, dated by its file's time
 * (--date-from-mtime), under its hash and that time too, so that a copy or a touched file shows its own date.
 */
function cacheKey(id: { hash: string; takenMs: number | undefined }, mtimeMs: number, profile: FrameProfile): string {
  return profile.dateFromMtime && id.takenMs === undefined ? hashOf(Buffer.from(`${id.hash}@${Math.floor(mtimeMs / 1000)}`)) : id.hash;
}

/** A pair is filed in the cache under the hash of both contents, in order. */
function pairKey(first: string, second: string): string {
  return hashOf(Buffer.from(`${first}+${second}`));
}

/** The pairs among the photos with a date taken (duplicates left out with --dedupe, as the plan leaves them). */
function pairsOf(
  files: [string, { abs: string }][],
  ids: Map<string, { hash: string; takenMs: number | undefined }>,
  dedupe: boolean,
): Promise<Map<string, string>> {
  const seen = new Set<string>();
  // A photo whose card name another photo also takes (a.png, a.jpg) may not reach the card: never paired.
  const cardNames = new Map<string, number>();
  for (const [rel] of files) if (isPhotoName(rel)) cardNames.set(jpegName(rel), (cardNames.get(jpegName(rel)) ?? 0) + 1);
  const candidates = [];
  for (const [rel, e] of files) {
    const id = ids.get(rel);
    if (!id || !isPhotoName(rel) || (dedupe && seen.has(id.hash)) || cardNames.get(jpegName(rel))! > 1) continue;
    seen.add(id.hash);
    if (id.takenMs !== undefined) candidates.push({ rel, abs: e.abs, takenMs: id.takenMs });
  }
  return findPairs(candidates, isPortrait);
}

/** The photo changed between the sync's first read of it and its conversion: converting it would file it under the wrong hash. */
export class SourceChangedError extends FrameFiError {
  override name = "SourceChangedError";
}

/** Converts one photo into the cache; its size on the card. */
export async function runJob(job: ConvertJob, profile: FrameProfile, cache: PhotoCache, heic: HeicDecoder): Promise<number> {
  const data = await readFile(job.abs);
  if (hashOf(data) !== job.hash) throw new SourceChangedError("FRAMEFI_SOURCE_CHANGED", {});
  let jpeg: Buffer;
  if (job.partner) {
    const other = await readFile(job.partner.abs);
    if (hashOf(other) !== job.partner.hash) throw new SourceChangedError("FRAMEFI_SOURCE_CHANGED", {});
    jpeg = await convertPair({ data, mtimeMs: job.mtimeMs }, { data: other, mtimeMs: job.partner.mtimeMs }, profile, heic);
  } else jpeg = await convertPhoto(data, profile, job.mtimeMs, heic);
  await cache.store(profileId(profile), job.key, jpeg);
  return jpeg.length;
}
