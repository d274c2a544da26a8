// `framefi sync` prepares photos for the frame. Photos made here with sharp (an EXIF-rotated JPEG with a
// marked corner, a PNG with alpha, WebP, GIF, TIFF, AVIF, the committed HEIC fixture, a corrupt file, a duplicate)
// are synced by the real bin/framefi to a running bin/framefi-device: the card holds upright baseline JPEGs within
// the profile, without EXIF orientation, duplicates once; a second sync converts nothing; a changed profile
// converts everything; capacity limits keep the newest and never start an upload that cannot fit.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFile, mkdir, readdir, readFile, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import sharp, { type Sharp } from "sharp";
import exifReader from "exif-reader";
import { removeDir, repoRoot, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { FrameFiClient } from "../../src/client/api/index.js";
import { bytes } from "../../src/client/cli/format.js";
import { framefi, framefiOnTerminal, tree } from "./fixtures/cli.js";

const RED = { r: 230, g: 20, b: 20 };
const BLUE = { r: 20, g: 60, b: 200 };

/** An upright width × height picture, blue with a red block in its top-left corner (a quarter of each side). */
function marked(width: number, height: number): Sharp {
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const c = x < width / 4 && y < height / 4 ? RED : BLUE;
      data.set([c.r, c.g, c.b], (y * width + x) * 3);
    }
  }
  return sharp(data, { raw: { width, height, channels: 3 } });
}

/** The colour at a fraction of the picture's width and height. */
async function colourAt(file: string, fx: number, fy: number): Promise<{ r: number; g: number; b: number }> {
  const { data, info } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
  const x = Math.floor(info.width * fx);
  const y = Math.floor(info.height * fy);
  const i = (y * info.width + x) * info.channels;
  return { r: data[i]!, g: data[i + 1]!, b: data[i + 2]! };
}

function near(got: { r: number; g: number; b: number }, want: { r: number; g: number; b: number }, what: string): void {
  const d = Math.max(Math.abs(got.r - want.r), Math.abs(got.g - want.g), Math.abs(got.b - want.b));
  assert.ok(d < 40, `${what}: got rgb(${got.r},${got.g},${got.b}), want about rgb(${want.r},${want.g},${want.b})`);
}

/** What a frame sees in a file on the card: a baseline JPEG, its size, no orientation tag. */
async function frameJpeg(file: string): Promise<{ width: number; height: number }> {
  const m = await sharp(file).metadata();
  assert.equal(m.format, "jpeg", `${file} is a JPEG`);
  assert.equal(m.isProgressive, false, `${file} is baseline`);
  assert.equal(m.orientation, undefined, `${file} has no EXIF orientation`);
  assert.equal(m.space, "srgb", `${file} is sRGB`);
  assert.equal(m.hasAlpha, false);
  return { width: m.width!, height: m.height! };
}

