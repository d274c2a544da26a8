// What bounds the photo pipeline and keeps its cache sound. Real bin/framefi against real
// bin/framefi-device. Decompression bombs (a PNG and a JPEG declaring billions of pixels in a few bytes) and a
// HEIC too large to decode are refused by their header's size, before any decoding; a HEIC that libheif cannot
// decode is reported in our words, without libheif's console output. The cache: an empty or cut-short converted
// photo (a power cut) is converted again, temporary files left by a killed sync are removed, a photo rewritten
// in place with its size and time kept is read again, and two syncs sharing one cache both finish with it whole.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { deflateSync, crc32 } from "node:zlib";
import { copyFile, readdir, readFile, stat, truncate, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp from "sharp";
import { eventually, removeDir, repoRoot, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";

const HEIC = join(repoRoot, "test", "client", "fixtures", "marked.heic");

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A 70-byte PNG whose header declares width × height RGB pixels. */
function pngBomb(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, pngChunk("IHDR", ihdr), pngChunk("IDAT", deflateSync(Buffer.alloc(1000))), pngChunk("IEND", Buffer.alloc(0))]);
}

/** A small JPEG whose frame header (SOF0) declares width × height. */
async function jpegBomb(width: number, height: number): Promise<Buffer> {
  const jpeg = await sharp({ create: { width: 16, height: 16, channels: 3, background: "red" } })
    .jpeg()
    .toBuffer();
  const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
  jpeg.writeUInt16BE(height, sof + 5);
  jpeg.writeUInt16BE(width, sof + 7);
  return jpeg;
}

/** The committed 400 × 300 HEIC with its image size box (ispe) declaring width × height instead. */
async function heicDeclaring(width: number, height: number): Promise<Buffer> {
  const heic = await readFile(HEIC);
  const ispe = heic.indexOf("ispe", 0, "latin1");
  heic.writeUInt32BE(width, ispe + 8);
  heic.writeUInt32BE(height, ispe + 12);
  return heic;
}

/** width × height, `colour` with a white block in the top-left quarter; an uncompressed PNG, so its size depends on width × height only. */
async function flatPng(file: string, width: number, height: number, colour: { r: number; g: number; b: number }): Promise<void> {
  const corner = await sharp({ create: { width: width / 4, height: height / 4, channels: 3, background: "#ffffff" } })
    .png()
    .toBuffer();
  await sharp({ create: { width, height, channels: 3, background: colour } })
    .composite([{ input: corner, left: 0, top: 0 }])
    .png({ compressionLevel: 0 })
    .toFile(file);
}

async function colourAt(file: string, fx: number, fy: number): Promise<{ r: number; g: number; b: number }> {
  const { data, info } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
  const i = (Math.floor(info.height * fy) * info.width + Math.floor(info.width * fx)) * info.channels;
  return { r: data[i]!, g: data[i + 1]!, b: data[i + 2]! };
}

/** The cache's profile folders (16 hex digits). */
async function profileDirs(cache: string): Promise<string[]> {
  return (await readdir(cache)).filter((n) => /^[0-9a-f]{16}$/.test(n)).map((n) => join(cache, n));
}

/** Waits until every file under `dir` was last changed over 2 s ago, as the cache wants before it trusts a file's times. */
async function settled(dir: string): Promise<void> {
  const names = await readdir(dir, { recursive: true });
  await eventually(
    async () => {
      for (const n of names) if (Date.now() - (await stat(join(dir, n))).ctimeMs <= 2_100) return false;
      return true;
    },
    10_000,
    100,
  );
}

