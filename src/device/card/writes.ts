// Writes to the card: each new file goes to a temp file under an internal name, claims its bytes against the free
// space together with every other write in progress (web and FTP alike), and lands by an atomic rename.
import { randomBytes } from "node:crypto";
import { closeSync, constants, ftruncate, lstatSync, open, openSync, renameSync, rmdirSync, writeSync, writevSync } from "node:fs";
import { copyFile, readdir, rm, lstat } from "node:fs/promises";
import { basename, join, sep } from "node:path";
import { Writable } from "node:stream";
import { caseTwinAmong, fatCaseTwin, fatSizeProblem } from "./fat-names.js";
import { CardError, printable } from "./errors.js";
import type { Inventory } from "./figures.js";
import { caseTwinProblem, childPath, folderGone, isInternalName, refuseNesting, tempName, type CardPath, type CardPaths } from "./paths.js";

/**
 * Removes the temp files a crash left anywhere under `dir` (a card image mounted again before the card opens, so
 * the frame never sees them); returns how many.
 */
export async function removeLeftovers(dir: string): Promise<number> {
  let removed = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) removed += await removeLeftovers(path);
    else if (isInternalName(entry.name)) {
      await rm(path, { force: true });
      removed++;
    }
  }
  return removed;
}

/** One file being written: bytes go to the temp file through sink(); commit() lands it, abort() removes it. */
export interface CardWrite {
  readonly target: CardPath;
  /** Aborted when the card stops belonging to the network (switch to MSC mode, restart). */
  readonly signal: AbortSignal;
  /** Claims `bytes` more space; throws CardError DEVICE_NO_SPACE or DEVICE_TOO_BIG when the card cannot hold them. */
  grow(bytes: number): void;
  /**
   * Appends `chunks` to the temp file at once, in one writev (synchronous, as vsftpd writes: a write into the page
   * cache takes microseconds, while a round trip through libuv's thread pool per chunk was most of an upload's
   * time). A full filesystem throws CardError DEVICE_FILESYSTEM_FULL. The bytes must have been claimed with grow().
   */
  put(chunks: readonly Buffer[]): void;
  /**
   * A stream into the temp file (after the kept bytes) through put(); a full filesystem fails it with CardError
   * DEVICE_FILESYSTEM_FULL. Its end closes the temp file: a multi-file upload holds no descriptor for the files it has.
   */
  sink(highWaterMark: number): Writable;
  /**
   * Renames the temp file into place (creating missing folders, re-checking links) and counts it in the figures.
   * When it fails the write is still open: the caller aborts it.
   */
  commit(): Promise<void>;
  /** Removes the temp file and releases the claimed space. Safe to call more than once, and after commit. */
  abort(): Promise<void>;
}

/** A write ready to land: its folder exists; `land` renames it into place and counts it. */
interface Landing {
  target: CardPath;
  folder: string;
  name: string;
  land(): void;
}

export interface WriteOptions {
  /** Bytes to claim at once, so a write that cannot fit is refused before any byte arrives. */
  expectedBytes?: number;
  /** Existing bytes to keep at the start (FTP APPE and REST): the first `bytes` of the file at `from`. */
  keep?: { from: string; bytes: number };
  /** Refuse when another exclusive write to the same file is in progress (a resumed upload builds on its content). */
  exclusive?: string;
  /**
   * Called when the write is aborted by the card being taken back (or by abort()): a cheaper way to hear of it
   * than `signal`, which is made only when asked for (an AbortController costs about as much CPU as the rest of
   * a small file's bookkeeping, and a sync writes thousands).
   */
  onAbort?: () => void;
}

interface ActiveWrite {
  /** Where the temp file is: moved along when a folder that holds it is renamed (see moved()). */
  tempPath: string;
  claimed: number;
  abort: () => Promise<void>;
}

export class Writes {
  private writable = false;
  private readonly active = new Set<ActiveWrite>();
  private readonly exclusive = new Set<string>();
  /** Groups of writes being committed: taking the card back waits for them, so a group lands whole or not at all. */
  private readonly committing = new Set<Promise<void>>();
  /** Temp names: a random prefix (no clash with a crashed run's files) and a count (cheaper than random bytes each). */
  private readonly tempPrefix = randomBytes(6).toString("hex");
  private writesBegun = 0;
  /** How each write of this card lands (see land()). */
  private readonly landings = new WeakMap<CardWrite, (made: string[]) => Promise<Landing>>();

  constructor(
    private readonly paths: CardPaths,
    private readonly inventory: Inventory,
    private readonly fatNames: boolean,
  ) {}

  get isWritable(): boolean {
    return this.writable;
  }

  /** Gives the card to the network or takes it back; taking it back aborts every write in progress. */
  async setWritable(writable: boolean): Promise<void> {
    this.writable = writable;
    if (writable) return;
    await Promise.all(this.committing);
    await Promise.all([...this.active].map((w) => w.abort()));
  }

  /** Whether a write in progress has its temp file under the folder `real`. */
  holds(real: string): boolean {
    for (const w of this.active) if (w.tempPath.startsWith(real + sep)) return true;
    return false;
  }

