// The card image: a FAT32 file (or a block device such as a partition), checked with fsck.vfat and loop-mounted
// read-write while the device is in FTP mode. Never mounted while the USB host has it.
import { open, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { TRASH } from "../../shared/trash-folder.js";
import { setTimeout as sleep } from "node:timers/promises";
import { failure, GadgetError, isMountPoint, mustRun, runCommand } from "./system.js";

/** How far hideTrash() looks: folders below the root (a FAT path holds at most 260 characters), folders in all. */
export const TRASH_WALK = { depth: 64, folders: 20_000 };

export class CardImage {
  /** Mounted read-write now. */
  #writable = false;

  constructor(
    readonly path: string,
    /** Where the image is mounted in FTP mode (the card folder the service serves). */
    readonly mountPoint: string,
    private readonly log: (message: string) => void,
  ) {}

  /** Creates an empty FAT32 image of `bytes` if there is nothing at the path; true when it did. */
  async createIfMissing(bytes: number | undefined): Promise<boolean> {
    if (await stat(this.path).catch(() => undefined)) return false;
    if (bytes === undefined) {
      throw new GadgetError("DEVICE_CARD_IMAGE_MISSING", { path: this.path });
    }
    if (bytes < 34 * 1024 * 1024) throw new GadgetError("DEVICE_CARD_IMAGE_TOO_SMALL", { bytes });
    const file = await open(this.path, "wx");
    try {
      await file.truncate(bytes); // sparse: space is taken as photos arrive
    } finally {
      await file.close();
    }
    await mustRun("mkfs.vfat", ["-F", "32", "-n", "FRAMEFI", this.path], `create a FAT32 filesystem on ${this.path}`).catch(async (e: unknown) => {
      await rm(this.path, { force: true });
      throw e;
    });
    this.log(`created the card image ${this.path} (${bytes} bytes, FAT32)`);
    return true;
  }

  /** Whether the image is mounted at the mount point now. */
  mounted(): Promise<boolean> {
    return isMountPoint(this.mountPoint);
  }

  /** Checks the filesystem and repairs what a crash or an unplugged host left (fsck.vfat -a). */
  async check(): Promise<void> {
    const result = await runCommand("fsck.vfat", ["-a", "-w", this.path]);
    if (result.stopped) {
      throw new GadgetError("DEVICE_FSCK_STOPPED", { path: this.path, failure: failure(result) });
    }
    if (result.exitCode === 1) this.log(`warning: fsck.vfat repaired the card image: ${result.output.split("\n").slice(1).join(" ").slice(0, 500)}`);
    else if (result.exitCode !== 0) {
      throw new GadgetError("DEVICE_CARD_IMAGE_NOT_FAT", { path: this.path, status: result.exitCode, output: String(result.output.split("\n").at(-1)) });
    }
  }

  /**
   * Sorts every folder's entries by name, byte by byte (Debian's fatsort -a: the order of the sync's prefixes), so
   * that a frame that plays in directory order plays in name order. Only on an unmounted, checked filesystem.
   */
  async sortFolders(): Promise<void> {
    // In the C locale fatsort cannot read non-ASCII names and sorts them by their short names ("Été" as ETE).
    await mustRun("fatsort", ["-q", "-a", this.path], `sort the folders of ${this.path}`, { ...process.env, LC_ALL: "C.UTF-8" });
  }

  /**
   * Gives every `.trash` folder (where `framefi sync --trash` keeps what it removed, in the folder it synced: `--to
   * /a/b` makes /a/b/.trash) the FAT hidden attribute, which frames skip (the dot alone hides it only from
   * Linux-based ones). On the filesystem mounted read-write (fatattr: FAT_IOCTL_SET_ATTRIBUTES); mounted read-only,
   * nothing was written. Without fatattr, says so and goes on. The walk is bounded (TRASH_WALK); past it, says so.
   */
  async hideTrash(): Promise<void> {
    if (!this.#writable) return;
    const found: string[] = [];
    let folders = 0;
    let cut = false;
    const visit = async (dir: string, depth: number): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (!e.isDirectory()) continue;
        if (e.name === TRASH) found.push(join(dir, e.name));
        else if (depth >= TRASH_WALK.depth || folders >= TRASH_WALK.folders) cut = true;
        else {
          folders++;
          await visit(join(dir, e.name), depth + 1);
        }
      }
    };
    await visit(this.mountPoint, 0);
    if (cut) {
      this.log(
        `warning: looked for .trash folders in ${TRASH_WALK.folders} folders down to ${TRASH_WALK.depth} levels only; a .trash beyond stays visible to the frame`,
      );
    }
    for (const path of found) {
      const result = await runCommand("fatattr", ["+h", path]);
      if (result.exitCode !== 0) this.log(`warning: cannot hide ${path} from the frame (fatattr +h): ${failure(result)}; apt-get install fatattr`);
    }
  }

  async mount(readOnly: boolean): Promise<void> {
    const isFile = (await stat(this.path)).isFile();
    const options = [...(isFile ? ["loop"] : []), readOnly ? "ro" : "rw", "utf8", "shortname=mixed", "errors=remount-ro"];
    await mustRun("mount", ["-t", "vfat", "-o", options.join(","), this.path, this.mountPoint], `mount the card image at ${this.mountPoint}`);
    this.#writable = !readOnly;
  }

  /** Flushes and unmounts; a file still open (an FTP transfer closing) gets a few seconds to go. */
  async unmount(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const result = await runCommand("umount", [this.mountPoint]);
      if (result.exitCode === 0 || !(await this.mounted())) {
        this.#writable = false;
        return;
      }
      if (attempt >= 25) throw new GadgetError("DEVICE_UNMOUNT_FAILED", { mountPoint: this.mountPoint, output: result.output });
      await sleep(200);
    }
  }
}
