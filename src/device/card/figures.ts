// The card's figures (bytes used, recursive file count, free space), kept in memory so GET / never walks the tree:
// updated by the card's own writes, by a watcher on every folder, and by a periodic rescan.
import { lstatSync, readdirSync, type Stats, watch, type Dirent, type FSWatcher } from "node:fs";
import { statfs } from "node:fs/promises";
import { setImmediate } from "node:timers/promises";
import { basename, dirname, sep } from "node:path";
import { childPath, isInternalName } from "./paths.js";

export interface CardFigures {
  totalSize: number;
  usedSize: number;
  freeSize: number;
  fileCount: number;
}

export interface InventoryOptions {
  /** Emulated capacity in bytes, enforced; undefined = the folder's filesystem. */
  capacity: number | undefined;
  warn: (message: string) => void;
  /** Called after the figures change (the device debounces it). */
  onChange?: (() => void) | undefined;
  /** For a card whose filesystem comes and goes (a USB gadget image): whether it is mounted now. */
  mounted?: (() => boolean) | undefined;
  /**
   * Whether an internal name is a write in progress (not counted: its claim counts it) rather than one a crash
   * left behind, which takes space like any file until it is removed.
   */
  writing: () => boolean;
}

export class Inventory {
  private readonly files = new Map<string, number>();
  private usedBytes = 0;
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly pending = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private scanning: Set<string> | undefined;
  /** The walk under way, if any. */
  private scanRun: Promise<void> | undefined;
  private fsFree = 0;
  private fsTotal = 0;
  private fsCheckedAt = 0;
  private statfsFailing = false;
  private closed = false;
  /** Internal-named files seen anywhere on the card (some may be gone since): stale ones are removed. */
  readonly internal = new Set<string>();
  /** Re-reads of paths the card's clients changed (FTP deletes, renames, folders); figures() waits for them. */
  private refreshing: Promise<void> = Promise.resolve();

  constructor(
    private readonly root: () => string,
    private readonly opts: InventoryOptions,
  ) {}