  /**
   * A folder was renamed from `from` to `to` (real paths): the temp files of writes into it moved with it. A write
   * whose folder is gone then fails when it lands, and its temp file is removed where it now is.
   */
  moved(from: string, to: string): void {
    for (const w of this.active) if (w.tempPath.startsWith(from + sep)) w.tempPath = to + w.tempPath.slice(from.length);
  }

  /** Bytes a new write may still claim. */
  available(): number {
    let claimed = 0;
    for (const w of this.active) claimed += w.claimed;
    return this.inventory.available(claimed);
  }

  /**
   * Temp files left by a crash (writes in progress are tracked, so any other is stale). Only regular files are
   * removed: a folder or link with such a name is someone's (made before the names were refused), and one that
   * cannot be removed is reported, never a reason to refuse FTP mode.
   */
  async removeStale(warn: (message: string) => void): Promise<void> {
    const live = new Set([...this.active].map((w) => w.tempPath));
    const root = this.paths.root;
    const names = await readdir(root).catch(() => [] as string[]);
    const stale = new Set([...names.filter(isInternalName).map((n) => join(root, n)), ...this.inventory.internal]);
    const remove = async (path: string): Promise<void> => {
      if (live.has(path)) return;
      try {
        if (!(await lstat(path)).isFile()) return;
        await rm(path);
        this.inventory.forget(path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") warn(`cannot remove the stale temp file ${path}: ${(e as Error).message}`);
      }
    };
    await Promise.all([...stale].map(remove));
    this.inventory.internal.clear();
  }

  /** Starts writing `target`'s new content. Throws CardError when the card is not writable or cannot hold it. */
  async begin(target: CardPath, opts: WriteOptions = {}): Promise<CardWrite> {
    const refusal = (): CardError | undefined => {
      if (!this.writable) return new CardError("DEVICE_IN_MSC_MODE", {});
      if (opts.exclusive !== undefined && this.exclusive.has(opts.exclusive)) {
        return new CardError("DEVICE_BUSY", {});
      }
      return undefined;
    };
    const refused = refusal();
    if (refused) throw refused;
    const keep = opts.keep?.bytes ?? 0;
    // Next to the target when its folder exists (the rename stays in one folder); else at the root.
    const tempPath = childPath(target.folder ?? this.paths.root, tempName(this.tempPrefix, this.writesBegun++));
    const entry: ActiveWrite = { tempPath, claimed: 0, abort: async () => undefined };
    const grow = (bytes: number): void => {
      if (finished) return;
      const tooBig = this.fatNames ? fatSizeProblem(keep + entry.claimed + bytes) : undefined;
      if (tooBig) throw new CardError("DEVICE_TOO_BIG", { name: printable(target.relative), problem: tooBig });
      const available = this.available();
      if (bytes > available) throw new CardError("DEVICE_NO_SPACE", { free: Math.max(0, available) });
      entry.claimed += bytes;
    };
    let finished = false;
    await this.inventory.freshen();
    grow(opts.expectedBytes ?? 0);

    // Active from here: a rename of its folder moves entry.tempPath along, and the folder cannot be removed.
    const alone = this.active.size === 0;
    this.active.add(entry);
    let fd: number;
    try {
      if (opts.keep) {
        await copyFile(opts.keep.from, tempPath, constants.COPYFILE_EXCL);
        try {
          fd = openSync(entry.tempPath, "r+");
        } catch (e) {
          await rm(entry.tempPath, { force: true });
          throw e;
        }
      } else if (alone) fd = openSync(tempPath, "wx");
      else {
        // With other writes under way, in libuv's thread pool: creating a file can take the kernel a millisecond of
        // CPU (ext4 skips the inodes of files deleted moments before), and the event loop serves the others meanwhile.
        // Alone, the trip through the pool would only add to the upload's time.
        fd = await new Promise<number>((resolve, reject) => open(tempPath, "wx", (e, fd) => (e ? reject(e) : resolve(fd))));
      }
    } catch (e) {
      this.active.delete(entry);
      throw e;
    }
    // The card may have been taken back, or another exclusive write begun, or its folder renamed (the file made
    // before the rename or after it: both places are cleared), while this one waited above.
    const late = refusal() ?? (entry.tempPath === tempPath ? undefined : folderGone(target));
    if (late) {
      this.active.delete(entry);
      closeSync(fd);
      await Promise.all([rm(tempPath, { force: true }), rm(entry.tempPath, { force: true })]);
      throw late;
    }
    if (opts.exclusive !== undefined) this.exclusive.add(opts.exclusive);
    let controller: AbortController | undefined;
    let closed = false;
    const close = (): void => {
      if (!closed) closeSync(fd);
      closed = true;
    };
    let removed: Promise<void> | undefined;
    const release = (): void => {
      finished = true;
      this.active.delete(entry);
      if (opts.exclusive !== undefined) this.exclusive.delete(opts.exclusive);
    };
    // Every caller waits for the removal, also one that comes while another abort (a mode switch) removes it.
    const abort = async (): Promise<void> => {
      if (removed) return removed;
      if (finished) return;
      release();
      controller?.abort();
      opts.onAbort?.();
      try {
        close();
      } catch {
        // the temp file goes anyway
      }
      removed = rm(entry.tempPath, { force: true });
      await removed;
    };
    entry.abort = abort;
    if (keep > 0) {
      try {
        await new Promise<void>((resolve, reject) => ftruncate(fd, keep, (e) => (e ? reject(e) : resolve())));
      } catch (e) {
        await abort();
        throw e;
      }
    }

    let position = keep;
    const put = (chunks: readonly Buffer[]): void => {
      // After an abort or the sink's end the descriptor is closed, and its number may already belong to another file.
      if (finished || closed) throw new CardError("DEVICE_WRITE_ABORTED", {});
      let total = 0;
      for (const c of chunks) total += c.length;
      try {
        // A regular file takes it all at once but for a full disk (which then throws); finish a short write all the same.
        const written = writevSync(fd, chunks as Buffer[], position);
        if (written < total) {
          const rest = Buffer.concat(chunks).subarray(written);
          for (let done = 0; done < rest.length; ) done += writeSync(fd, rest, done, rest.length - done, position + written + done);
        }
        position += total;
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        throw err.code === "ENOSPC" ? new CardError("DEVICE_FILESYSTEM_FULL", {}, { cause: err }) : err;
      }
    };
    const write: CardWrite = {
      target,
      get signal() {
        controller ??= new AbortController();
        if (removed) controller.abort();
        return controller.signal;
      },
      grow,
      abort,
      put,
      sink: (highWaterMark) =>
        new Writable({
          highWaterMark,
          writev: (chunks, done) => {
            try {
              put(chunks.map((c) => c.chunk as Buffer));
            } catch (e) {
              return done(e as Error);
            }
            done();
          },
          final: (done) => {
            try {
              close();
            } catch (e) {
              return done(e as Error);
            }
            done();
          },
        }),
      commit: () => this.land([write]),
    };
    this.landings.set(write, async (made) => {
      if (finished) throw new CardError("DEVICE_WRITE_ABORTED", {});
      close();
      // A web upload makes its folders; an FTP upload's folder existed when it began, and is not made again if it
      // was renamed or removed since.
      const folder = await this.paths.landingFolder(target, target.folder === undefined, made);
      const name = basename(target.absolute);
      return {
        target,
        folder,
        name,
        land: () => {
          const landed = childPath(folder, name);
          renameSync(entry.tempPath, landed);
          release();
          this.inventory.landed(landed, position);
        },
      };
    });
    return write;
  }

  /**
   * Lands writes: their folders first, then — in one turn of the event loop, so that no other session lands in
   * between — the FAT check (their names were checked before the data came; another upload may have landed a case
   * twin since, or two of them may be twins), a check that no target of several is a folder (a rename onto one
   * fails, after others landed), and the renames. A refused name lands none of them, and the folders made for them
   * are removed again.
   */
  private async land(writes: readonly CardWrite[]): Promise<void> {
    const several = writes.length > 1;
    if (several)
      refuseNesting(
        writes.map((w) => w.target),
        this.fatNames,
      );
    const landings: Landing[] = [];
    const made: string[] = [];
    try {
      for (const w of writes) landings.push(await this.landings.get(w)!(made));
      if (this.fatNames) {
        for (const [i, l] of landings.entries()) {
          const before = landings
            .slice(0, i)
            .filter((o) => o.folder === l.folder)
            .map((o) => o.name);
          const twin = caseTwinAmong(before, l.name) ?? fatCaseTwin(l.folder, l.name);
          if (twin !== undefined)
            throw new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: `Invalid file name "${printable(l.target.relative)}": ${caseTwinProblem(twin)}.` });
        }
      }
      for (const l of several ? landings : []) {
        if (lstatSync(childPath(l.folder, l.name), { throwIfNoEntry: false })?.isDirectory())
          throw new CardError("DEVICE_UNSAFE_PATH", {
            name: printable(l.target.relative),
            problem: "a folder of that name exists on the card; nothing was stored",
          });
      }
    } catch (e) {
      // Deepest first; a folder that holds something by now (another upload's file) stays.
      for (const folder of made.reverse()) {
        try {
          rmdirSync(folder);
        } catch {
          // not empty, or gone
        }
      }
      throw e;
    }
    for (const l of landings) l.land();
  }

  /**
   * Commits several writes as one (a multi-file upload): all land, or — when the card was taken back first —
   * none does. A switch to MSC mode that comes while they land waits for them.
   */
  async commitAll(writes: readonly CardWrite[]): Promise<void> {
    if (!this.writable || writes.some((w) => w.signal.aborted)) throw new CardError("DEVICE_IN_MSC_MODE", {});
    const landing = this.land(writes);
    const settled = landing.catch(() => undefined);
    this.committing.add(settled);
    try {
      await landing;
    } finally {
      this.committing.delete(settled);
    }
  }
}
