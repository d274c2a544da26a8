// The SD card: a folder, and the one owner of its paths, its writes and its space. The web upload and the FTP
// server both work through its file-system interface (CardFileSystem): nothing else touches the card folder, so
// every change passes through here and reaches the figures; the API, MQTT and the panel read them.
import { mkdirSync, renameSync, utimesSync, type Stats } from "node:fs";
import { mkdir, open, realpath, rmdir, stat, unlink, type FileHandle } from "node:fs/promises";
import { entryOf, entryStats, readFolder, type CardEntry } from "./entries.js";
import { Inventory, type CardFigures } from "./figures.js";
import { CardPaths, type CardPath } from "./paths.js";
import { CardError } from "./errors.js";
import { Writes, type CardWrite, type WriteOptions } from "./writes.js";

export { CardError } from "./errors.js";
export type { CardEntry } from "./entries.js";
export type { CardFigures } from "./figures.js";
export { isInternalName, type CardPath } from "./paths.js";
export { removeLeftovers, type CardWrite, type WriteOptions } from "./writes.js";

/**
 * What a file server needs from the card (as ftp-srv's FileSystem): every path it touches is resolved here, every
 * entry is read, made, changed and removed here. Client paths are card paths ("/album/a.jpg"); `real` is a path
 * existing() returned, `target` one creatable() returned. The card's refusals are CardError; a file-system failure
 * (ENOENT, ENOTEMPTY, ENOSPC…) comes as the system's error. The operations a server makes right after a name check
 * (mkdir, rename) are synchronous, so that no other session can pass the same check in between.
 */
export interface CardFileSystem {
  /** The real path of an existing entry, following symlinks only while they stay inside the card. */
  existing(path: string): Promise<string>;
  /** Where a new entry goes, or the entry itself to remove or rename it (a symlink stays a link): its folder must exist. */
  creatable(path: string): Promise<CardPath>;
  /** Refuses a new entry's name the card cannot hold (the FAT rules when the card has them). */
  allowNew(target: CardPath): void;
  /** What is at `real` (a link followed). */
  stat(real: string): Promise<Stats>;
  /** The entry at `target` itself (a link stays a link), or undefined when there is none. Synchronous. */
  entryStats(target: CardPath): Stats | undefined;
  /** A folder's visible entries, sorted by name: no writes in progress, no links leading out of the card. */
  list(real: string): Promise<CardEntry[]>;
  /** The facts of the entry at `real`, listed under `name`. */
  entry(real: string, name: string): Promise<CardEntry>;
  /** Makes a folder at `target`, its name checked first (allowNew). */
  mkdir(target: CardPath): void;
  /** Removes the file or the empty folder at `target` (a link itself, not its target). */
  remove(target: CardPath, kind: "file" | "folder"): Promise<void>;
  /** Moves `source` to `target`, the new name checked first (allowNew). */
  rename(source: CardPath, target: CardPath): void;
  /** Sets the modification (and access) time of the entry at `real`. */
  setTime(real: string, when: Date): void;
  /** Opens the file at `real` for reading. */
  openRead(real: string): Promise<FileHandle>;
  /** Starts writing a file: claims its space, and lands it atomically on commit. */
  beginWrite(target: CardPath, opts?: WriteOptions): Promise<CardWrite>;
  /** Capacity, space used and free, file count (as GET / reports them). */
  figures(): Promise<CardFigures>;
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

export class Card implements CardFileSystem {
  private readonly paths: CardPaths;
  private readonly inventory: Inventory;
  private readonly writes: Writes;
  private rescanTimer: NodeJS.Timeout | undefined;
  private opened = false;

  constructor(
    root: string,
    private readonly opts: CardOptions,
  ) {
    const fatNames = opts.fatNames ?? false;
    this.paths = new CardPaths(root, fatNames);
    this.inventory = new Inventory(() => this.paths.root, {
      capacity: opts.capacity,
      warn: opts.warn,
      onChange: opts.onChange,
      mounted: opts.mounted,
      writing: () => this.writes.isWritable,
    });
    this.writes = new Writes(this.paths, this.inventory, fatNames);
  }

  /** The card folder's real path (once open). */
  get root(): string {
    return this.paths.root;
  }

  get emulated(): boolean {
    return this.opts.capacity !== undefined;
  }