describe("framefi sync: photos too large to decode", () => {
  let dev: RunningDevice;
  let photos: string;
  let cache: string;
  before(async () => {
    dev = await startDevice();
    photos = await tempDir("framefi-bombs-");
    cache = await tempDir("framefi-cache-");
  });
  after(async () => {
    await dev?.stop();
    await removeDir(photos);
    await removeDir(cache);
  });

  test("bombs and an oversized HEIC are refused by their declared size; a HEIC libheif cannot decode is reported in our words", async () => {
    await writeFile(join(photos, "huge.png"), pngBomb(60000, 60000));
    await writeFile(join(photos, "bomb.jpg"), await jpegBomb(65000, 65000));
    // 120 MP: under sharp's 268 MP limit, but its decoded pixels would hold some 2 GB in libheif.
    await writeFile(join(photos, "big.heic"), await heicDeclaring(12000, 10000));
    // Declares 800 × 600, holds 400 × 300: libheif refuses it (and logs to the console).
    await writeFile(join(photos, "bad.heic"), await heicDeclaring(800, 600));
    await copyFile(HEIC, join(photos, "good.heic"));

    const r = await framefi(
      ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), photos, "--to", "/limits", "--fit", "320x240", "--cache", cache],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^failed huge\.png: too large to decode \(60000×60000, 3600 MP; photos up to 268 MP are converted\); skipped$/m);
    assert.match(r.stderr, /^failed bomb\.jpg: too large to decode \(65000×65000, 4225 MP; photos up to 268 MP are converted\); skipped$/m);
    assert.match(r.stderr, /^failed big\.heic: too large to decode \(12000×10000, 120 MP; HEIC photos up to 60 MP are converted\); skipped$/m);
    assert.match(r.stderr, /^failed bad\.heic: cannot decode this photo \(.*Decoded image does not have the size signaled in the file.*\); skipped$/m);
    const output = r.stdout + r.stderr;
    assert.doesNotMatch(output, /Decoding image failed|heif_image_handle|HEIF processing error/, "libheif's console output stays out");
    assert.match(r.stdout, /^Photos: 1 converted /m);
    assert.deepEqual(await readdir(join(dev.card, "limits")), ["good.jpg"]);
    assert.equal((await sharp(join(dev.card, "limits", "good.jpg")).metadata()).width, 320);
  });
});

