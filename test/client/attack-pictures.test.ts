// Attacks on the picture options (issue 35), through the real bin/framefi syncing to a real bin/framefi-device:
// a camera whose clock was never set ("0000:00:00 00:00:00") gets no date (no caption, no stamp, never paired),
// a portrait whose card name another photo takes (a.png beside a.jpg) does not take its partner off the card, and
// with --date-from-mtime a copy of a photo without a date (same content, another file time) gets its own date,
// a pair whose second photo changed is uploaded again even when the new pair's file has the same size, and a frame
// too large for libvips with the options (16384² with a blur, or twice as wide with --pixel-aspect 2) is a usage error,
// and an XMP place written with numeric character references ("Z&#xFC;rich") is drawn as the place, not as the code.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, utimes } from "node:fs/promises";
import { join } from "node:path";
import exifReader from "exif-reader";
import sharp, { type Sharp } from "sharp";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";

const portrait = (colour: string): Sharp => sharp({ create: { width: 600, height: 900, channels: 3, background: colour } });
const taken = (date: string): Parameters<Sharp["withExif"]>[0] => ({ IFD0: {}, IFD2: { DateTimeOriginal: date } });

describe("attack: hostile dates and names with the picture options", () => {
  let dev: RunningDevice;
  let photos: string;
  let cache: string;

  before(async () => {
    dev = await startDevice();
    photos = await tempDir("framefi-attack-pictures-");
    cache = await tempDir("framefi-attack-cache-");
    await portrait("#20c020").png().withExif(taken("2025:05:01 10:00:00")).toFile(join(photos, "a.png"));
    await portrait("#c02020").jpeg().toFile(join(photos, "a.jpg"));
    await portrait("#2040e0").jpeg().withExif(taken("2025:05:01 10:10:00")).toFile(join(photos, "b.jpg"));
    await portrait("#e0e020").jpeg().withExif(taken("0000:00:00 00:00:00")).toFile(join(photos, "z1.jpg"));
    await portrait("#e020e0").jpeg().withExif(taken("0000:00:00 00:00:00")).toFile(join(photos, "z2.jpg"));
  });
  after(async () => {
    await dev?.stop();
    await removeDir(photos);
    await removeDir(cache);
  });

  const sync = (dir: string, to: string, ...args: string[]): ReturnType<typeof framefi> =>
    framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--cache", cache, dir, "--to", to, "--stay", ...args], {
      timeoutMs: 60_000,
    });

  test("an unset clock is no date, and a portrait is never shown beside a photo that does not reach the card", async () => {
    const r = await framefi(
      ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--cache", cache, photos, "--to", "/p", "--stay"].concat([
        "--fit",
        "1024x600",
        "--pair-portraits",
        "--caption",
        "date",
      ]),
      { timeoutMs: 60_000 },
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout + r.stderr, /failed a\.png: a\.jpg already becomes a\.jpg/);
    assert.doesNotMatch(r.stdout, /shown beside/, "nothing is paired");
    for (const name of ["a.jpg", "b.jpg", "z1.jpg", "z2.jpg"]) {
      const out = join(dev.card, "p", name);
      const { data, info } = await sharp(out).raw().toBuffer({ resolveWithObject: true });
      assert.deepEqual([info.width, info.height], [400, 600], `${name} is one portrait`);
      if (!name.startsWith("z")) continue;
      // No caption: every pixel is the photo's one colour; no date stamp either.
      const [r0, g0, b0] = [data[0]!, data[1]!, data[2]!];
      let off = 0;
      for (let i = 0; i < data.length; i += 3) if (Math.abs(data[i]! - r0) + Math.abs(data[i + 1]! - g0) + Math.abs(data[i + 2]! - b0) > 30) off++;
      assert.equal(off, 0, `${name} has no caption`);
      assert.equal((await sharp(out).metadata()).exif, undefined, `${name} has no date taken`);
    }
  });

  test("--date-from-mtime: two files of one content and two file times are two pictures in the cache, each with its date", async () => {
    const dated: Record<string, string> = {};
    for (const [dir, time] of [
      ["old", "2010-06-07T08:09:10Z"],
      ["new", "2021-01-02T03:04:05Z"],
    ] as const) {
      await mkdir(join(photos, dir));
      const file = join(photos, dir, "nodate.jpg");
      await sharp({ create: { width: 800, height: 600, channels: 3, background: "#406080" } })
        .jpeg()
        .toFile(file);
      await utimes(file, new Date(time), new Date(time));
      const r = await sync(join(photos, dir), `/${dir}`, "--fit", "1024x600", "--date-from-mtime", "--caption", "date");
      assert.equal(r.code, 0, r.stderr);
      const { exif } = await sharp(join(dev.card, dir, "nodate.jpg")).metadata();
      dated[dir] = (exifReader(exif!).Photo!.DateTimeOriginal as Date).toISOString();
    }
    assert.deepEqual(dated, { old: "2010-06-07T08:09:10.000Z", new: "2021-01-02T03:04:05.000Z" });
  });

  test("--pair-portraits: a changed second photo is on the card at the next sync, even at the same size", async () => {
    const dir = join(photos, "pair");
    await mkdir(dir);
    await portrait("#20c020").jpeg().withExif(taken("2025:05:01 10:00:00")).toFile(join(dir, "a.jpg"));
    const second = async (colour: string, time: string): Promise<void> => {
      await portrait(colour).jpeg().withExif(taken("2025:05:01 10:10:00")).toFile(join(dir, "b.jpg"));
      await utimes(join(dir, "b.jpg"), new Date(time), new Date(time));
    };
    const rightHalf = async (): Promise<number[]> => [
      ...(await sharp(join(dev.card, "pair", "a.jpg"))
        .extract({ left: 800, top: 300, width: 1, height: 1 })
        .raw()
        .toBuffer()),
    ];
    await second("#f04024", "2030-06-01T00:00:00Z");
    let r = await sync(dir, "/pair", "--fit", "1024x600", "--pair-portraits");
    assert.equal(r.code, 0, r.stderr);
    const before = await rightHalf();
    // Edited after a.jpg. These two colours give pairs of the same size with this libvips; the new one is shown all the same.
    await second("#f04026", "2030-06-02T00:00:00Z");
    r = await sync(dir, "/pair", "--fit", "1024x600", "--pair-portraits");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /uploaded a\.jpg/);
    const after = await rightHalf();
    assert.ok(after[2]! > before[2]!, `the new second photo is shown: ${before} then ${after}`);
  });

  test("a frame drawn larger than libvips reads is a usage error that names the size, not a failure of every photo", async () => {
    for (const args of [
      ["--fit", "16384x16384", "--background", "blur"],
      ["--fill", "16384x10000", "--pixel-aspect", "2"],
    ]) {
      const r = await sync(photos, "/big", ...args);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`pixels for ${args[1]}, more than the 16383×16383 libvips reads: give a smaller ${args[0]}\\.`));
    }
  });

  test("--caption place: an XMP city in character references is drawn as the same city written plainly", async () => {
    const dir = join(photos, "xmp");
    await mkdir(dir);
    const xmp = (city: string): string =>
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" photoshop:City="${city}"/></rdf:RDF></x:xmpmeta>`;
    const landscape = (): Sharp => sharp({ create: { width: 900, height: 600, channels: 3, background: "#406080" } });
    await landscape().jpeg().withXmp(xmp("Zürich")).toFile(join(dir, "plain.jpg"));
    await landscape().jpeg().withXmp(xmp("Z&#xFC;rich")).toFile(join(dir, "coded.jpg"));
    const r = await sync(dir, "/xmp", "--fill", "900x600", "--caption", "place");
    assert.equal(r.code, 0, r.stderr);
    const [plain, coded] = await Promise.all(
      ["plain", "coded"].map((n) =>
        sharp(join(dev.card, "xmp", `${n}.jpg`))
          .raw()
          .toBuffer(),
      ),
    );
    assert.ok(plain!.equals(coded!), "the same caption");
    assert.ok(!plain!.equals(await landscape().raw().toBuffer()), "a caption is drawn");
  });
});