  /** Creates the folder if missing, takes the first inventory and starts watching. */
  async open(): Promise<void> {
    await mkdir(this.paths.root, { recursive: true });
    this.paths.root = await realpath(this.paths.root);
    this.opened = true;
    await this.inventory.refreshStatfs();
    await this.inventory.rescan(true);
    this.rescanTimer = setInterval(
      () => void this.inventory.rescan().catch((e) => this.opts.warn(`card rescan failed: ${(e as Error).message}`)),
      this.opts.rescanIntervalMs,
    );
    this.rescanTimer.unref();
  }

  close(): void {
    clearInterval(this.rescanTimer);
    this.inventory.close();
  }

  /** The figures GET / reports: no tree walk, one statfs call at most. */
  figures(): Promise<CardFigures> {
    return this.inventory.figures();
  }

  /** Whether the card belongs to the network (FTP mode). In MSC mode it belongs to the USB host and we write nothing. */
  get isWritable(): boolean {
    return this.writes.isWritable;
  }

  /** Gives the card to the network or takes it back; taking it back aborts every write in progress. */
  async setWritable(writable: boolean): Promise<void> {
    await this.writes.setWritable(writable);
    if (!writable) {
      // A filesystem about to leave (a gadget's image goes to the frame): its last figures are read while it is here.
      if (this.opts.mounted) await this.inventory.refreshStatfs();
      return;
    }
    if (this.opts.mounted) await this.inventory.remounted();
    await this.writes.removeStale(this.opts.warn);
  }

  /**
   * Serves another folder as the card (a collection of --collections), counted afresh. Only while the card belongs
   * to the USB host (MSC mode): no write is in progress then.
   */
  async moveTo(root: string): Promise<void> {
    if (this.writes.isWritable) throw new Error("the card folder changes only in USB MSC mode");
    this.paths.root = await realpath(root);
    if (this.opened) await this.inventory.rerooted();
  }

  /** Bytes a new write may still claim. */
  available(): number {
    return this.writes.available();
  }

  existing(path: string): Promise<string> {
    return this.paths.existing(path);
  }

  creatable(path: string): Promise<CardPath> {
    return this.paths.creatable(path);
  }

  allowNew(target: CardPath): void {
    this.paths.allowNew(target);
  }

  /** A web upload's file name → where it goes (see CardPaths.uploadTarget); CardError DEVICE_UNSAFE_PATH if refused. */
  uploadTarget(name: string): Promise<CardPath> {
    return this.paths.uploadTarget(name);
  }

  beginWrite(target: CardPath, opts?: WriteOptions): Promise<CardWrite> {
    return this.writes.begin(target, opts);
  }

  /** Commits several writes as one (a multi-file upload): all land, or none does. */
  commitAll(writes: readonly CardWrite[]): Promise<void> {
    return this.writes.commitAll(writes);
  }

  stat(real: string): Promise<Stats> {
    return stat(real);
  }

  entryStats(target: CardPath): Stats | undefined {
    return entryStats(target);
  }

  list(real: string): Promise<CardEntry[]> {
    return readFolder(real, (r) => this.paths.inside(r));
  }

  entry(real: string, name: string): Promise<CardEntry> {
    return entryOf(real, name);
  }

  mkdir(target: CardPath): void {
    this.paths.allowNew(target);
    mkdirSync(target.absolute);
    this.inventory.changed([target.absolute]);
  }

  async remove(target: CardPath, kind: "file" | "folder"): Promise<void> {
    // Else rmdir's ENOTEMPTY: "not empty" for a folder whose listing is empty.
    if (kind === "folder" && this.writes.holds(target.absolute)) throw new CardError("DEVICE_FOLDER_BUSY", {});
    await (kind === "folder" ? rmdir(target.absolute) : unlink(target.absolute));
    this.inventory.changed([target.absolute]);
  }

  rename(source: CardPath, target: CardPath): void {
    this.paths.allowNew(target);
    renameSync(source.absolute, target.absolute);
    this.writes.moved(source.absolute, target.absolute);
    this.inventory.changed([source.absolute, target.absolute]);
  }

  setTime(real: string, when: Date): void {
    utimesSync(real, when, when);
  }

  openRead(real: string): Promise<FileHandle> {
    return open(real, "r");
  }
}