describe("framefi sync with a frame profile", () => {
  let dev: RunningDevice;
  let photos: string;
  let cache: string;
  const sync = (...args: string[]): ReturnType<typeof framefi> =>
    framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--cache", cache, photos, ...args], { timeoutMs: 120_000 });

  before(async () => {
    dev = await startDevice();
    photos = await tempDir("framefi-photos-");
    cache = await tempDir("framefi-cache-");
    // Upright it is 1200 × 1600 (portrait) with the red corner top-left; stored turned a quarter, EXIF orientation 6.
    const upright = await marked(1200, 1600).png().toBuffer();
    await sharp(upright).rotate(270).jpeg({ quality: 90 }).withMetadata({ orientation: 6 }).toFile(join(photos, "rotated.jpg"));
    // 2000 × 1000, transparent but for an opaque green left half.
    const rgba = Buffer.alloc(2000 * 1000 * 4);
    for (let y = 0; y < 1000; y++) for (let x = 0; x < 1000; x++) rgba.set([0, 200, 0, 255], (y * 2000 + x) * 4);
    await sharp(rgba, { raw: { width: 2000, height: 1000, channels: 4 } })
      .png()
      .toFile(join(photos, "alpha.png"));
    await mkdir(join(photos, "more"));
    await marked(1300, 700)
      .webp()
      .toFile(join(photos, "more", "w.webp"));
    await marked(1300, 700)
      .gif()
      .toFile(join(photos, "more", "g.gif"));
    await marked(1300, 700)
      .tiff()
      .toFile(join(photos, "more", "t.tiff"));
    await marked(1300, 700)
      .avif({ effort: 0 })
      .toFile(join(photos, "more", "a.avif"));
    await copyFile(join(repoRoot, "test", "client", "fixtures", "marked.heic"), join(photos, "more", "IMG_0001.HEIC"));
    await copyFile(join(photos, "rotated.jpg"), join(photos, "more", "rotated-copy.jpg"));
    await writeFile(join(photos, "broken.jpg"), Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(5000)]));
    await writeFile(join(photos, "notes.txt"), "not a photo\n");
  });
  after(async () => {
    await dev?.stop();
    await removeDir(photos);
    await removeDir(cache);
  });

  test("--fit --dedupe: upright baseline JPEGs within the frame, each photo once, a corrupt one reported and skipped", async () => {
    const r = await sync("--fit", "1024x600", "--dedupe");
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^failed broken\.jpg: cannot decode this photo .*; skipped$/m);
    // The first in path order goes to the card.
    assert.match(r.stdout, /^skipped rotated\.jpg: the same content as more\/rotated-copy\.jpg$/m);
    assert.match(r.stdout, /^converted more\/IMG_0001\.HEIC → more\/IMG_0001\.jpg \(/m);
    assert.match(r.stdout, /^Photos: 7 converted \(.* → .*\) in [\d.]+ s \([\d.]+ photos\/s, [\d.]+ MB\/s read\), 0 from the cache\.$/m);
    assert.match(r.stdout, /^1 duplicate skipped\.$/m);
    assert.match(r.stdout, /Sync done: 8 uploaded .*, 1 failed\. The device is in USB MSC mode\./);

    const card = await tree(dev.card);
    assert.deepEqual(Object.keys(card).sort(), [
      "alpha.jpg",
      "more",
      "more/IMG_0001.jpg",
      "more/a.jpg",
      "more/g.jpg",
      "more/rotated-copy.jpg",
      "more/t.jpg",
      "more/w.jpg",
      "notes.txt",
    ]);
    assert.equal(await readFile(join(dev.card, "notes.txt"), "utf8"), "not a photo\n", "not a photo: copied as it is");

    // The portrait photo stands upright: 450 × 600, red corner top-left.
    assert.deepEqual(await frameJpeg(join(dev.card, "more", "rotated-copy.jpg")), { width: 450, height: 600 });
    near(await colourAt(join(dev.card, "more", "rotated-copy.jpg"), 0.05, 0.05), RED, "top-left of rotated.jpg");
    near(await colourAt(join(dev.card, "more", "rotated-copy.jpg"), 0.95, 0.05), BLUE, "top-right of rotated.jpg");
    near(await colourAt(join(dev.card, "more", "rotated-copy.jpg"), 0.05, 0.95), BLUE, "bottom-left of rotated.jpg");
    // Transparency becomes black.
    assert.deepEqual(await frameJpeg(join(dev.card, "alpha.jpg")), { width: 1024, height: 512 });
    near(await colourAt(join(dev.card, "alpha.jpg"), 0.25, 0.5), { r: 0, g: 200, b: 0 }, "the opaque half");
    near(await colourAt(join(dev.card, "alpha.jpg"), 0.75, 0.5), { r: 0, g: 0, b: 0 }, "the transparent half");
    for (const name of ["w", "g", "t", "a"]) {
      assert.deepEqual(await frameJpeg(join(dev.card, "more", `${name}.jpg`)), { width: 1024, height: 551 }, name);
      near(await colourAt(join(dev.card, "more", `${name}.jpg`), 0.05, 0.05), RED, `top-left of ${name}.jpg`);
      near(await colourAt(join(dev.card, "more", `${name}.jpg`), 0.9, 0.9), BLUE, `bottom-right of ${name}.jpg`);
    }
    // The HEIC (400 × 300) is smaller than the frame: not enlarged by --fit.
    assert.deepEqual(await frameJpeg(join(dev.card, "more", "IMG_0001.jpg")), { width: 400, height: 300 });
    near(await colourAt(join(dev.card, "more", "IMG_0001.jpg"), 0.05, 0.05), RED, "top-left of the HEIC");
    near(await colourAt(join(dev.card, "more", "IMG_0001.jpg"), 0.9, 0.9), BLUE, "bottom-right of the HEIC");
    assert.ok((await readdir(photos)).includes("rotated.jpg") && !(await readdir(photos)).includes("alpha.jpg"), "originals untouched");
  });

  test("a second sync converts nothing and uploads nothing", async () => {
    const r = await sync("--fit", "1024x600", "--dedupe");
    assert.match(r.stdout, /^Photos: 0 converted, 7 from the cache\.$/m);
    assert.match(r.stdout, /Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 8 unchanged, 1 failed\./);
  });

  test("a changed profile converts everything again: --fill gives exactly the frame's size", async () => {
    const r = await sync("--fill", "800x480", "--dedupe", "--delete", "--others", "skip", "--quality", "70");
    assert.match(r.stdout, /^Photos: 7 converted .*, 0 from the cache\.$/m);
    assert.match(r.stdout, /^skipped notes\.txt: not a photo/m);
    assert.match(r.stdout, /^deleted notes\.txt$/m);
    for (const rel of ["more/rotated-copy.jpg", "alpha.jpg", "more/IMG_0001.jpg", "more/a.jpg", "more/g.jpg", "more/t.jpg", "more/w.jpg"]) {
      assert.deepEqual(await frameJpeg(join(dev.card, rel)), { width: 800, height: 480 }, rel);
    }
    const again = await sync("--fill", "800x480", "--dedupe", "--delete", "--others", "skip", "--quality", "70");
    assert.match(again.stdout, /^Photos: 0 converted, 7 from the cache\.$/m);
    assert.match(again.stdout, /Sync done: 0 uploaded/);
  });

  test("bad photo options are usage errors that name the option", async () => {
    let r = await sync("--fit", "big");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--fit takes the frame's size in pixels as WIDTHxHEIGHT .* got "big"\./);
    r = await sync("--quality", "80");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--quality needs a frame profile: add --fit WxH or --fill WxH\./);
    r = await sync("--fit", "800x480", "--format", "png");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--format "png" is not supported/);
    r = await sync("--max-size", "120%");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--max-size takes a share of the card/);
  });
});

