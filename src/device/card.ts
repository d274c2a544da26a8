// The SD card: a folder. Owns the card's figures (bytes used, recursive file count), kept in memory so
// GET / never walks the tree: updated on our own writes, by a watcher on every folder, and by a periodic rescan.
// Also owns safe paths (nothing resolves outside the card) and space accounting for writes in progress.
import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync, watch, type Dirent, type FSWatcher } from "node:fs";
import { lstat, mkdir, readdir, realpath, rename, rm, statfs } from "node:fs/promises";
import { setImmediate } from "node:timers/promises";
import { basename, dirname, join, sep } from "node:path";
import { fatCaseTwin, fatNameProblem, fatSizeProblem } from "./fat-names.js";
import { isPartialUpload, type SpaceClaim } from "./ftp/server.js";

export type CardErrorCode = "unsafe-path" | "no-space" | "not-writable";

/** A refused card operation; `code` tells the caller which HTTP/FTP answer fits (400, 507/552, 400). */
export class CardError extends Error {
  constructor(
    readonly code: CardErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface CardFigures {
  totalSize: number;
  usedSize: number;
  freeSize: number;
  fileCount: number;
}

export interface CardPath {
  /** Card-relative path with "/" separators and no "." or ".." segments, e.g. "photos/2024/a.jpg". */
  relative: string;
  /** Absolute path on this machine. */
  absolute: string;
}

/** One file being written: bytes go to `tempPath`; commit() renames it into place, abort() removes it. */
export interface CardWrite {
  readonly target: CardPath;
  readonly tempPath: string;
  /** Aborted when the card stops belonging to the network (switch to MSC mode, restart). */
  readonly signal: AbortSignal;
  /** Claims `bytes` more space for this write; throws CardError("no-space") when the card cannot hold them. */
  grow(bytes: number): void;
  /** Renames the temp file into place (creating sub-folders) and updates the figures. */
  commit(): Promise<void>;
  /** Removes the temp file and releases the claimed space. Safe to call more than once, and after commit. */
  abort(): Promise<void>;
}

const TEMP_NAME = /^\.framefi-upload-[0-9a-f]+\.part$/;

/** Whether a file name is one of our writes in progress (listings such as FTP's LIST should hide them). */
export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/** Temp names of either kind (web uploads, FTP uploads): reserved, and not counted while they are writes in progress. */
function isTemp(name: string): boolean {
  return TEMP_NAME.test(name) || isPartialUpload(name);
}

export interface CardOptions {
  /** Emulated capacity in bytes, enforced; undefined = the folder's filesystem. */
  capacity: number | undefined;
  rescanIntervalMs: number;
  warn: (message: string) => void;
  /** Called after the figures change (debounced by the caller if needed). */
  onChange?: () => void;
  /** Refuse names and sizes a FAT32 card cannot hold (see fat-names.ts). */
  fatNames?: boolean;
  /**
   * For a card whose filesystem comes and goes (a USB gadget image, unmounted while the USB host holds it):
   * whether it is mounted now. While it is not, the figures are the last known; on setWritable(true) it is re-read.
   */
  mounted?: () => boolean;
}

interface ActiveWrite {
  tempPath: string;
  claimed: number;
  controller: AbortController;
  abort: () => Promise<void>;
}

export class Card {
  root: string;
  private readonly files = new Map<string, number>();
  private usedBytes = 0;
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly pending = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private rescanTimer: NodeJS.Timeout | undefined;
  private scanning: Set<string> | undefined;
  private readonly active = new Set<ActiveWrite>();
  /** Space claimed by FTP uploads in progress (web uploads claim inside their ActiveWrite). */
  private readonly claims = new Set<{ claimed: number }>();
  private writable = false;
  private fsFree = 0;
  private fsTotal = 0;
  private fsCheckedAt = 0;
  private statfsFailing = false;
  private closed = false;
  /** FTP temp upload files seen by the watcher or a rescan (some may be gone since). */
  private readonly partials = new Set<string>();
  /** Re-reads of paths the FTP server changed; figures() waits for them. */
  private ftpRefresh: Promise<void> = Promise.resolve();
  /** Groups of writes being committed: taking the card back waits for them, so a group lands whole or not at all. */
  private readonly committing = new Set<Promise<void>>();

  constructor(
    root: string,
    private readonly opts: CardOptions,
  ) {
    this.root = root;
  }

  /** Creates the folder if missing, takes the first inventory and starts watching. */
  async open(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    this.root = await realpath(this.root);
    await this.refreshStatfs();
    await this.rescan(true);
    this.rescanTimer = setInterval(() => void this.rescan().catch((e) => this.opts.warn(`card rescan failed: ${(e as Error).message}`)), this.opts.rescanIntervalMs);
    this.rescanTimer.unref();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.rescanTimer);
    clearTimeout(this.flushTimer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  get emulated(): boolean {
    return this.opts.capacity !== undefined;
  }

  /** The figures GET / reports: no tree walk, one statfs call at most. */
  async figures(): Promise<CardFigures> {
    await this.ftpRefresh;
    // A few changes the watcher has already reported are applied first, so an answer does not lag behind them;
    // a flood of them (a big folder copied in) is left to the background, so the answer stays fast.
    if (this.pending.size > 0 && this.pending.size <= 256) await this.flush();
    if (this.opts.capacity !== undefined) {
      const total = this.opts.capacity;
      return { totalSize: total, usedSize: this.usedBytes, freeSize: Math.max(0, total - this.usedBytes), fileCount: this.files.size };
    }
    await this.refreshStatfs();
    return { totalSize: this.fsTotal, usedSize: this.fsTotal - this.fsFree, freeSize: this.fsFree, fileCount: this.files.size };
  }

  /** Whether the card belongs to the network (FTP mode). In MSC mode it belongs to the USB host and we write nothing. */
  get isWritable(): boolean {
    return this.writable;
  }

  /** Gives the card to the network or takes it back; taking it back aborts every write in progress. */
  async setWritable(writable: boolean): Promise<void> {
    this.writable = writable;
    if (!writable) await Promise.all(this.committing);
    if (!writable) await Promise.all([...this.active].map((w) => w.abort()));
    else {
      if (this.opts.mounted) await this.remounted();
      await this.removeStaleTempFiles();
    }
  }

  /** The filesystem was mounted again (the USB host may have changed it meanwhile): watch and count it afresh. */
  private async remounted(): Promise<void> {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.refreshStatfs();
    await this.rescan();
  }

  private get absent(): boolean {
    return this.opts.mounted?.() === false;
  }

  /**
   * Temp files left by a crash (uploads in progress are tracked, so anything else is stale). FTP temp files
   * are all stale here: the card is given to the network before the FTP server starts. Only regular files
   * are removed: a folder or link with such a name is someone's (made before the names were refused), and one
   * that cannot be removed is reported, never a reason to refuse FTP mode.
   */
  private async removeStaleTempFiles(): Promise<void> {
    const live = new Set([...this.active].map((w) => basename(w.tempPath)));
    const names = await readdir(this.root).catch(() => [] as string[]);
    const stale = [...names.filter((n) => isTempName(n) && !live.has(n)).map((n) => join(this.root, n)), ...this.partials];
    await Promise.all(stale.map((p) => this.removeIfFile(p)));
    this.partials.clear();
  }

  private async removeIfFile(path: string): Promise<void> {
    try {
      if (!(await lstat(path)).isFile()) return;
      await rm(path);
      this.removeFile(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") this.opts.warn(`cannot remove the stale temp file ${path}: ${(e as Error).message}`);
    }
  }

  /**
   * For the FTP server: one upload's claim on the free space, counted with every other write in progress, so
   * concurrent FTP and web uploads cannot together exceed the card. Released only once the figures include
   * what the upload changed (after its `ftpChanged`).
   */
  claim(): SpaceClaim {
    const entry = { claimed: 0 };
    this.claims.add(entry);
    return {
      grow: (bytes) => {
        if (!this.emulated && Date.now() - this.fsCheckedAt > 500) void this.refreshStatfs().catch(() => undefined);
        if (bytes > this.available()) return false;
        entry.claimed += bytes;
        return true;
      },
      release: () => void this.ftpRefresh.finally(() => this.claims.delete(entry)),
    };
  }

  /**
   * For the FTP server: re-reads the card paths ("/a/b.jpg") a completed command changed. The figures
   * answered next (GET /, the MQTT state) already include the change.
   */
  ftpChanged(paths: string[]): void {
    this.ftpRefresh = this.ftpRefresh
      .then(async () => {
        for (const p of paths) {
          // The FTP path may pass through a link to a folder inside the card: count the file where it really is.
          const absolute = join(this.root, p);
          const folder = await realpath(dirname(absolute)).catch(() => dirname(absolute));
          await this.reconcile(join(folder, basename(absolute)));
        }
        this.opts.onChange?.();
      })
      .catch((e) => this.opts.warn(`cannot read the FTP change on the card: ${(e as Error).message}`));
  }

  /**
   * Turns a client-supplied name (upload filename, FTP path made card-relative) into a path inside the card.
   * Refuses NUL, backslashes, absolute paths, drive letters, ".." segments, and any folder on the way that is a
   * symlink leading out of the card or a file. The last component may be anything but a link leading out.
   */
  async resolve(name: string): Promise<CardPath> {
    const refuse = (why: string): never => {
      throw new CardError("unsafe-path", `Invalid file name "${printable(name)}": ${why}.`);
    };
    if (name.includes("\0")) refuse("it contains a NUL character");
    if (name.includes("\\")) refuse("backslashes are not allowed; use / between folders");
    if (name.startsWith("/")) refuse("absolute paths are not allowed; give a path relative to the card");
    if (/^[A-Za-z]:/.test(name)) refuse("drive letters are not allowed; give a path relative to the card");
    const segments = name.split("/").filter((s) => s !== "" && s !== ".");
    if (segments.includes("..")) refuse("\"..\" is not allowed; the path must stay inside the card");
    if (segments.length === 0) refuse("it names no file");
    if (segments.some((s) => isTemp(s))) refuse("that name is reserved for uploads in progress");
    if (segments.some((s) => Buffer.byteLength(s) > 255)) refuse("a path component is longer than 255 bytes");
    const fatProblem = this.opts.fatNames ? segments.map(fatNameProblem).find((p) => p !== undefined) : undefined;
    if (fatProblem) refuse(fatProblem);
    const relative = segments.join("/");
    const absolute = join(this.root, ...segments);
    let current = this.root;
    for (let i = 0; i < segments.length; i++) {
      current = join(current, segments[i]!);
      let st;
      try {
        st = await lstat(current);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") break;
        throw e;
      }
      if (st.isSymbolicLink()) {
        const real = await realpath(current).catch(() => undefined);
        if (!real || !this.inside(real)) refuse(`"${segments.slice(0, i + 1).join("/")}" is a link that leads outside the card`);
        if (i < segments.length - 1 && !(await lstat(real!)).isDirectory()) refuse(`"${segments.slice(0, i + 1).join("/")}" is not a folder`);
      } else if (i < segments.length - 1 && !st.isDirectory()) {
        refuse(`"${segments.slice(0, i + 1).join("/")}" is a file, not a folder`);
      }
    }
    return { relative, absolute };
  }

  /**
   * Starts writing a new file at `name`. `expectedBytes`, when known, is claimed at once so a write that cannot
   * fit is refused before any byte arrives. Throws CardError for an unsafe name, a full card or MSC mode.
   */
  async beginWrite(name: string, expectedBytes = 0): Promise<CardWrite> {
    if (!this.writable) throw new CardError("not-writable", "Cannot upload in MSC mode.");
    if (name.endsWith("/") || name.endsWith("/.")) {
      throw new CardError("unsafe-path", `Invalid file name "${printable(name)}": it ends with a folder separator, so it names a folder, not a file.`);
    }
    const target = await this.resolve(name);
    const existing = await lstat(target.absolute).catch(() => undefined);
    if (existing?.isDirectory()) throw new CardError("unsafe-path", `Invalid file name "${printable(name)}": a folder of that name exists on the card.`);
    if (this.opts.fatNames) await this.refuseCaseTwins(target);
    if (!this.emulated) await this.refreshStatfs();

    const tempPath = join(this.root, `.framefi-upload-${randomBytes(8).toString("hex")}.part`);
    const controller = new AbortController();
    const entry: ActiveWrite = { tempPath, claimed: 0, controller, abort: async () => undefined };
    let finished = false;
    let removed: Promise<void> | undefined;
    const card = this;
    // Every caller waits for the removal, also one that comes while another abort (a mode switch) removes it.
    const abort = async (): Promise<void> => {
      if (removed) return removed;
      if (finished) return;
      finished = true;
      card.active.delete(entry);
      controller.abort();
      removed = rm(tempPath, { force: true });
      await removed;
    };
    entry.abort = abort;
    const grow = (bytes: number): void => {
      if (finished) return;
      if (!this.emulated && Date.now() - this.fsCheckedAt > 500) void this.refreshStatfs().catch(() => undefined);
      const tooBig = this.opts.fatNames ? fatSizeProblem(entry.claimed + bytes) : undefined;
      if (tooBig) throw new CardError("no-space", `Cannot store "${printable(name)}": ${tooBig}.`);
      if (bytes > this.available()) {
        throw new CardError("no-space", `Not enough free space on the card: ${this.available()} bytes free, the file needs more.`);
      }
      entry.claimed += bytes;
    };
    grow(expectedBytes);
    this.active.add(entry);

    return {
      target,
      tempPath,
      signal: controller.signal,
      grow,
      abort,
      commit: async () => {
        if (finished) throw new CardError("not-writable", "The write was aborted.");
        // A folder on the way may have been replaced by a link since resolve(): check again, just before writing.
        const folder = await this.realFolder(name, dirname(target.absolute));
        await this.addFolders(folder);
        await rename(tempPath, join(folder, basename(target.absolute)));
        finished = true;
        this.active.delete(entry);
        await this.refresh(target.absolute);
      },
    };
  }

  /** On FAT "A.jpg" and "a.jpg" are one name: refuse a new path that differs from an existing one only in case. */
  private async refuseCaseTwins(target: CardPath): Promise<void> {
    let folder = this.root;
    for (const segment of target.relative.split("/")) {
      const twin = await fatCaseTwin(folder, segment);
      if (twin !== undefined) {
        throw new CardError("unsafe-path", `Invalid file name "${printable(target.relative)}": the card has "${printable(twin)}", and FAT cards ignore case in names; use that spelling.`);
      }
      folder = join(folder, segment);
    }
  }

  /**
   * Commits several writes as one (a multi-file upload): all land, or — when the card was taken back first —
   * none does. A switch to MSC mode that comes while they land waits for them.
   */
  async commitAll(writes: readonly CardWrite[]): Promise<void> {
    if (!this.writable || writes.some((w) => w.signal.aborted)) throw new CardError("not-writable", "Cannot upload in MSC mode.");
    const landing = (async () => {
      for (const w of writes) await w.commit();
    })();
    const settled = landing.catch(() => undefined);
    this.committing.add(settled);
    try {
      await landing;
    } finally {
      this.committing.delete(settled);
    }
  }

  /** Re-reads one path (file, folder or gone) into the figures: for FTP deletes, renames and folder changes. */
  async refresh(absolute: string): Promise<void> {
    await this.reconcile(absolute);
    this.opts.onChange?.();
  }

  /** Bytes a new write may still claim. */
  available(): number {
    const claimed = [...this.active, ...this.claims].reduce((sum, w) => sum + w.claimed, 0);
    if (this.opts.capacity !== undefined) return this.opts.capacity - this.usedBytes - claimed;
    // statfs already counts what the writes in progress have put on disk; claims grow as bytes arrive.
    return this.fsFree;
  }

  /**
   * A temp file is a write in progress while the card belongs to the network (its claim counts it); in MSC mode
   * every temp file is one a crash left behind, taking space like any file, so it is counted until removed.
   */
  private inProgress(name: string): boolean {
    return this.writable && isTemp(name);
  }

  /**
   * Creates `dir` (inside the card) if needed and returns its real path, refusing when a link on the way now
   * leads out of the card. Checked before creating anything and again after.
   */
  private async realFolder(name: string, dir: string): Promise<string> {
    const refuse = (): never => {
      throw new CardError("unsafe-path", `Invalid file name "${printable(name)}": a folder on its path became a link that leads outside the card while the file was being sent.`);
    };
    let existing = dir;
    while (this.inside(existing) && existing !== this.root && !(await lstat(existing).then(() => true, () => false))) existing = dirname(existing);
    if (!this.inside(await realpath(existing))) refuse();
    await mkdir(dir, { recursive: true });
    const real = await realpath(dir);
    if (!this.inside(real)) refuse();
    return real;
  }

  private inside(real: string): boolean {
    return real === this.root || real.startsWith(this.root + sep);
  }

  private async refreshStatfs(): Promise<void> {
    if (this.absent) return;
    this.fsCheckedAt = Date.now();
    try {
      const s = await statfs(this.root);
      this.fsTotal = s.blocks * s.bsize;
      this.fsFree = s.bavail * s.bsize;
      this.statfsFailing = false;
    } catch (e) {
      // The folder vanished or became unreadable: keep the last figures; the rescan notices what changed.
      if (!this.statfsFailing) this.opts.warn(`cannot read the card's filesystem figures (${(e as Error).message}); showing the last ones`);
      this.statfsFailing = true;
    }
  }

  private async addFolders(dir: string): Promise<void> {
    for (let d = dir; this.inside(d) && !this.watchers.has(d); d = dirname(d)) this.watchDir(d);
  }

  // --- inventory -------------------------------------------------------------------------------------------

  /**
   * Full walk of the card: the first one at start-up (before the API answers), then in the background;
   * paths touched while a walk runs are re-read afterwards.
   */
  async rescan(initial = false): Promise<void> {
    if (this.scanning || this.closed || this.absent) return;
    const touched = new Set<string>();
    this.scanning = touched;
    try {
      const files = new Map<string, number>();
      const dirs = new Set<string>();
      await this.walk(this.root, files, dirs, !initial);
      this.files.clear();
      let used = 0;
      for (const [p, size] of files) {
        this.files.set(p, size);
        used += size;
      }
      this.usedBytes = used;
      for (const [d, w] of this.watchers) {
        if (!dirs.has(d)) {
          w.close();
          this.watchers.delete(d);
        }
      }
    } finally {
      this.scanning = undefined;
    }
    for (const p of touched) await this.reconcile(p);
    this.opts.onChange?.();
  }

  /**
   * Lists a folder tree with synchronous calls, several times faster than one promise per file. `yielding`
   * hands the event loop back every 256 entries, so a background rescan never holds up requests for long.
   */
  private async walk(dir: string, files: Map<string, number>, dirs: Set<string>, yielding: boolean): Promise<void> {
    dirs.add(dir);
    this.watchDir(dir);
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // vanished or unreadable: the watcher or the next rescan will tell
    }
    const subdirs: string[] = [];
    let seen = 0;
    for (const entry of entries) {
      const p = join(dir, entry.name);
      if (entry.isFile() && isPartialUpload(entry.name)) this.partials.add(p);
      if (entry.isDirectory()) subdirs.push(p);
      else if (entry.isFile() && !this.inProgress(entry.name)) {
        try {
          files.set(p, lstatSync(p).size);
        } catch {
          // gone since the listing
        }
      }
      if (yielding && ++seen % 256 === 0) await setImmediate();
    }
    for (const d of subdirs) await this.walk(d, files, dirs, yielding);
  }

  private watchDir(dir: string): void {
    if (this.watchers.has(dir) || this.closed) return;
    try {
      const w = watch(dir, { persistent: false }, (_event, filename) => {
        if (filename === null) void this.rescan().catch((e) => this.opts.warn(`card rescan failed: ${(e as Error).message}`));
        else this.touch(join(dir, filename.toString()));
      });
      w.on("error", () => {
        w.close();
        if (this.watchers.get(dir) === w) this.watchers.delete(dir);
        this.touch(dir);
      });
      this.watchers.set(dir, w);
    } catch (e) {
      this.opts.warn(`cannot watch ${dir} (${(e as Error).message}); its changes show after the next rescan`);
    }
  }

  private touch(path: string): void {
    if (this.absent) return;
    if (isPartialUpload(basename(path))) this.partials.add(path);
    if (this.inProgress(basename(path))) return;
    this.scanning?.add(path);
    this.pending.add(path);
    if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => void this.flush(), 30);
      this.flushTimer.unref();
    }
  }

  private async flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const paths = [...this.pending];
    this.pending.clear();
    for (const p of paths) await this.reconcile(p);
    this.opts.onChange?.();
  }

