// The conversion cache, a folder on this machine: `<profile id>/<content hash>.jpg` holds a photo converted to a
// profile, so a re-sync converts only new or changed photos, and a changed profile converts them all again.
// `sources.json` remembers each source file's hash and date taken by path, so an unchanged folder is not read
// again: the content is hashed again when the file's size, modification time, change time (which no program can
// set back) or inode differs, or when its last change was too recent to be sure of (within RACY_MS of the read).
// Files are written whole (temporary name, then renamed), so two syncs may share the cache; a converted photo is
// used only when it is a whole JPEG (a power cut can leave an empty or short file), else converted again; the
// temporary files of a sync that was killed are removed by the next one after an hour. Nothing else is removed:
// delete the folder to reclaim the space.
import { createHash } from "node:crypto";
import { createReadStream, type Stats } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** What identifies a file's content without reading it. */
interface FileStamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

interface SourceFacts extends FileStamp {
  hash: string;
  takenMs?: number;
}

export interface Identity {
  /** sha256 of the file's content, hex. */
  hash: string;
  /** EXIF date taken (ms), undefined when the file has none or is not a photo. */
  takenMs: number | undefined;
}

/** File times are coarse (a few ms on Linux, 2 s on FAT): a change this close to a read may not show in them. */
const RACY_MS = 2000;
/** A temporary file older than this belongs to a sync that was killed: a write takes milliseconds. */
const STALE_TEMP_MS = 60 * 60 * 1000;
/** `<hash>.jpg.<pid>.<random>.tmp` and `sources.json.<pid>.<random>.tmp`: the names writeWhole gives. */
const TEMP_NAME = /^(?:[0-9a-f]{64}\.jpg|sources\.json)\.\d+\.[0-9a-z]+\.tmp$/;
const PROFILE_DIR = /^[0-9a-f]{16}$/;

export function hashOf(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

async function hashFile(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) h.update(chunk as Buffer);
  return h.digest("hex");
}

async function writeWhole(path: string, data: Buffer | string): Promise<void> {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

function stampOf(st: Stats): FileStamp {
  return { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
}

function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino;
}

function isFacts(v: unknown): v is SourceFacts {
  const f = v as Partial<SourceFacts> | null;
  return typeof f?.hash === "string" && [f.size, f.mtimeMs, f.ctimeMs, f.ino].every((n) => typeof n === "number");
}

async function readSources(dir: string): Promise<Map<string, SourceFacts>> {
  const known = new Map<string, SourceFacts>();
  try {
    const saved = JSON.parse(await readFile(join(dir, "sources.json"), "utf8")) as Record<string, unknown>;
    for (const [path, facts] of Object.entries(saved)) if (isFacts(facts)) known.set(path, facts);
  } catch {
    // No index yet, or an unreadable one: every source is read again.
  }
  return known;
}

/** Removes the temporary files of syncs killed mid-write (those of a sync still running are recent). */
async function removeStaleTemps(dir: string): Promise<void> {
  const names = await readdir(dir);
  const dirs = [dir, ...names.filter((n) => PROFILE_DIR.test(n)).map((n) => join(dir, n))];
  const now = Date.now();
  for (const d of dirs) {
    const inside = d === dir ? names : await readdir(d).catch(() => []);
    for (const name of inside.filter((n) => TEMP_NAME.test(n))) {
      const st = await stat(join(d, name)).catch(() => undefined);
      if (st && now - st.mtimeMs > STALE_TEMP_MS) await rm(join(d, name), { force: true });
    }
  }
}

/** A whole JPEG: it starts with SOI and a marker and ends with EOI, as every JPEG sharp writes does. */
async function wholeJpeg(path: string): Promise<number | undefined> {
  const file = await open(path).catch(() => undefined);
  if (!file) return undefined;
  try {
    const st = await file.stat();
    if (!st.isFile() || st.size < 5) return undefined;
    const head = Buffer.alloc(3);
    const tail = Buffer.alloc(2);
    await file.read(head, 0, 3, 0);
    await file.read(tail, 0, 2, st.size - 2);
    return head.equals(Buffer.from([0xff, 0xd8, 0xff])) && tail.equals(Buffer.from([0xff, 0xd9])) ? st.size : undefined;
  } finally {
    await file.close();
  }
}

export class PhotoCache {
  /** Sources read again in this run, merged into sources.json by save(). */
  private readonly seen = new Map<string, SourceFacts>();

  private constructor(
    readonly dir: string,
    private readonly known: Map<string, SourceFacts>,
  ) {}

  static async open(dir: string): Promise<PhotoCache> {
    await mkdir(dir, { recursive: true });
    await removeStaleTemps(dir);
    return new PhotoCache(dir, await readSources(dir));
  }

  /** The file's content hash and date taken; read again unless sources.json vouches for them (see above). */
  async identify(abs: string, readTaken: (abs: string) => Promise<number | undefined>): Promise<Identity> {
    const before = stampOf(await stat(abs));
    const old = this.known.get(abs);
    if (old && sameStamp(old, before)) return { hash: old.hash, takenMs: old.takenMs };
    const readAt = Date.now();
    const [hash, takenMs] = await Promise.all([hashFile(abs), readTaken(abs)]);
    const after = stampOf(await stat(abs));
    // Remembered only when the file held still while it was read and had not changed just before.
    if (sameStamp(before, after) && before.ctimeMs < readAt - RACY_MS) {
      this.seen.set(abs, { ...before, hash, ...(takenMs === undefined ? {} : { takenMs }) });
    }
    return { hash, takenMs };
  }

  outputPath(profileId: string, hash: string): string {
    return join(this.dir, profileId, `${hash}.jpg`);
  }

  /** The size of the converted photo in the cache, or undefined when it is not there whole. */
  lookup(profileId: string, hash: string): Promise<number | undefined> {
    return wholeJpeg(this.outputPath(profileId, hash));
  }

  async store(profileId: string, hash: string, data: Buffer): Promise<string> {
    await mkdir(join(this.dir, profileId), { recursive: true });
    const path = this.outputPath(profileId, hash);
    await writeWhole(path, data);
    return path;
  }

  /** Writes what this run learnt to sources.json, over what another sync may have written meanwhile. */
  async save(): Promise<void> {
    if (this.seen.size === 0) return;
    const now = await readSources(this.dir);
    await writeWhole(join(this.dir, "sources.json"), JSON.stringify(Object.fromEntries([...this.known, ...now, ...this.seen])));
  }
}
