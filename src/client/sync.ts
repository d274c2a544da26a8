// `framefi sync`: mirrors a local folder to the card over FTP. Puts the device in FTP mode (waiting until its FTP
// server answers), deletes what must go, creates folders, uploads what is missing or changed over a few FTP
// connections at once, then leaves the device in MSC mode (or FTP with `stay`). Ctrl-C or a failure puts the
// device back in the mode it was in. Uploaded files carry the local modification time (MFMT), so a rerun skips
// what already arrived.
import { createReadStream } from "node:fs";
import { MODE_FTP, MODE_MSC, type FrameFiClient, type Mode, type ModeName } from "./api.js";
import { switchMode } from "./modes.js";
import { SyncStopped } from "./sync-errors.js";
import { FtpPool, isReply, remoteJoin, waitForFtp, type FtpConnection, type FtpTarget, type RemoteEntry } from "./ftp.js";
import { scanLocal } from "./local-tree.js";
import { makePlan, type Plan, type Upload } from "./plan.js";

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
  /** Aborted on Ctrl-C. */
  signal: AbortSignal;
  events: SyncEvents;
  /** How long to wait for a mode switch and for the FTP server; default 30 s. */
  waitMs?: number;
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
}

/** A local file could not be read: that file fails, the connection is fine. */
class LocalFileError extends Error {
  override name = "LocalFileError";
}

const modeOf = (name: ModeName): Mode => (name === MODE_FTP ? "ftp" : "msc");

function message(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code && !isReply(e) ? `${err.code}: ${err.message}` : (err.message ?? String(e));
}

/** Runs `fn`; when the connection (not the server's answer) failed, logs in again and runs it once more. */
async function withReconnect<T>(conn: FtpConnection, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (signal.aborted || isReply(e) || e instanceof LocalFileError) throw e;
    await conn.reconnect();
    return await fn();
  }
}

async function listRemote(pool: FtpPool, root: string, signal: AbortSignal): Promise<{ tree: Map<string, RemoteEntry>; rootMissing: boolean }> {
  const tree = new Map<string, RemoteEntry>();
  let rootMissing = false;
  let failure: Error | undefined;
  let level = [""];
  while (level.length > 0) {
    const next: string[] = [];
    await pool.each(level, async (conn, rel) => {
      try {
        const entries = await withReconnect(conn, signal, () => conn.list(remoteJoin(root, rel)));
        for (const [name, entry] of entries) {
          const child = rel === "" ? name : `${rel}/${name}`;
          tree.set(child, entry);
          if (entry.type === "dir") next.push(child);
        }
      } catch (e) {
        if (!isReply(e)) throw e;
        if (rel === "" && e.code === 550) rootMissing = true;
        else failure ??= new Error(`Cannot list ${remoteJoin(root, rel)} on the card: ${e.message}`);
      }
    });
    if (failure) throw failure;
    level = next.sort();
  }
  return { tree, rootMissing };
}

