// USB mass storage for real: the card image is a configfs gadget's removable medium. MSC mode inserts it (the
// service never touches it then); leaving MSC mode ejects it, checks it and mounts it for FTP mode. The image is
// never inserted and mounted at once, so after a crash at any step start-up only has to unmount, check and go on.
// With --collections, the medium can be swapped for another image of that folder (a collection) in MSC mode
// (collections.ts checks the name and orders the swaps).
import { mkdir, readdir, readFile, realpath, rename, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { hostname } from "node:os";
import { removeLeftovers } from "../card/card.js";
import type { UsbMassStorage } from "../hardware.js";
import { COLLECTION_NAME, type CollectionBackend } from "../collections.js";
import { checkGadgetSupport, ConfigfsGadget, SYSTEM_PATHS, type GadgetPaths } from "./configfs.js";
import { CardImage } from "./image.js";
import { GadgetError, mustRun } from "./system.js";

export interface GadgetUsbOptions {
  /** The FAT32 image file or block device. */
  image: string;
  /** Its size when it must be created; undefined = it must exist. */
  createBytes: number | undefined;
  /** The card folder: where the image is mounted in FTP mode. */
  mountPoint: string;
  /** The UDC to bind to; default the first one. */
  udc: string | undefined;
  /** Sort the card's folders by name (fatsort) each time it goes back to the frame. */
  sort?: boolean;
  /** A folder of card images, NAME.img each: the collections the frame can be switched between. */
  collections?: string | undefined;
  /** Where the collection the frame has is kept across restarts (in the state folder). */
  collectionFile?: string | undefined;
  paths?: GadgetPaths;
  log: (message: string) => void;
}

export class GadgetUsb implements UsbMassStorage {
  private image: CardImage | undefined;
  private gadget: ConfigfsGadget | undefined;
  private isMounted = false;
  private collectionsDir: string | undefined;
  /** Attach, detach and a collection's swap, one at a time. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: GadgetUsbOptions) {}

  /** Whether the card's filesystem is mounted at the card folder (for the card's figures). */
  readonly mounted = (): boolean => this.isMounted;

  /**
   * Before the service starts: checks what the kernel offers, creates the image if needed, sets the gadget up with
   * no medium, repairs what a crash left, and mounts the image read-only so the card can take its inventory.
   */
  async prepare(): Promise<void> {
    const { log } = this.opts;
    const paths = this.opts.paths ?? SYSTEM_PATHS;
    const udc = await checkGadgetSupport(paths, this.opts.udc);
    await mkdir(this.opts.mountPoint, { recursive: true });
    if (this.opts.collections) this.collectionsDir = await realpath(this.opts.collections);
    const image = new CardImage(await realpathOrSelf((await this.savedCollection()) ?? this.opts.image), await realpath(this.opts.mountPoint), log);
    this.image = image;
    this.gadget = new ConfigfsGadget(paths, "framefi", udc);
    if (this.opts.sort) await mustRun("fatsort", ["-v"], "run fatsort (--sort-card): apt-get install fatsort");
    await image.createIfMissing(this.opts.createBytes);
    await this.gadget.setUp({ manufacturer: "FrameFi", product: "FrameFi SD card", serial: serialOf(hostname()) });
    if (await image.mounted()) {
      log(`the card image was still mounted at ${image.mountPoint} (the service stopped in FTP mode): finishing the switch`);
      const removed = await removeLeftovers(image.mountPoint);
      if (removed > 0) log(`removed ${removed} unfinished upload(s) from the card`);
      await image.unmount();
    }
    await image.check();
    await image.mount(true);
    this.isMounted = true;
    log(`USB gadget on ${udc}: card image ${image.path}, mounted at ${image.mountPoint} in FTP mode`);
  }

  /** MSC mode: flush, unmount and check, then insert the image; the host sees a freshly inserted card. */
  attach(): Promise<void> {
    return this.inTurn(() => this.attachNow());
  }

  private async attachNow(): Promise<void> {
    const { image, gadget } = this.ready();
    if (await image.mounted()) {
      await image.hideTrash();
      // The card's figures stop reading the mount point before it goes (they keep the last ones read).
      this.isMounted = false;
      await image.unmount();
    }
    this.isMounted = false;
    // Unmounted, before the frame has it: the one moment fatsort may rewrite the folders.
    if (this.opts.sort) await image.sortFolders();
    // What was written (a sync, a pull, fatsort) is checked before the frame reads it: an image fsck cannot
    // repair stays away from the frame, and the switch to MSC mode fails saying why.
    await image.check();
    await gadget.insert(image.path);
  }

  /** Leaving MSC mode: eject the medium, check the filesystem (the host may have written it), mount it read-write. */
  detach(): Promise<void> {
    return this.inTurn(() => this.detachNow());
  }

  private async detachNow(): Promise<void> {
    const { image, gadget } = this.ready();
    await gadget.eject();
    if (await image.mounted()) await image.unmount();
    await image.check();
    await image.mount(false);
    this.isMounted = true;
  }

  /** On exit: the medium stays ejected and the image unmounted, clean for the next start. */
  async close(): Promise<void> {
    const { image, gadget } = this.ready();
    await gadget.eject();
    if (await image.mounted()) await image.unmount();
    this.isMounted = false;
  }

  /** The collections (--collections) as collections.ts drives them: their names, the one the frame has, the swap. */
  collections(): CollectionBackend | undefined {
    const dir = this.opts.collections;
    if (!dir) return undefined;
    const names = (): Promise<string[]> => collectionNames(dir);
    return {
      names,
      active: () => {
        const path = this.image?.path;
        return path && dirname(path) === this.collectionsDir && COLLECTION_FILE.test(basename(path)) ? basename(path).slice(0, -4) : undefined;
      },
      swap: (name) => this.inTurn(() => this.swapTo(name, names)),
    };
  }

  /** The swap to the collection `name` of the folder, in MSC mode. */
  private async swapTo(name: string, names: () => Promise<string[]>): Promise<void> {
    const known = await names();
    if (!known.includes(name)) throw new GadgetError("DEVICE_NO_SUCH_COLLECTION", { name, known: known.join(", ") || "none" });
    if (this.isMounted) throw new GadgetError("DEVICE_COLLECTION_NEEDS_MSC", {});
    const { image, gadget } = this.ready();
    const next = new CardImage(join(this.collectionsDir!, `${name}.img`), image.mountPoint, this.opts.log);
    if (next.path === image.path) return;
    // The swap: the frame sees its card removed and another inserted; no photo is copied.
    await gadget.eject();
    try {
      await next.check();
      if (this.opts.sort) await next.sortFolders();
    } catch (e) {
      await gadget.insert(image.path);
      throw e;
    }
    await gadget.insert(next.path);
    this.image = next;
    await this.saveCollection(name);
    this.opts.log(`the frame now has the collection ${name} (${next.path})`);
  }

  /** The image of the collection the frame had when the service stopped, when it is still in the folder. */
  private async savedCollection(): Promise<string | undefined> {
    const file = this.opts.collectionFile;
    if (!file || !this.collectionsDir) return undefined;
    const name = (await readFile(file, "utf8").catch(() => "")).trim();
    const path = join(this.collectionsDir, `${name}.img`);
    return COLLECTION_FILE.test(`${name}.img`) && (await collectionNames(this.collectionsDir)).includes(name) ? path : undefined;
  }

  private async saveCollection(name: string): Promise<void> {
    const file = this.opts.collectionFile;
    if (!file) return;
    await mkdir(dirname(file), { recursive: true });
    await writeFile(`${file}.tmp`, `${name}\n`);
    await rename(`${file}.tmp`, file);
  }

  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private ready(): { image: CardImage; gadget: ConfigfsGadget } {
    if (!this.image || !this.gadget) throw new Error("GadgetUsb.prepare() must run before the service starts");
    return { image: this.image, gadget: this.gadget };
  }
}

/** A collection's card image: its name (what an MQTT select offers), then .img. */
const COLLECTION_FILE = new RegExp(`${COLLECTION_NAME.source.slice(0, -1)}\\.img$`);

/**
 * The collections of a folder: its regular files NAME.img. A symbolic link or a folder is not one: a select must
 * never put what lies outside the folder (another disk, /dev/…) in the frame's hands.
 */
export async function collectionNames(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isFile() && COLLECTION_FILE.test(e.name))
    .map((e) => e.name.slice(0, -4))
    .sort();
}

async function realpathOrSelf(path: string): Promise<string> {
  return realpath(path).catch(() => path);
}

/** A stable USB serial number from the host name (letters and digits only, as hosts expect). */
function serialOf(name: string): string {
  return (name.replace(/[^A-Za-z0-9]/g, "").toUpperCase() || "FRAMEFI").slice(0, 32);
}
