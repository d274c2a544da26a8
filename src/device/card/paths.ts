// Card paths: a client's name → a path inside the card, never outside it; the card's own internal names (writes
// in progress); the rules for new names (FAT's, when the card has them).
import { mkdirSync, realpathSync } from "node:fs";
import { lstat, mkdir, realpath } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
import { fatCaseTwin, fatNameProblem } from "./fat-names.js";
import { CardError, printable } from "./errors.js";

/** Why a name cannot go where `twin`, differing only in case, is: FAT keeps one of them. */
export function caseTwinProblem(twin: string): string {
  return `the card has "${printable(twin)}", and FAT cards ignore case in names; use that spelling`;
}

/** An upload's folder was renamed or removed while the file was being sent (it is not made again). */
export function folderGone(target: CardPath): CardError {
  return new CardError("DEVICE_FOLDER_GONE", { name: printable(target.relative) });
}

/**
 * Refuses new files of one upload where one would be a folder of another ("a.jpg" and "a.jpg/b.jpg"): the folders
 * would be made, and then a file could not land. With FAT names, case is ignored as FAT does.
 */
export function refuseNesting(targets: readonly CardPath[], fatNames: boolean): void {
  const key = (path: string): string => (fatNames ? path.toLowerCase() : path);
  const files = new Set(targets.map((t) => key(t.relative)));
  for (const { relative } of targets) {
    const segments = relative.split("/");
    for (let i = 1; i < segments.length; i++) {
      const folder = segments.slice(0, i).join("/");
      if (files.has(key(folder)))
        throw new CardError("DEVICE_UNSAFE_PATH", {
          name: printable(relative),
          problem: `"${printable(folder)}" is a file of the same upload, so it cannot be a folder too; nothing was stored`,
        });
    }
  }
}

export interface CardPath {
  /** Card-relative path with "/" separators and no "." or ".." segments, e.g. "photos/2024/a.jpg". */
  relative: string;
  /** Absolute path on this machine of the entry itself (a symlink there stays a link). */
  absolute: string;
  /** The real folder that holds the entry, when it exists already (a web upload may create its folders). */
  folder?: string;
}

const TEMP_NAME = /^\.framefi-upload-[0-9a-f]+\.part$/;
/** The FTP server's temp names before the card owned every write: still found on cards, still internal. */
const LEGACY_FTP_TEMP = /^\..*\.ftp-partial-[0-9a-f]{8}$/s;

/** Control characters (C0 and DEL): never in a name a client gives or is shown. */
const CONTROL = /[\x00-\x1f\x7f]/;

/** Whether a name (or a path) holds a control character: CR or LF would split a listing line, ESC drive a terminal. */
export function hasControlCharacter(name: string): boolean {
  return CONTROL.test(name);
}

/** Refuses a client's path that holds a control character (see hasControlCharacter). */
function refuseControlCharacters(path: string): void {
  if (hasControlCharacter(path)) throw new CardError("DEVICE_CONTROL_CHARACTER", { name: printable(path) });
}

/** Whether a file name is the card's own (a write in progress): never listed, reached or created by clients. */
export function isInternalName(name: string): boolean {
  // Both patterns start with a dot; most names don't, and the watcher asks for every event.
  return name.charCodeAt(0) === 46 && (TEMP_NAME.test(name) || LEGACY_FTP_TEMP.test(name));
}

/** `dir`'s entry `name` (one component, as a folder listing or the watcher gives it): join() without its normalising. */
export function childPath(dir: string, name: string): string {
  return dir.endsWith(sep) ? dir + name : dir + sep + name;
}

/** The temp name of a write in progress: `prefix` tells the writer (random per card), `sequence` the write. */
export function tempName(prefix: string, sequence: number): string {
  return `.framefi-upload-${prefix}${sequence.toString(16)}.part`;
}

export class CardPaths {
  /** The card folder's real path (set by Card.open). */
  root: string;

  constructor(
    root: string,
    private readonly fatNames: boolean,
  ) {
    this.root = root;
  }

