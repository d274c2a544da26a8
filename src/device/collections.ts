// The collections a frame can be switched between (--collections): card images NAME.img (the USB gadget) or folders
// NAME (the folder card). One owner of the switch for the web API and MQTT alike: the name checked before anything
// happens, one switch at a time and only in USB MSC mode, a switch asked for while another waits taking its place
// (the latest ask wins; a flood costs a switch or two), and "change" told to whoever shows the collection.
import { EventEmitter } from "node:events";
import { mkdir, readdir, realpath, rename, writeFile } from "node:fs/promises";
import { readSmallFile } from "../shared/small-file.js";
import { basename, dirname, join } from "node:path";
import type { UsbMassStorage } from "./hardware.js";
import { DeviceError } from "./errors.js";

/** A collection's name: what a select offers, and its image (NAME.img) or folder (NAME) in the folder of collections. */
export const COLLECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** What a backend (the gadget's images, the card's folders) does; Collections checks and orders the calls. */
export interface CollectionBackend {
  /** The collections, sorted. */
  names(): Promise<string[]>;
  /** The collection the frame has; undefined when its card is not one of them. */
  active(): string | undefined;
  /** Gives the frame the collection `name` (one of names()); called in USB MSC mode, one call at a time. */
  swap(name: string): Promise<void>;
}

/** Runs a collection's switch in USB MSC mode with no mode switch under way or begun meanwhile (DeviceState.inMsc). */
export interface MscLock {
  inMsc<T>(swap: () => Promise<T>): Promise<T>;
}

export class Collections extends EventEmitter<{ change: [] }> {
  /** A switch waiting for its turn: the latest name asked for. */
  private waiting: { name: string; done: Promise<void> } | undefined;
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly backend: CollectionBackend,
    private readonly lock: MscLock,
  ) {
    super();
  }

  names(): Promise<string[]> {
    return this.backend.names();
  }

  active(): string | undefined {
    return this.backend.active();
  }

  /**
   * Switches the frame to `name` and resolves with the collection it has then: another one when a later request
   * took this one's place. A name that is not a collection changes nothing (DEVICE_BAD_COLLECTION_NAME,
   * DEVICE_NO_SUCH_COLLECTION); in FTP mode DEVICE_COLLECTION_NEEDS_MSC.
   */
  async use(name: string): Promise<string | undefined> {
    if (!COLLECTION_NAME.test(name)) throw new DeviceError("DEVICE_BAD_COLLECTION_NAME", {});
    const known = await this.backend.names();
    if (!known.includes(name)) throw new DeviceError("DEVICE_NO_SUCH_COLLECTION", { name, known: known.join(", ") || "none" });
    if (this.waiting) {
      this.waiting.name = name;
      await this.waiting.done;
      return this.active();
    }
    const waiting: { name: string; done: Promise<void> } = { name, done: Promise.resolve() };
    const run = this.turn.then(() => {
      this.waiting = undefined;
      return this.lock.inMsc(() => this.backend.swap(waiting.name)).finally(() => this.emit("change"));
    });
    waiting.done = run;
    this.turn = run.catch(() => undefined);
    this.waiting = waiting;
    await run;
    return this.active();
  }
}

/**
 * The folder card's collections: the folders NAME of `dir`, one of which is the card the frame and FTP see. A
 * symbolic link is not one: nothing outside the folder is ever served as the card.
 */
export class FolderCollections implements CollectionBackend {
  private realDir: string | undefined;

  constructor(
    private readonly dir: string,
    private readonly card: { readonly root: string; moveTo(root: string): Promise<void> },
    private readonly usb: UsbMassStorage,
    /** Where the collection the frame has is kept across restarts (in the state folder). */
    private readonly savedFile: string,
    private readonly log: (message: string) => void,
  ) {}

  /** Before the card opens: checks the folder, and serves the collection the frame had when the device stopped. */
  async restore(): Promise<void> {
    try {
      this.realDir = await realpath(this.dir);
      await readdir(this.realDir);
    } catch (e) {
      throw new DeviceError("DEVICE_COLLECTIONS_NOT_A_FOLDER", { dir: this.dir }, { cause: e });
    }
    // Bounded and never waiting: the state folder may hold anything in its place (a FIFO, a device).
    let name = "";
    try {
      name = readSmallFile(this.savedFile, 64).toString("utf8").trim();
    } catch {
      // None saved, or not a file: the card the device was given.
    }
    if (COLLECTION_NAME.test(name) && (await this.names()).includes(name)) {
      await this.moveInside(name).catch((e: unknown) => this.log(`the collection ${name} the frame had is not served: ${(e as Error).message}`));
    }
  }

  async names(): Promise<string[]> {
    const entries = await readdir(this.folder(), { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && COLLECTION_NAME.test(e.name))
      .map((e) => e.name)
      .sort();
  }

  active(): string | undefined {
    const root = this.card.root;
    return dirname(root) === this.realDir && COLLECTION_NAME.test(basename(root)) ? basename(root) : undefined;
  }

  async swap(name: string): Promise<void> {
    const next = join(this.folder(), name);
    if (next === this.card.root) return;
    // The frame sees its card removed and another inserted; no photo is copied.
    await this.usb.detach();
    try {
      await this.moveInside(name);
    } finally {
      await this.usb.attach(this.card.root);
    }
    await mkdir(dirname(this.savedFile), { recursive: true });
    await writeFile(`${this.savedFile}.tmp`, `${name}\n`);
    await rename(`${this.savedFile}.tmp`, this.savedFile);
    this.log(`the frame now has the collection ${name} (${next})`);
  }

  /**
   * Makes the folder `name` of DIR the card. Since names() read it, it may have gone or become a link out of DIR:
   * then the card stays as it was (DEVICE_NO_SUCH_COLLECTION), so nothing outside DIR is ever served.
   */
  private async moveInside(name: string): Promise<void> {
    const next = join(this.folder(), name);
    const before = this.card.root;
    const gone = async (cause?: unknown): Promise<never> => {
      if (this.card.root !== before) await this.card.moveTo(before);
      throw new DeviceError("DEVICE_NO_SUCH_COLLECTION", { name, known: (await this.names()).join(", ") || "none" }, { cause });
    };
    await this.card.moveTo(next).catch(gone);
    if (this.card.root !== next) await gone();
  }

  private folder(): string {
    if (!this.realDir) throw new Error("FolderCollections.restore() must run before the card opens");
    return this.realDir;
  }
}
