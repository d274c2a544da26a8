// `framefi sync`: mirrors a local folder to the card over FTP. Puts the device in FTP mode (waiting until its FTP
// server answers), deletes what must go, creates folders, uploads what is missing or changed over a few FTP
// connections at once, then leaves the device in MSC mode (or FTP with `stay`). Ctrl-C or a failure puts the
// device back in the mode it was in. Uploaded files carry the local modification time (MFMT), so a rerun skips
// what already arrived. With a frame profile, photos are converted (photos/) while the first files travel.
import { MODE_FTP, MODE_NAMES, modeOf, type Mode, type ModeName } from "../../shared/firmware.js";
import type { FrameFiClient } from "../api/index.js";
import { switchMode } from "./modes.js";
import { FrameFiError, messageOf } from "../errors.js";
import { LocalFileError, SyncStopped } from "./errors.js";
import { connectCard } from "../ftp/connect.js";
import { FtpReplyError, isReply, remoteJoin, type CardPool, type FtpTarget, type RemoteConnection, type RemoteEntry } from "../ftp/remote.js";
import { listCard, TRASH } from "./card-tree.js";
import { emptyTrash, roomForTrash, trashStamp } from "./trash.js";
import { scanLocal, type LocalTree } from "./local-tree.js";
import { decideUpload, makePlan, type DeleteGuard, type Plan, type PlanInput, type Upload } from "./plan.js";
import { layOut, type LayoutOptions } from "./layout.js";
import type { PhotoCache } from "../photos/cache.js";
import type { Candidate } from "../photos/capacity.js";
import type { ConvertJob, Prepared } from "../photos/prepare.js";
import type { PhotoOptions } from "../photos/profile.js";
import { AsyncQueue, forEachLimited, WORKERS } from "../photos/queue.js";

export interface SyncOptions {
  client: FrameFiClient;
  ftp: FtpTarget;
  localDir: string;
  remoteDir: string;
  delete: boolean;
  dryRun: boolean;
  /** Leave the device in FTP mode at the end. */
  stay: boolean;
  /** FTP connections to use at once. */
  parallel: number;
  /** Follow symbolic links that lead outside the local folder. */
  followLinks?: boolean;
  /** Aborted on Ctrl-C. */
  signal: AbortSignal;
  events: SyncEvents;
  /** How long to wait for a mode switch and for the FTP server; default 30 s. */
  waitMs?: number;
  /** A frame profile, --dedupe or a capacity limit; undefined: files are mirrored as they are. */
  photos?: PhotoOptions | undefined;
  /** How much `delete` may remove; default half of the card's files (plan.ts). */
  deleteGuard?: DeleteGuard | undefined;
  /** --trash: what `delete` removes goes to .trash/ on the card, kept this many days (trash.ts). */
  trashDays?: number | undefined;
  /** Asked with the files `delete` would remove before any is; false keeps them all. */
  confirmDeletes?: ((files: string[]) => Promise<boolean>) | undefined;
  /** --order and --max-per-folder: the files renamed and spread for the frame (layout.ts). */
  layout?: LayoutOptions | undefined;
}

/** What a sync tells its reporter (the progress bar or the per-file lines). */
export interface SyncEvents {
  step(text: string): void;
  planned(plan: Plan): void;
  uploadStarted(u: Upload): void;
  /** Bytes of this file sent so far. */
  uploadProgress(u: Upload, sent: number): void;
  uploaded(u: Upload): void;
  deleted(rel: string, type: "file" | "dir"): void;
  created(rel: string): void;
  failed(rel: string, reason: string): void;
  /** A photo of the plan's `pending` is converted (`size`; undefined: it failed) and decided: to upload, or not. */
  photoDone(rel: string, source: string, size: number | undefined, upload: Upload | undefined): void;
}

/** What a sync with photo options did besides the mirror. */
export interface PhotoReport {
  converted: number;
  fromCache: number;
  /** Time from the first conversion's start to the last one's end. */
  convertMs: number;
  /** Bytes of the photos converted, and of what they became. */
  sourceBytes: number;
  outputBytes: number;
  duplicates: { rel: string; sameAs: string }[];
  skipped: { rel: string; reason: string }[];
  /** Left out by the capacity limit, newest first. */
  leftOut: { rel: string; size: number; dateMs: number }[];
}