  close(): void {
    this.closed = true;
    clearTimeout(this.flushTimer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** The figures GET / reports: no tree walk, one statfs call at most. */
  async figures(): Promise<CardFigures> {
    await this.refreshing;
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

  /** Bytes new writes may still claim, given `claimed` by those in progress. */
  available(claimed: number): number {
    if (this.opts.capacity !== undefined) return this.opts.capacity - this.usedBytes - claimed;
    // statfs already counts what the writes in progress have put on disk; claims grow as bytes arrive.
    if (Date.now() - this.fsCheckedAt > 500) void this.refreshStatfs().catch(() => undefined);
    return this.fsFree;
  }

  /** A file the card itself just wrote (its size known): counted at once, without reading it back. */
  landed(real: string, size: number): void {
    this.setFile(real, size);
    this.watchFolders(dirname(real));
    this.opts.onChange?.();
  }

  /** Re-reads real paths a client changed (file, folder or gone); the next figures() includes them. */
  changed(paths: string[]): void {
    this.refreshing = this.refreshing
      .then(async () => {
        for (const p of paths) await this.reconcile(p);
        this.opts.onChange?.();
      })
      .catch((e) => this.opts.warn(`cannot read a change on the card: ${(e as Error).message}`));
  }

  /** Resolves once the changes reported so far are in the figures. */
  settled(): Promise<void> {
    return this.refreshing;
  }

  /** Reads the filesystem's free space again unless it was read in the last half second (not for an emulated size). */
  async freshen(): Promise<void> {
    if (this.opts.capacity === undefined && Date.now() - this.fsCheckedAt > 500) await this.refreshStatfs();
  }

  async refreshStatfs(): Promise<void> {
    if (this.absent) return;
    this.fsCheckedAt = Date.now();
    try {
      const s = await statfs(this.root());
      // Unmounted while the call ran: what it read is the folder beneath the mount point, not the card.
      if (this.absent) return;
      this.fsTotal = s.blocks * s.bsize;
      this.fsFree = s.bavail * s.bsize;
      this.statfsFailing = false;
    } catch (e) {
      // The folder vanished or became unreadable: keep the last figures; the rescan notices what changed.
      if (!this.statfsFailing) this.opts.warn(`cannot read the card's filesystem figures (${(e as Error).message}); showing the last ones`);
      this.statfsFailing = true;
    }
  }

  /** The filesystem was mounted again (the USB host may have changed it meanwhile): watch and count it afresh. */
  async remounted(): Promise<void> {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.refreshStatfs();
    await this.rescan();
  }

  /** The card is another folder now: once a walk of the old one is over, watch and count the new one afresh. */
  async rerooted(): Promise<void> {
    while (this.scanRun) await this.scanRun.catch(() => undefined);
    this.internal.clear();
    await this.remounted();
  }

  /** Forgets a file the card removed itself (a stale temp file). */
  forget(path: string): void {
    this.removeFile(path);
    this.internal.delete(path);
  }

  private get absent(): boolean {
    return this.opts.mounted?.() === false;
  }

  private inProgress(name: string): boolean {
    return this.opts.writing() && isInternalName(name);
  }

  private watchFolders(dir: string): void {
    for (let d = dir; this.inside(d) && !this.watchers.has(d); d = dirname(d)) this.watchDir(d);
  }

  private inside(path: string): boolean {
    const root = this.root();
    return path === root || path.startsWith(root + sep);
  }

  /**
   * Full walk of the card: the first one at start-up (before the API answers), then in the background;
   * paths touched while a walk runs are re-read afterwards.
   */
  async rescan(initial = false): Promise<void> {
    if (this.scanning || this.closed || this.absent) return;
    const run = this.scan(initial);
    this.scanRun = run;
    try {
      await run;
    } finally {
      if (this.scanRun === run) this.scanRun = undefined;
    }
  }

  private async scan(initial: boolean): Promise<void> {
    const touched = new Set<string>();
    this.scanning = touched;
    try {
      const files = new Map<string, number>();
      const dirs = new Set<string>();
      await this.walk(this.root(), files, dirs, !initial);
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
      const p = childPath(dir, entry.name);
      if (entry.isFile() && isInternalName(entry.name)) this.internal.add(p);
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
        else this.touch(dir, filename);
      });
      w.on("error", () => {
        w.close();
        if (this.watchers.get(dir) === w) this.watchers.delete(dir);
        this.touch(dirname(dir), basename(dir));
      });
      this.watchers.set(dir, w);
    } catch (e) {
      this.opts.warn(`cannot watch ${dir} (${(e as Error).message}); its changes show after the next rescan`);
    }
  }

  /** A watcher event on `dir`'s entry `name`: re-read it soon, together with the others that arrive meanwhile. */
  private touch(dir: string, name: string): void {
    if (this.absent) return;
    // The card's own writes in progress are counted by their claims and forgotten when they land.
    const internal = isInternalName(name);
    if (internal && this.opts.writing()) return;
    const path = childPath(dir, name);
    if (internal) this.internal.add(path);
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
    let seen = 0;
    for (const p of paths) {
      await this.reconcile(p);
      if (++seen % 256 === 0) await setImmediate();
    }
    this.opts.onChange?.();
  }

  private async reconcile(path: string): Promise<void> {
    if (!this.inside(path) || this.inProgress(basename(path))) return;
    // Synchronous, as the walk: the watcher reports every file a sync lands, and a promise per file cost more
    // than the stat itself.
    let st: Stats | undefined;
    try {
      st = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    if (st?.isFile()) {
      this.setFile(path, st.size);
      return;
    }
    this.removeFile(path);
    if (st?.isDirectory()) {
      // Read even when watched already: a file landing in a new folder watches it before that folder's own event
      // comes, and what was put in the folder before then has sent no event.
      const files = new Map<string, number>();
      await this.walk(path, files, new Set(), true);
      for (const [p, size] of files) this.setFile(p, size);
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
