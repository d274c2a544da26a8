// Card paths: turning a client's path into a file inside the card, and never outside it.
import { randomBytes } from "node:crypto";
import { realpath } from "node:fs/promises";
import { basename, dirname, join, posix, sep } from "node:path";

/** A client path that names nothing reachable (outside the card, missing, or an upload in progress). */
export class PathError extends Error {}

const PARTIAL = /^\..*\.ftp-partial-[0-9a-f]{8}$/s;

/** True for the temp names uploads are written under; they are never listed or reachable by clients. */
export function isPartialUpload(name: string): boolean {
  return PARTIAL.test(name);
}

/** A fresh hidden temp name in the same folder for an upload of `name`. */
export function partialName(name: string): string {
  // Keep the temp name within NAME_MAX (255 bytes) even for long names.
  const stem = Buffer.byteLength(name) <= 200 ? name : "upload";
  return `.${stem}.ftp-partial-${randomBytes(4).toString("hex")}`;
}

/** The card path ("/a/b") a client argument names, relative to `cwd`; `..` stops at the card's root. */
export function cardPath(cwd: string, arg: string): string {
  if (arg.includes("\0")) throw new PathError("Path contains a NUL byte.");
  const joined = posix.normalize(arg.startsWith("/") ? arg : posix.join(cwd, arg));
  const clamped = posix.normalize(posix.join("/", joined));
  return clamped.length > 1 && clamped.endsWith("/") ? clamped.slice(0, -1) : clamped;
}

/** The card folder on disk, resolved once; every access goes through `existing` or `creatable`. */
export class Card {
  private constructor(
    readonly root: string,
    private readonly reservedName: (name: string) => boolean,
  ) {}

  /** `reserved`: names besides our own temp names that clients may neither create nor reach. */
  static async open(root: string, reserved: (name: string) => boolean = () => false): Promise<Card> {
    return new Card(await realpath(root), reserved);
  }

  /** True for names that are not the client's: uploads in progress, the device's own temp files. */
  reserved(name: string): boolean {
    return isPartialUpload(name) || this.reservedName(name);
  }

  /** True when a resolved (real) path lies inside the card. */
  contains(real: string): boolean {
    return real === this.root || real.startsWith(this.root + sep);
  }

  /** The real path of something that exists at `path`, following symlinks only while they stay inside the card. */
  async existing(path: string): Promise<string> {
    if (path.split("/").some((n) => this.reserved(n))) throw new PathError("No such file or folder.");
    let real: string;
    try {
      real = await realpath(join(this.root, path));
    } catch {
      throw new PathError("No such file or folder.");
    }
    if (!this.contains(real)) throw new PathError("Permission denied: the path leads outside the card.");
    return real;
  }

  /** Where a new entry at `path` goes: its parent folder must exist inside the card. */
  async creatable(path: string): Promise<string> {
    const name = basename(path);
    if (path === "/" || name === "") throw new PathError("The card's root cannot be replaced.");
    if (this.reserved(name)) throw new PathError("That name is reserved for uploads in progress; choose another.");
    const parent = await this.existing(dirname(path));
    return join(parent, name);
  }
}