async function openLocal(abs: string): Promise<ReturnType<typeof createReadStream>> {
  const stream = createReadStream(abs, { highWaterMark: 256 * 1024 });
  try {
    await new Promise<void>((resolve, reject) => {
      stream.once("open", () => resolve());
      stream.once("error", reject);
    });
  } catch (e) {
    throw new LocalFileError(`cannot read the local file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  return stream;
}

/** Sends one file and gives it the local modification time; a file that changed while sent is removed again. */
async function uploadOne(conn: FtpConnection, u: Upload, remotePath: string, setTime: boolean, events: SyncEvents): Promise<void> {
  const stream = await openLocal(u.abs);
  try {
    await conn.upload(stream, remotePath, (sent) => events.uploadProgress(u, sent));
  } finally {
    stream.destroy();
  }
  if (stream.bytesRead !== u.size) {
    await conn.removeFile(remotePath).catch(() => undefined);
    throw new LocalFileError("the file changed while it was being sent; run the sync again");
  }
  if (setTime) await conn.setMtime(remotePath, u.mtimeMs);
}

export async function sync(opts: SyncOptions): Promise<SyncResult> {
  const { client, events, signal } = opts;
  const waitMs = opts.waitMs ?? 30_000;
  const original = (await client.mode()).mode;
  let switched = false;
  let pool: FtpPool | undefined;
  const result: SyncResult = { plan: { mkdirs: [], uploads: [], deleteFiles: [], deleteDirs: [], unchanged: 0, problems: [] }, uploaded: 0, uploadedBytes: 0, deleted: 0, created: 0, failed: [], finalMode: original };
  const fail = (rel: string, reason: string): void => {
    result.failed.push({ rel, reason });
    events.failed(rel, reason);
  };
  /** Runs `op` on each item (one at a time when order matters); a refusal by the server fails that item only. */
  const perItem = async (pool: FtpPool, items: readonly string[], inOrder: boolean, op: (conn: FtpConnection, rel: string) => Promise<void>, failure: string): Promise<void> => {
    const one = async (conn: FtpConnection, rel: string): Promise<void> => {
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

  const apply = async (pool: FtpPool, plan: Plan, rootMissing: boolean): Promise<void> => {
    const remotePath = (rel: string): string => remoteJoin(opts.remoteDir, rel);
    if (rootMissing) await pool.each([opts.remoteDir], (conn, dir) => withReconnect(conn, signal, () => conn.ensureDir(dir)));
    // Deletions first: they free space on the card for what comes. Folders after their files, deepest first.
    await perItem(pool, plan.deleteFiles, false, async (conn, rel) => {
      await conn.removeFile(remotePath(rel));
      result.deleted++;
      events.deleted(rel, "file");
    }, "cannot delete");
    await perItem(pool, plan.deleteDirs, true, async (conn, rel) => {
      await conn.removeDir(remotePath(rel));
      result.deleted++;
      events.deleted(rel, "dir");
    }, "cannot delete the folder");
    await perItem(pool, plan.mkdirs, true, async (conn, rel) => {
      await conn.mkdir(remotePath(rel));
      result.created++;
      events.created(rel);
    }, "cannot create the folder");

    const failedDirs = result.failed.map((f) => f.rel);
    await pool.each(plan.uploads, async (conn, u) => {
      if (failedDirs.some((d) => u.rel.startsWith(d + "/"))) {
        fail(u.rel, "its folder could not be created on the card");
        return;
      }
      events.uploadStarted(u);
      try {
        await withReconnect(conn, signal, () => uploadOne(conn, u, remotePath(u.rel), pool.canSetTimes, events));
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
  };

  try {
    if (original !== MODE_FTP) {
      events.step("Switching the device to FTP mode…");
      await switchMode(client, "ftp", waitMs, signal);
      switched = true;
    }
    const ftpHost = opts.ftp.host.includes(":") ? `[${opts.ftp.host}]` : opts.ftp.host;
    events.step(`Waiting for the FTP server at ${opts.ftp.ports.map((p) => `${ftpHost}:${p}`).join(" or ")}…`);
    const { client: first, port } = await waitForFtp(opts.ftp, waitMs, signal);
    pool = await FtpPool.open(first, opts.ftp, port, opts.parallel);
    const openPool = pool;
    signal.addEventListener("abort", () => openPool.abort(), { once: true });
    if (signal.aborted) throw signal.reason;

    events.step("Comparing the folder with the card…");
    const [local, remote] = await Promise.all([scanLocal(opts.localDir), listRemote(pool, opts.remoteDir, signal)]);
    const plan = makePlan(local, remote.tree, { delete: opts.delete, canSetTimes: pool.canSetTimes });
    result.plan = plan;
    events.planned(plan);
    for (const p of plan.problems) fail(p.rel, p.reason);
    if (!opts.dryRun) await apply(pool, plan, remote.rootMissing);
  } catch (e) {
    pool?.abort();
    pool = undefined;
    const back = switched ? await restore(client, modeOf(original), waitMs) : original;
    const interrupted = signal.aborted;
    throw new SyncStopped(interrupted ? "Interrupted." : message(e), e, back, interrupted);
  } finally {
    pool?.close();
  }

  if (opts.dryRun) {
    if (switched) result.finalMode = (await restore(client, modeOf(original), waitMs)) ?? MODE_FTP;
    return result;
  }
  const target: Mode = opts.stay ? "ftp" : "msc";
  if (target === "msc") events.step("Switching the device back to USB MSC mode…");
  await switchMode(client, target, waitMs);
  result.finalMode = target === "ftp" ? MODE_FTP : MODE_MSC;
  return result;
}

/** Puts the device back in `mode`; undefined when that failed too (the device is then in an unknown mode). */
async function restore(client: FrameFiClient, mode: Mode, waitMs: number): Promise<ModeName | undefined> {
  try {
    await switchMode(client, mode, waitMs);
    return mode === "ftp" ? MODE_FTP : MODE_MSC;
  } catch {
    return undefined;
  }
}