describe("framefi sync within a capacity limit", () => {
  let dev: RunningDevice;
  let cache: string;
  const host = (): string[] => ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort)];
  before(async () => {
    dev = await startDevice({ args: ["--card-size", "1MB"] });
    cache = await tempDir("framefi-cache-");
  });
  after(async () => {
    await dev?.stop();
    await removeDir(cache);
  });

  test("--max-files keeps the newest by EXIF date taken (before the file's time); --date-from-mtime stamps the rest", async () => {
    const dir = await tempDir("framefi-dated-");
    try {
      // p1 is the newest by EXIF date, though its file is the oldest; plain.png has no EXIF date: its mtime counts.
      const days = ["2024:05:01", "2023:05:01", "2022:05:01"];
      for (const [i, day] of days.entries()) {
        const file = join(dir, `p${i + 1}.jpg`);
        await marked(640, 480)
          .jpeg()
          .withExif({ IFD2: { DateTimeOriginal: `${day} 12:00:00` } })
          .toFile(file);
        const t = new Date(Date.UTC(2020, 0, 1 + i));
        await utimes(file, t, t);
      }
      await marked(640, 480).png().toFile(join(dir, "plain.png"));
      const t = new Date(Date.UTC(2023, 11, 1));
      await utimes(join(dir, "plain.png"), t, t);

      const args = [...host(), dir, "--to", "/dated", "--fit", "320x240", "--max-files", "3", "--date-from-mtime", "--cache", cache];
      // Its size in the folder (a photo left out is never converted), in a dry run as in the sync.
      const leftOut = `left out p3.jpg (${bytes((await stat(join(dir, "p3.jpg"))).size)}, 2022-05-01): it does not fit the limit\n`;
      await fetch(`${dev.url}/mode/ftp`, { method: "POST" });
      const dry = await framefi([...args, "--dry-run"]);
      assert.equal(dry.code, 0, dry.stderr);
      assert.ok(dry.stdout.includes(leftOut), dry.stdout);
      const r = await framefi(args);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.includes(leftOut), r.stdout);
      assert.match(r.stdout, /^1 file left out to stay within the limit/m);
      assert.deepEqual((await readdir(join(dev.card, "dated"))).sort(), ["p1.jpg", "p2.jpg", "plain.jpg"]);
      const taken = async (name: string): Promise<Date | undefined> =>
        exifReader((await sharp(join(dev.card, "dated", name)).metadata()).exif!).Photo?.DateTimeOriginal as Date | undefined;
      assert.equal((await taken("p1.jpg"))?.toISOString(), "2024-05-01T12:00:00.000Z", "the date taken is kept");
      assert.equal((await taken("plain.jpg"))?.toISOString(), "2023-12-01T00:00:00.000Z", "stamped from the file's time");
    } finally {
      await removeDir(dir);
    }
  });

  test("--max-size 50% of a 1 MB card: the newest files that fit, nothing uploaded that cannot fit", async () => {
    const dir = await tempDir("framefi-sized-");
    try {
      for (let i = 1; i <= 5; i++) {
        const file = join(dir, `f${i}.bin`);
        await writeFile(file, randomBytes(150_000));
        const t = new Date(Date.UTC(2024, 0, i));
        await utimes(file, t, t);
      }
      const r = await framefi([...host(), dir, "--to", "/sized", "--max-size", "50%", "--delete"]);
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /^failed/m);
      const status = await new FrameFiClient({ host: dev.url }).status();
      assert.ok(status.sd_card.used_size <= 500_000, `used ${status.sd_card.used_size} of a 500 kB limit`);
      const kept = (await readdir(join(dev.card, "sized"))).sort();
      assert.ok(kept.length >= 1 && kept.length < 5, kept.join());
      assert.deepEqual(kept, ["f5.bin", "f4.bin", "f3.bin", "f2.bin"].slice(0, kept.length).sort(), "the newest");
      for (let i = 1; i <= 5 - kept.length; i++) assert.match(r.stdout, new RegExp(`^left out f${i}\\.bin `, "m"));
    } finally {
      await removeDir(dir);
    }
  });
});

