// The conversion cache, a folder on this machine: `<profile id>/<content hash>.jpg` holds a photo converted to a
// profile, so a re-sync converts only new or changed photos, and a changed profile converts them all again.
// `sources.json` remembers each source file's hash and date taken by path, size and modification time, so an
// unchanged folder is not read again. Files are written whole (temporary name, then renamed): two syncs may share
// the cache. Nothing is ever removed; delete the folder to reclaim the space.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

interface SourceFacts {
  size: number;
  mtimeMs: number;
  hash: string;
  takenMs?: number;
}

export interface Identity {
  /** sha256 of the file's content, hex. */
  hash: string;
  /** EXIF date taken (ms), undefined when the file has none or is not a photo. */
  takenMs: number | undefined;
}

async function hashFile(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) h.update(chunk as Buffer);
  return h.digest("hex");
}

async function writeWhole(path: string, data: Buffer | string): Promise<void> {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, path);
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
    const known = new Map<string, SourceFacts>();
    try {
      const saved = JSON.parse(await readFile(join(dir, "sources.json"), "utf8")) as Record<string, SourceFacts>;
      for (const [path, facts] of Object.entries(saved)) if (typeof facts?.hash === "string") known.set(path, facts);
    } catch {
      // No index yet, or an unreadable one: every source is read again.
    }
    return new PhotoCache(dir, known);
  }

  /** The file's content hash and date taken; read again only when its size or modification time changed. */
  async identify(abs: string, size: number, mtimeMs: number, readTaken: (abs: string) => Promise<number | undefined>): Promise<Identity> {
    const old = this.known.get(abs);
    if (old && old.size === size && old.mtimeMs === mtimeMs) return { hash: old.hash, takenMs: old.takenMs };
    const [hash, takenMs] = await Promise.all([hashFile(abs), readTaken(abs)]);
    this.seen.set(abs, { size, mtimeMs, hash, ...(takenMs === undefined ? {} : { takenMs }) });
    return { hash, takenMs };
  }

  outputPath(profileId: string, hash: string): string {
    return join(this.dir, profileId, `${hash}.jpg`);
  }

  /** The size of the converted photo in the cache, or undefined when it is not there. */
  async lookup(profileId: string, hash: string): Promise<number | undefined> {
    const st = await stat(this.outputPath(profileId, hash)).catch(() => undefined);
    return st?.isFile() ? st.size : undefined;
  }

  async store(profileId: string, hash: string, data: Buffer): Promise<string> {
    await mkdir(join(this.dir, profileId), { recursive: true });
    const path = this.outputPath(profileId, hash);
    await writeWhole(path, data);
    return path;
  }

  /** Writes what this run learnt to sources.json. */
  async save(): Promise<void> {
    if (this.seen.size === 0) return;
    await writeWhole(join(this.dir, "sources.json"), JSON.stringify(Object.fromEntries([...this.known, ...this.seen])));
  }
}