export interface SyncResult {
  plan: Plan;
  uploaded: number;
  uploadedBytes: number;
  deleted: number;
  created: number;
  failed: { rel: string; reason: string }[];
  /** The mode the device was left in. */
  finalMode: ModeName;
  photos: PhotoReport | undefined;
}

/** An error's message, after its system code (ECONNRESET, …) when it has one. */
function message(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code && !(e instanceof FrameFiError) && !isReply(e) ? `${err.code}: ${err.message}` : (err.message ?? String(e));
}

/** The photo pipeline (sharp, the cache, HEIC workers), loaded only by a sync with photo options. */
async function photoTools() {
  const [cache, capacity, convert, heic, prepare] = await Promise.all([
    import("../photos/cache.js"),
    import("../photos/capacity.js"),
    import("../photos/convert.js"),
    import("../photos/heic.js"),
    import("../photos/prepare.js"),
  ]);
  return {
    PhotoCache: cache.PhotoCache,
    selectNewest: capacity.selectNewest,
    PhotoDecodeError: convert.PhotoDecodeError,
    heic: new heic.HeicDecoder(),
    preparePhotos: prepare.preparePhotos,
    runJob: prepare.runJob,
  };
}

/**
 * Runs `fn`; when the connection failed (not the server's answer, nor one of ours: a local file, a listing too
 * large, text no FTP command can carry), logs in again and runs it once more.
 */
async function withReconnect<T>(conn: RemoteConnection, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    // A 421 (the server closes the connection) is an FtpReplyError that a new login gets past.
    if (signal.aborted || isReply(e) || (e instanceof FrameFiError && !(e instanceof FtpReplyError))) throw e;
    await conn.reconnect();
    // Ctrl-C while logging in again: the pool's abort reached the old connection, not this one.
    if (signal.aborted) {
      conn.abort();
      throw signal.reason;
    }
    return await fn();
  }
}