describe("framefi sync with the .env's [frame] section", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice();
  });
  after(async () => {
    await dev?.stop();
  });

  test("on a terminal the progress bar counts the photos as they are converted and sent", async () => {
    const dir = await tempDir("framefi-tty-photos-");
    const cacheDir = await tempDir("framefi-tty-cache-");
    try {
      for (let i = 0; i < 3; i++)
        await marked(900 + i, 700)
          .png()
          .toFile(join(dir, `p${i}.png`));
      await writeFile(join(dir, "broken.png"), "not a png");
      const r = await framefiOnTerminal(
        ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--to", "/tty", "--fit", "320x240", "--cache", cacheDir],
        [],
      );
      assert.equal(r.code, 1, r.transcript);
      assert.match(r.transcript, /To do: upload \d+ files? \(.*\), convert 4 photos \(and upload what changed\)/);
      assert.match(r.transcript, /\[#{24}\] 3\/3 files/);
      assert.match(r.transcript, /failed broken\.png: cannot decode this photo/);
    } finally {
      await removeDir(dir);
      await removeDir(cacheDir);
    }
  });

  test("FIT and QUALITY from [frame]; the cache under XDG_CACHE_HOME; an unknown key is a usage error", async () => {
    const cwd = await tempDir("framefi-env-");
    try {
      await mkdir(join(cwd, "pictures"));
      await marked(1600, 1200)
        .jpeg()
        .toFile(join(cwd, "pictures", "one.jpg"));
      const env = (extra: string): string =>
        `FTP_HOST="127.0.0.1:${dev.port}"\nLOCAL_DIR="pictures"\nREMOTE_DIR="/frame"\n\n[frame]\nFIT=640x480\nQUALITY=80\n${extra}`;
      await writeFile(join(cwd, ".env"), env(""));
      const vars = { FRAMEFI_FTP_PORT: String(dev.ftpPort), XDG_CACHE_HOME: join(cwd, "cache") };
      // A dry run compares with the card in FTP mode, which it does not switch to by itself.
      assert.equal((await framefi(["mode", "ftp"], { cwd, env: vars })).code, 0);
      const dry = await framefi(["sync", "--dry-run"], { cwd, env: vars });
      await fetch(`http://127.0.0.1:${dev.port}/mode/msc`, { method: "POST" });
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /^would upload one\.jpg \([\d.]+ kB, new\)$/m);
      assert.ok(!(await readdir(dev.card)).includes("frame"), "a dry run changes nothing on the card");
      const r = await framefi(["sync"], { cwd, env: vars });
      assert.match(r.stdout, /^Photos: 0 converted, 1 from the cache\.$/m, "the dry run's conversion is kept");
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await frameJpeg(join(dev.card, "frame", "one.jpg")), { width: 640, height: 480 });
      const profiles = (await readdir(join(cwd, "cache", "framefi"))).filter((n) => /^[0-9a-f]{16}$/.test(n));
      assert.equal(profiles.length, 1, "a profile folder");
      assert.equal((await readdir(join(cwd, "cache", "framefi", profiles[0]!))).length, 1, "holding the converted photo");

      await writeFile(join(cwd, ".env"), env("SHARPEN=yes\n"));
      const bad = await framefi(["sync"], { cwd, env: vars });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /^framefi: .*\.env line \d+: unknown key SHARPEN in \[frame\]; the keys are FIT, FILL, /m);
      await writeFile(join(cwd, ".env"), env("").replace("FIT=640x480", "FIT=640"));
      const badSize = await framefi(["sync"], { cwd, env: vars });
      assert.equal(badSize.code, 2);
      assert.match(badSize.stderr, /FIT in the \.env's \[frame\] section takes the frame's size in pixels/);
    } finally {
      await removeDir(cwd);
    }
  });
});