  /** Whether a real path lies inside the card. */
  inside(real: string): boolean {
    return real === this.root || real.startsWith(this.root + sep);
  }

  /**
   * The real path of something that exists at the card path `path` ("/a/b" or "a/b"), following symlinks only
   * while they stay inside the card. Internal names are not there for clients, nor are names with control characters
   * (made on the card by other means: they are not listed either).
   */
  async existing(path: string): Promise<string> {
    refuseControlCharacters(path);
    if (path.split("/").some(isInternalName)) throw new CardError("DEVICE_NOT_FOUND", {});
    let real: string;
    try {
      // The FTP server's card paths come normalised already (see ftp/paths.ts); join() would only do it again.
      real = realpathSync.native(path.startsWith("/") ? this.root + path : join(this.root, path));
    } catch (e) {
      throw new CardError("DEVICE_NOT_FOUND", {}, { cause: e });
    }
    if (!this.inside(real)) throw new CardError("DEVICE_OUTSIDE_CARD", {});
    return real;
  }

  /** Where a new entry at the card path `path` goes (or the entry itself, to remove or rename it): its folder must exist. */
  async creatable(path: string): Promise<CardPath> {
    refuseControlCharacters(path);
    const name = basename(path);
    if (path === "/" || path === "" || name === "" || name === "." || name === "..")
      throw new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: "The card's root cannot be replaced." });
    if (isInternalName(name)) throw new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: "That name is reserved for uploads in progress; choose another." });
    const folder = await this.existing(dirname(path));
    const relative = path
      .split("/")
      .filter((s) => s !== "" && s !== ".")
      .join("/");
    return { relative, absolute: childPath(folder, name), folder };
  }

  /**
   * Refuses a new entry's name the card cannot hold (FAT: forbidden characters, a case-insensitive twin).
   * Synchronous: a caller that makes the entry in the same turn of the event loop cannot race another session.
   */
  allowNew(target: CardPath): void {
    if (!this.fatNames) return;
    const name = basename(target.absolute);
    const bad = fatNameProblem(name);
    if (bad) throw new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: bad });
    const twin = fatCaseTwin(dirname(target.absolute), name);
    if (twin !== undefined) throw new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: caseTwinProblem(twin) });
  }

  /**
   * A web upload's file name → where it goes; missing folders on the way are created when it lands. Refuses NUL and
   * other control characters, U+FFFD (bytes that were not UTF-8), backslashes, absolute paths, drive letters, ".."
   * segments, internal names, and any folder on the way that is a symlink leading out of the card or a file. The
   * last component may be anything but a link leading out.
   */
  async uploadTarget(name: string): Promise<CardPath> {
    const refuse = (why: string): never => {
      throw new CardError("DEVICE_UNSAFE_PATH", { name: printable(name), problem: why });
    };
    if (name.endsWith("/") || name.endsWith("/.")) refuse("it ends with a folder separator, so it names a folder, not a file");
    if (name.includes("\0")) refuse("it contains a NUL character");
    if (hasControlCharacter(name)) refuse("it contains a control character (bytes 0x00-0x1F or 0x7F), which would break folder listings; rename the file");
    // Decoders (the URL's query, multipart headers) put U+FFFD for bytes that are not UTF-8: "%E9" and "%E8" would
    // name one file, and the second upload would replace the first.
    if (name.includes("\uFFFD")) refuse("it is not valid UTF-8 (or holds U+FFFD, which stands for such bytes); send names in UTF-8");
    if (name.includes("\\")) refuse("backslashes are not allowed; use / between folders");
    if (name.startsWith("/")) refuse("absolute paths are not allowed; give a path relative to the card");
    if (/^[A-Za-z]:/.test(name)) refuse("drive letters are not allowed; give a path relative to the card");
    const segments = name.split("/").filter((s) => s !== "" && s !== ".");
    if (segments.includes("..")) refuse('".." is not allowed; the path must stay inside the card');
    if (segments.length === 0) refuse("it names no file");
    if (segments.some(isInternalName)) refuse("that name is reserved for uploads in progress");
    if (segments.some((s) => Buffer.byteLength(s) > 255)) refuse("a path component is longer than 255 bytes");
    const fatProblem = this.fatNames ? segments.map(fatNameProblem).find((p) => p !== undefined) : undefined;
    if (fatProblem) refuse(fatProblem);
    const relative = segments.join("/");
    const absolute = join(this.root, ...segments);
    let current = this.root;
    let last: Awaited<ReturnType<typeof lstat>> | undefined;
    for (let i = 0; i < segments.length; i++) {
      current = join(current, segments[i]!);
      const st = await lstat(current).catch((e: NodeJS.ErrnoException) => {
        if (e.code === "ENOENT") return undefined;
        throw e;
      });
      last = st;
      if (!st) break;
      const shown = segments.slice(0, i + 1).join("/");
      if (st.isSymbolicLink()) {
        const real = await realpath(current).catch(() => undefined);
        if (!real || !this.inside(real)) refuse(`"${shown}" is a link that leads outside the card`);
        if (i < segments.length - 1 && !(await lstat(real!)).isDirectory()) refuse(`"${shown}" is not a folder`);
      } else if (i < segments.length - 1 && !st.isDirectory()) {
        refuse(`"${shown}" is a file, not a folder`);
      }
    }
    if (last?.isDirectory() && current === absolute) refuse("a folder of that name exists on the card");
    if (this.fatNames) {
      let folder = this.root;
      for (const segment of segments) {
        const twin = fatCaseTwin(folder, segment);
        if (twin !== undefined) refuse(caseTwinProblem(twin));
        folder = join(folder, segment);
      }
    }
    return { relative, absolute };
  }

  /**
   * The real folder for `target` just before a write lands, created if missing when `create` (else CardError
   * "not-found"), each folder it makes added to `made`: a folder on the way may have become a link leading out of
   * the card since the path was resolved, so it is checked again, before creating anything and after.
   */
  async landingFolder(target: CardPath, create: boolean, made: string[]): Promise<string> {
    const dir = dirname(target.absolute);
    const refuse = (cause?: unknown): never => {
      throw new CardError(
        "DEVICE_UNSAFE_PATH",
        { name: printable(target.relative), problem: "a folder on its path became a link that leads outside the card while the file was being sent" },
        { cause },
      );
    };
    let real: string | undefined;
    try {
      real = realpathSync.native(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    if (real !== undefined) return this.inside(real) ? real : refuse();
    if (!create) throw folderGone(target);
    let existing = dirname(dir);
    while (
      this.inside(existing) &&
      existing !== this.root &&
      !(await lstat(existing).then(
        () => true,
        () => false,
      ))
    )
      existing = dirname(existing);
    if (!this.inside(await realpath(existing))) refuse();
    if (this.fatNames) this.makeFolders(existing, dir, made);
    else {
      // mkdir names the first folder it made; those below it, down to `dir`, are new too.
      const first = await mkdir(dir, { recursive: true });
      if (first !== undefined) {
        let folder = first;
        made.push(folder);
        for (const segment of dir
          .slice(first.length + 1)
          .split(sep)
          .filter(Boolean))
          made.push((folder = join(folder, segment)));
      }
    }
    const created = await realpath(dir);
    return this.inside(created) ? created : refuse();
  }

  /**
   * Makes the folders from `existing` down to `dir`, each refused when its folder holds a case twin (FAT), in one
   * turn of the event loop: two uploads making "Photos" and "photos" at once cannot both pass.
   */
  private makeFolders(existing: string, dir: string, made: string[]): void {
    let folder = existing;
    for (const segment of dir.slice(existing.length + 1).split(sep)) {
      const twin = fatCaseTwin(folder, segment);
      if (twin !== undefined) throw new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: caseTwinProblem(twin) });
      folder = join(folder, segment);
      if (mkdirSync(folder, { recursive: true }) !== undefined) made.push(folder);
    }
  }
}