export async function sync(opts: SyncOptions): Promise<SyncResult> {
  const { client, events, signal } = opts;
  const waitMs = opts.waitMs ?? 30_000;
  const original = (await client.mode()).mode;
  let switched = false;
  let pool: CardPool<RemoteConnection> | undefined;
  const result: SyncResult = {
    plan: { mkdirs: [], uploads: [], deleteFiles: [], deleteDirs: [], unchanged: 0, pending: [], problems: [], heldDeletes: [] },
    uploaded: 0,
    uploadedBytes: 0,
    deleted: 0,
    created: 0,
    failed: [],
    finalMode: original,
    photos: undefined,
  };
  const fail = (rel: string, reason: string): void => {
    result.failed.push({ rel, reason });
    events.failed(rel, reason);
  };
  /** Runs `op` on each item (one at a time when order matters); a refusal by the server fails that item only. */
  const perItem = async (
    pool: CardPool<RemoteConnection>,
    items: readonly string[],
    inOrder: boolean,
    op: (conn: RemoteConnection, rel: string) => Promise<void>,
    failure: string,
  ): Promise<void> => {
    const one = async (conn: RemoteConnection, rel: string): Promise<void> => {
      try {
        await withReconnect(conn, signal, () => op(conn, rel));
      } catch (e) {
        if (!isReply(e)) throw e;
        fail(rel, `${failure}: ${e.message}`);
      }
    };
    if (!inOrder) await pool.each(items, one);
    else for (const rel of items) await pool.each([rel], one);
    if (signal.aborted) throw signal.reason;
  };

  let cache: PhotoCache | undefined;
  let prepared: Prepared | undefined;
  const tools = opts.photos ? await photoTools() : undefined;
  let firstStart = 0;
  let lastEnd = 0;
  /** Converts a photo into the cache; its size on the card, or undefined when it failed (reported). */
  const convert = async (job: ConvertJob): Promise<number | undefined> => {
    const report = result.photos!;
    firstStart ||= performance.now();
    try {
      const size = await tools!.runJob(job, opts.photos!.profile!, cache!, tools!.heic);
      report.converted++;
      report.sourceBytes += job.size;
      report.outputBytes += size;
      prepared!.input.entries.get(job.rel)!.size = size;
      return size;
    } catch (e) {
      const failure = e instanceof tools!.PhotoDecodeError ? e : new FrameFiError("FRAMEFI_PHOTO_UNCONVERTIBLE", { reason: message(e) }, { cause: e });
      fail(job.source, failure.message);
      return undefined;
    } finally {
      lastEnd = performance.now();
      result.photos!.convertMs = lastEnd - firstStart;
    }
  };
  /** Converts the plan's pending photos, one per core, queueing those the card needs as they are ready. */
  const convertPending = async (plan: Plan, canSetTimes: boolean, queue: AsyncQueue<Upload> | undefined, stop: AbortSignal): Promise<void> => {
    await forEachLimited(plan.pending, WORKERS, async ({ rel, remote }) => {
      if (stop.aborted) return;
      const job = prepared!.jobs.get(rel)!;
      const size = await convert(job);
      const u = size === undefined ? undefined : decideUpload(rel, { abs: job.output, size, mtimeMs: job.mtimeMs }, remote, canSetTimes);
      if (u) {
        plan.uploads.push(u);
        queue?.push(u);
      } else if (size !== undefined) plan.unchanged++;
      events.photoDone(rel, job.source, size, u);
    });
  };

  const apply = async (pool: CardPool<RemoteConnection>, plan: Plan, rootMissing: boolean): Promise<void> => {
    const remotePath = (rel: string): string => remoteJoin(opts.remoteDir, rel);
    if (rootMissing) await pool.each([opts.remoteDir], (conn, dir) => withReconnect(conn, signal, () => conn.ensureDir(dir)));
    let trashDir: string | undefined;
    if (opts.trashDays !== undefined) {
      const now = new Date();
      const emptied = await emptyTrash(pool, opts.remoteDir, opts.trashDays, now, (conn, fn) => withReconnect(conn, signal, fn));
      if (emptied > 0) events.step(`Emptied ${emptied} trash folder${emptied === 1 ? "" : "s"} older than ${opts.trashDays} days.`);
      if (plan.deleteFiles.length > 0) {
        if (await roomForTrash(client)) trashDir = remoteJoin(opts.remoteDir, `${TRASH}/${trashStamp(now)}`);
        else events.step("The card has less than a tenth free: deleting, not keeping in .trash.");
      }
    }
    // Deletions first: they free space on the card for what comes. Folders after their files, deepest first.
    await perItem(
      pool,
      plan.deleteFiles,
      false,
      async (conn, rel) => {
        if (trashDir === undefined) await conn.removeFile(remotePath(rel));
        else {
          const to = remoteJoin(trashDir, rel);
          await conn.ensureDir(to.slice(0, to.lastIndexOf("/")));
          await conn.rename(remotePath(rel), to);
        }
        result.deleted++;
        events.deleted(rel, "file");
      },
      "cannot delete",
    );
    await perItem(
      pool,
      plan.deleteDirs,
      true,
      async (conn, rel) => {
        await conn.removeDir(remotePath(rel));
        result.deleted++;
        events.deleted(rel, "dir");
      },
      "cannot delete the folder",
    );
    await perItem(
      pool,
      plan.mkdirs,
      true,
      async (conn, rel) => {
        await conn.mkdir(remotePath(rel));
        result.created++;
        events.created(rel);
      },
      "cannot create the folder",
    );

    const failedDirs = result.failed.map((f) => f.rel);
    // Uploads start with what is ready while the pending photos are converted; the queue ends with the last one.
    const queue = new AsyncQueue<Upload>();
    for (const u of plan.uploads) queue.push(u);
    const stopConverting = new AbortController();
    const converting = convertPending(plan, pool.canSetTimes, queue, stopConverting.signal).finally(() => queue.close());
    const uploading = pool.each(queue, async (conn, u) => {
      if (failedDirs.some((d) => u.rel.startsWith(d + "/"))) {
        fail(u.rel, "its folder could not be created on the card");
        return;
      }
      events.uploadStarted(u);
      try {
        await withReconnect(conn, signal, () =>
          conn.upload(u.abs, u.size, remotePath(u.rel), pool.canSetTimes ? u.mtimeMs : undefined, (sent) => events.uploadProgress(u, sent), u.why === "new"),
        );
        result.uploaded++;
        result.uploadedBytes += u.size;
        events.uploaded(u);
      } catch (e) {
        if (signal.aborted) throw e;
        fail(u.rel, message(e));
        // A refusal or a local problem fails this file only; anything else takes the connection out of service.
        if (!isReply(e) && !(e instanceof LocalFileError)) throw e;
      }
    });
    try {
      await uploading;
    } finally {
      stopConverting.abort();
      await converting;
    }
    // A connection stopped by Ctrl-C leaves the pool quietly while another is left (idle, its work done).
    if (signal.aborted) throw signal.reason;
  };

  /** With photo options: what the card should hold instead of the local tree, within the capacity limit. */
  const preparedInput = async (local: LocalTree, remote: Map<string, RemoteEntry>, photos: PhotoOptions): Promise<PlanInput> => {
    cache = await tools!.PhotoCache.open(photos.cacheDir).catch((e: unknown) => {
      throw new FrameFiError("FRAMEFI_CACHE_UNUSABLE", { dir: photos.cacheDir, reason: message(e) }, { cause: e });
    });
    events.step("Reading the photos…");
    prepared = await tools!.preparePhotos(local, photos, cache);
    const report: PhotoReport = {
      converted: 0,
      fromCache: prepared.fromCache,
      convertMs: 0,
      sourceBytes: 0,
      outputBytes: 0,
      duplicates: prepared.duplicates,
      skipped: prepared.skipped,
      leftOut: [],
    };
    result.photos = report;
    for (const p of prepared.problems) fail(p.rel, p.reason);
    const { limit } = photos;
    // In a chosen order, uploads go in name order: every photo is converted first.
    const sizesFirst = limit.maxBytes !== undefined || opts.layout?.order !== undefined;
    if (limit.maxFiles === undefined && !sizesFirst) return prepared.input;

    let maxBytes = Infinity;
    let fixedBytes = 0;
    if (sizesFirst) {
      // Sizes decide what fits: every photo is converted before the first upload.
      if (prepared.jobs.size > 0) events.step(`Converting ${prepared.jobs.size} photo${prepared.jobs.size === 1 ? "" : "s"} to know their sizes…`);
      await forEachLimited(prepared.jobs.values(), WORKERS, async (job) => {
        if (signal.aborted) return;
        if ((await convert(job)) === undefined) prepared!.input.entries.delete(job.rel);
      });
      if (signal.aborted) throw signal.reason;
    }
    if (limit.maxBytes) {
      const card = (await client.status()).sd_card;
      maxBytes = "percent" in limit.maxBytes ? Math.floor((card.total_size * limit.maxBytes.percent) / 100) : Math.min(limit.maxBytes.bytes, card.total_size);
      const mirrored = [...remote.values()].reduce((n, r) => n + (r.type === "file" ? r.size : 0), 0);
      fixedBytes = opts.delete ? card.used_size - mirrored : card.used_size;
    }
    const candidates: Candidate[] = [];
    for (const [rel, e] of prepared.input.entries) {
      if (e.type !== "file") continue;
      const onCard = remote.get(rel);
      const replaces = !opts.delete && onCard?.type === "file" ? onCard.size : 0;
      // A photo not converted (no size limit asked for it) counts, and is reported, by its size in the folder.
      const size = e.size ?? prepared.jobs.get(rel)?.size ?? 0;
      candidates.push({ rel, size, dateMs: prepared.dates.get(rel) ?? e.mtimeMs, replaces });
    }
    const { leftOut } = tools!.selectNewest(candidates, { maxFiles: limit.maxFiles ?? Infinity, maxBytes, fixedBytes });
    for (const c of leftOut) prepared.input.entries.delete(c.rel);
    report.leftOut = leftOut.map((c) => ({ rel: c.rel, size: c.size, dateMs: c.dateMs }));
    return prepared.input;
  };

  try {
    if (original !== MODE_FTP) {
      events.step("Switching the device to FTP mode…");
      await switchMode(client, "ftp", waitMs, signal);
      switched = true;
    }
    const ftpHost = opts.ftp.host.includes(":") ? `[${opts.ftp.host}]` : opts.ftp.host;
    events.step(`Waiting for the FTP server at ${opts.ftp.ports.map((p) => `${ftpHost}:${p}`).join(" or ")}…`);
    pool = await connectCard(opts.ftp, waitMs, opts.parallel, signal);
    const openPool = pool;
    signal.addEventListener("abort", () => openPool.abort(), { once: true });
    if (signal.aborted) throw signal.reason;

    events.step("Comparing the folder with the card…");
    const [local, remote] = await Promise.all([
      scanLocal(opts.localDir, { followLinksOutside: opts.followLinks }),
      listCard(pool, opts.remoteDir, (conn, fn) => withReconnect(conn, signal, fn)),
    ]);
    if (signal.aborted) throw signal.reason;
    for (const [link, to] of remote.loops) {
      events.step(`Not following ${remoteJoin(opts.remoteDir, link)} on the card: it lists as ${remoteJoin(opts.remoteDir, to)}, a link back to it.`);
    }
    const keywords = opts.layout?.keywords;
    const chosen = keywords?.length ? await (await import("../photos/keywords.js")).keepTagged(local, keywords) : local;
    let input = opts.photos ? await preparedInput(chosen, remote.tree, opts.photos) : chosen;
    if (opts.layout) {
      const needsDates = opts.layout.order?.by === "date" || opts.layout.range !== undefined;
      const dates = prepared?.dates ?? (needsDates ? await datesTaken(input) : undefined);
      const laid = layOut(input, remote.tree, opts.layout, dates);
      for (const p of laid.problems) fail(p.rel, p.reason);
      // A job keeps its path as given (its entry object is the laid-out input's too); found by its path on the card.
      if (prepared) prepared.jobs = new Map([...prepared.jobs].map(([rel, job]) => [laid.renamed.get(rel) ?? rel, job]));
      input = laid.input;
    }
    const plan = makePlan(input, remote.tree, { delete: opts.delete, canSetTimes: pool.canSetTimes, guard: opts.deleteGuard });
    if (!opts.dryRun && opts.confirmDeletes && plan.deleteFiles.length > 0 && !(await opts.confirmDeletes(plan.deleteFiles))) {
      plan.heldDeletes = plan.deleteFiles;
      plan.deleteFiles = [];
      plan.deleteDirs = [];
      plan.problems.push({ rel: "--delete", reason: messageOf("FRAMEFI_DELETE_DECLINED", {}) });
    }
    result.plan = plan;
    events.planned(plan);
    for (const p of plan.problems) fail(p.rel, p.reason);
    if (!opts.dryRun) await apply(pool, plan, remote.rootMissing);
    // A dry run converts too: it tells what would be sent, and the real run finds the photos ready.
    else {
      await convertPending(plan, pool.canSetTimes, undefined, signal);
      // Ctrl-C stops the conversions quietly: a plan cut short must not pass for the whole one.
      if (signal.aborted) throw signal.reason;
      plan.pending = [];
    }
  } catch (e) {
    pool?.abort();
    pool = undefined;
    const back = switched ? await restore(client, modeOf(original), waitMs) : original;
    const interrupted = signal.aborted;
    throw new SyncStopped(message(e), e, back, interrupted);
  } finally {
    pool?.close();
    await cache?.save().catch(() => undefined);
  }

  if (opts.dryRun) {
    if (switched) result.finalMode = (await restore(client, modeOf(original), waitMs)) ?? MODE_FTP;
    return result;
  }
  const target: Mode = opts.stay ? "ftp" : "msc";
  if (target === "msc") events.step("Switching the device back to USB MSC mode…");
  await switchMode(client, target, waitMs);
  result.finalMode = MODE_NAMES[target];
  return result;
}

/** Puts the device back in `mode`; undefined when that failed too (the device is then in an unknown mode). */
async function restore(client: FrameFiClient, mode: Mode, waitMs: number): Promise<ModeName | undefined> {
  try {
    await switchMode(client, mode, waitMs);
    return MODE_NAMES[mode];
  } catch {
    return undefined;
  }
}

/**
 * The photos' dates taken (EXIF), for an order by date or a collection's dates when no frame profile
 * has read them: without, those would go by the files' times, as a copy or a download sets them.
 */
async function datesTaken(tree: PlanInput): Promise<Map<string, number>> {
  const [{ dateTaken }, { isPhotoName }] = await Promise.all([import("../photos/convert.js"), import("../photos/names.js")]);
  const dates = new Map<string, number>();
  const photos = [...tree.entries].filter(([rel, e]) => e.type === "file" && e.abs !== undefined && isPhotoName(rel));
  await forEachLimited(photos, WORKERS, async ([rel, e]) => {
    const taken = await dateTaken(e.abs!);
    if (taken !== undefined) dates.set(rel, taken);
  });
  return dates;
}