  private async reconcile(path: string): Promise<void> {
    if (!this.inside(path) || this.inProgress(basename(path))) return;
    let st;
    try {
      st = await lstat(path);
    } catch {
      st = undefined;
    }
    if (st?.isFile()) {
      this.setFile(path, st.size);
      return;
    }
    this.removeFile(path);
    if (st?.isDirectory()) {
      if (!this.watchers.has(path)) {
        const files = new Map<string, number>();
        await this.walk(path, files, new Set(), true);
        for (const [p, size] of files) this.setFile(p, size);
      }
      return;
    }
    // Gone (or not a regular file): forget it, and everything below it if it was a folder.
    const w = this.watchers.get(path);
    if (w) {
      const prefix = path + sep;
      for (const p of [...this.files.keys()]) if (p.startsWith(prefix)) this.removeFile(p);
      for (const [d, dw] of [...this.watchers]) {
        if (d === path || d.startsWith(prefix)) {
          dw.close();
          this.watchers.delete(d);
        }
      }
    }
  }

  private setFile(path: string, size: number): void {
    this.usedBytes += size - (this.files.get(path) ?? 0);
    this.files.set(path, size);
  }

  private removeFile(path: string): void {
    const size = this.files.get(path);
    if (size === undefined) return;
    this.usedBytes -= size;
    this.files.delete(path);
  }
}

function printable(name: string): string {
  return name.replace(/[\0-\x1f\x7f]/g, "?").slice(0, 200);
}