describe("framefi sync: the conversion cache stays sound", () => {
  let devA: RunningDevice;
  let devB: RunningDevice;
  let photos: string;
  let shared: string;
  const sync = (dev: RunningDevice, cache: string, dir: string, to: string, ...args: string[]): ReturnType<typeof framefi> =>
    framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--to", to, "--fit", "320x240", "--cache", cache, ...args], {
      timeoutMs: 120_000,
    });

  before(async () => {
    [devA, devB] = await Promise.all([startDevice(), startDevice()]);
    // Made first, so their times are old enough to be trusted (settled) by the time the concurrent test runs.
    photos = await tempDir("framefi-shared-photos-");
    shared = await tempDir("framefi-shared-cache-");
    for (let i = 0; i < 8; i++) await flatPng(join(photos, `p${i}.png`), 640 + 16 * i, 480, { r: 20, g: 60 + 20 * i, b: 200 });
    await copyFile(HEIC, join(photos, "IMG_0001.HEIC"));
  });
  after(async () => {
    await Promise.all([devA?.stop(), devB?.stop()]);
    await removeDir(photos);
    await removeDir(shared);
  });

  test("an empty or cut-short converted photo is converted again; temporary files of a killed sync are removed", async () => {
    const dir = await tempDir("framefi-power-");
    const cache = await tempDir("framefi-cache-");
    try {
      for (const [i, name] of ["a", "b", "c"].entries()) await flatPng(join(dir, `${name}.png`), 800, 600, { r: 200, g: 40 * i, b: 20 });
      const first = await sync(devA, cache, dir, "/power");
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /^Photos: 3 converted /m);

      const [profile] = await profileDirs(cache);
      const entries = (await readdir(profile!)).filter((n) => n.endsWith(".jpg")).sort();
      assert.equal(entries.length, 3);
      await truncate(join(profile!, entries[0]!), 0);
      await truncate(join(profile!, entries[1]!), Math.floor((await stat(join(profile!, entries[1]!))).size / 2));
      // What a sync killed mid-write leaves: temporary files an hour old; a fresh one may be another sync's.
      const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
      const stale = [join(profile!, `${"a".repeat(64)}.jpg.4242.k2x9.tmp`), join(cache, "sources.json.4242.k2x9.tmp")];
      const fresh = join(profile!, `${"b".repeat(64)}.jpg.4243.p7q1.tmp`);
      const notOurs = join(cache, "notes.tmp");
      for (const f of [...stale, fresh, notOurs]) await writeFile(f, "partial");
      for (const f of [...stale, notOurs]) await utimes(f, old, old);

      const second = await sync(devA, cache, dir, "/power");
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /^Photos: 2 converted .*, 1 from the cache\.$/m);
      assert.match(second.stdout, /Sync done: 0 uploaded .*3 unchanged/, "converted again to the same bytes: the card is up to date");
      for (const name of entries) {
        const m = await sharp(join(profile!, name)).metadata();
        assert.equal(m.format, "jpeg", name);
        assert.equal(m.width, 320, name);
      }
      for (const f of stale) await assert.rejects(stat(f), { code: "ENOENT" }, `${f} is removed`);
      for (const f of [fresh, notOurs]) await stat(f);
    } finally {
      await removeDir(dir);
      await removeDir(cache);
    }
  });

  test("a photo rewritten in place with the same size and modification time is read and converted again", async () => {
    const dir = await tempDir("framefi-inplace-");
    const cache = await tempDir("framefi-cache-");
    try {
      const file = join(dir, "same.png");
      await flatPng(file, 800, 600, { r: 200, g: 20, b: 20 });
      const t = new Date(Date.UTC(2024, 0, 1));
      await utimes(file, t, t);
      await settled(dir);
      const first = await sync(devA, cache, dir, "/inplace");
      assert.equal(first.code, 0, first.stderr);
      assert.ok(JSON.parse(await readFile(join(cache, "sources.json"), "utf8"))[file], "the file's hash is remembered");
      const before = await stat(file);

      await flatPng(file, 800, 600, { r: 20, g: 200, b: 20 });
      await utimes(file, t, t);
      const now = await stat(file);
      assert.equal(now.size, before.size);
      assert.equal(now.mtimeMs, before.mtimeMs);
      assert.equal(now.ino, before.ino, "rewritten in place");

      const second = await sync(devA, cache, dir, "/inplace");
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /^Photos: 1 converted /m);
      assert.match(second.stdout, /Sync done: 1 uploaded/);
      const c = await colourAt(join(devA.card, "inplace", "same.jpg"), 0.75, 0.75);
      assert.ok(c.g > 150 && c.r < 80, `the new green photo is on the card, got rgb(${c.r},${c.g},${c.b})`);
    } finally {
      await removeDir(dir);
      await removeDir(cache);
    }
  });

  test("two syncs at once sharing one cache both finish, and leave it whole", async () => {
    await settled(photos);
    const [a, b] = await Promise.all([sync(devA, shared, photos, "/shared"), sync(devB, shared, photos, "/shared")]);
    for (const [r, dev] of [
      [a, devA],
      [b, devB],
    ] as const) {
      assert.equal(r.code, 0, r.stderr);
      const m = /^Photos: (\d+) converted.*, (\d+) from the cache\.$/m.exec(r.stdout);
      assert.ok(m && Number(m[1]) + Number(m[2]) === 9, r.stdout);
      const card = (await readdir(join(dev.card, "shared"))).sort();
      assert.deepEqual(card, ["IMG_0001.jpg", ...Array.from({ length: 8 }, (_, i) => `p${i}.jpg`)]);
      for (const name of card) assert.equal((await sharp(join(dev.card, "shared", name)).metadata()).format, "jpeg", name);
    }
    const [profile] = await profileDirs(shared);
    const left = await readdir(profile!);
    assert.equal(left.length, 9, `nine converted photos and nothing else: ${left.join(", ")}`);
    assert.ok(!(await readdir(shared)).some((n) => n.endsWith(".tmp")));
    const sources = JSON.parse(await readFile(join(shared, "sources.json"), "utf8")) as Record<string, unknown>;
    assert.equal(Object.keys(sources).length, 9);

    const again = await sync(devA, shared, photos, "/shared");
    assert.match(again.stdout, /^Photos: 0 converted, 9 from the cache\.$/m);
    assert.match(again.stdout, /Sync done: 0 uploaded/);
  });
});
