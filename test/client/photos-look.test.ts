// The picture options (issue 35), synced by the real bin/framefi to a running bin/framefi-device, judged by the
// pixels on the card: --background (the fitted region is the resized photo, the rest is not black), --crop smart
// (the red disc off-centre is kept), --caption (only the bottom-right band changes, with light and dark pixels,
// wider with the place), --pair-portraits (two photos and a gap in one file), --pixel-aspect (the disc is
// pre-squeezed by the panel's stretch); a second sync converts nothing, a changed option converts again.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp, { type Sharp } from "sharp";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";

interface Raw {
  data: Buffer;
  width: number;
  height: number;
}

async function rawOf(image: Sharp | string): Promise<Raw> {
  const { data, info } = await (typeof image === "string" ? sharp(image) : image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** Mean absolute difference per channel between a region of `a` (at left, top) and the whole of `b`. */
function meanDiff(a: Raw, b: Raw, left: number, top: number): number {
  let sum = 0;
  for (let y = 0; y < b.height; y++) {
    for (let x = 0; x < b.width; x++) {
      for (let c = 0; c < 3; c++) sum += Math.abs(a.data[((y + top) * a.width + x + left) * 3 + c]! - b.data[(y * b.width + x) * 3 + c]!);
    }
  }
  return sum / (b.width * b.height * 3);
}

/** The pixels of a region that pass `keep`, counted. */
function count(r: Raw, box: { left: number; top: number; width: number; height: number }, keep: (p: number[]) => boolean): number {
  let n = 0;
  for (let y = box.top; y < box.top + box.height; y++) {
    for (let x = box.left; x < box.left + box.width; x++) {
      const i = (y * r.width + x) * 3;
      if (keep([r.data[i]!, r.data[i + 1]!, r.data[i + 2]!])) n++;
    }
  }
  return n;
}

const isRed = ([r, g, b]: number[]): boolean => r! > 150 && g! < 90 && b! < 90;
const bright = ([r, g, b]: number[]): boolean => r! > 220 && g! > 220 && b! > 220;
const dark = ([r, g, b]: number[]): boolean => r! < 50 && g! < 50 && b! < 50;

/** The bounding box of the red pixels. */
function redBox(r: Raw): { width: number; height: number; cx: number } {
  let [x0, y0, x1, y1] = [r.width, r.height, -1, -1];
  for (let y = 0; y < r.height; y++) {
    for (let x = 0; x < r.width; x++) {
      const i = (y * r.width + x) * 3;
      if (!isRed([r.data[i]!, r.data[i + 1]!, r.data[i + 2]!])) continue;
      [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x), Math.max(y1, y)];
    }
  }
  return { width: x1 - x0 + 1, height: y1 - y0 + 1, cx: (x0 + x1) / 2 };
}

/** A width × height scene: sky, grass, a red disc of radius r at (cx, cy) as fractions. */
function scene(width: number, height: number, disc = { cx: 0.5, cy: 0.5, r: 0.25 }, sky = "#8fb8de"): Sharp {
  const r = Math.min(width, height) * disc.r;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="${sky}"/><rect y="${height * 0.65}" width="${width}" height="${height * 0.35}" fill="#3a7d2c"/><circle cx="${width * disc.cx}" cy="${height * disc.cy}" r="${r}" fill="#d02020"/></svg>`;
  return sharp(Buffer.from(svg));
}

/** EXIF date taken and a GPS position (degrees, minutes) as sharp writes them. */
function exif(date: string, gps?: { lat: [number, number]; lon: [number, number] }): Parameters<Sharp["withExif"]>[0] {
  const tags: Parameters<Sharp["withExif"]>[0] = { IFD0: {}, IFD2: { DateTimeOriginal: date } };
  if (gps) {
    tags.IFD3 = {
      GPSLatitudeRef: "N",
      GPSLatitude: `${gps.lat[0]}/1 ${gps.lat[1]}/1 0/1`,
      GPSLongitudeRef: "E",
      GPSLongitude: `${gps.lon[0]}/1 ${gps.lon[1]}/1 0/1`,
    };
  }
  return tags;
}

describe("framefi sync with the picture options", () => {
  let dev: RunningDevice;
  let photos: string;
  let cache: string;
  const syncWith = (env: NodeJS.ProcessEnv, dir: string, to: string, ...args: string[]): ReturnType<typeof framefi> =>
    framefi(
      ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--cache", cache, join(photos, dir), "--to", `/${to}`, "--stay", ...args],
      { timeoutMs: 120_000, env },
    );
  const sync = (dir: string, to: string, ...args: string[]): ReturnType<typeof framefi> => syncWith({}, dir, to, ...args);
  const card = (...parts: string[]): string => join(dev.card, ...parts);

  before(async () => {
    dev = await startDevice();
    photos = await tempDir("framefi-look-");
    cache = await tempDir("framefi-cache-");
    for (const d of ["one", "wide", "light", "pairs"]) await mkdir(join(photos, d));
    // 1200 × 900, taken in Lyon (45°45' N, 4°50' E).
    await scene(1200, 900)
      .jpeg({ quality: 95 })
      .withExif(exif("2024:07:14 18:30:00", { lat: [45, 45], lon: [4, 50] }))
      .toFile(join(photos, "one", "lyon.jpg"));
    // 1600 × 800, the disc far to the left on a plain sky: a centred 400 × 800 crop misses it.
    await scene(1600, 800, { cx: 0.14, cy: 0.4, r: 0.2 })
      .jpeg({ quality: 95 })
      .toFile(join(photos, "wide", "left.jpg"));
    // All but white and all but black, for the caption's legibility.
    await sharp({ create: { width: 800, height: 600, channels: 3, background: "#f8f8f8" } })
      .jpeg()
      .withExif(exif("2023:12:24 20:00:00"))
      .toFile(join(photos, "light", "white.jpg"));
    await sharp({ create: { width: 800, height: 600, channels: 3, background: "#080808" } })
      .jpeg()
      .withExif(exif("2023:12:24 20:00:00"))
      .toFile(join(photos, "light", "black.jpg"));
    // Two portraits ten minutes apart (green, blue) and a third a day later; one landscape between them.
    const portrait = (colour: string): Sharp => sharp({ create: { width: 600, height: 900, channels: 3, background: colour } });
    await portrait("#20c020")
      .jpeg()
      .withExif(exif("2025:05:01 10:00:00"))
      .toFile(join(photos, "pairs", "a.jpg"));
    await portrait("#2040e0")
      .jpeg()
      .withExif(exif("2025:05:01 10:10:00"))
      .toFile(join(photos, "pairs", "b.jpg"));
    await portrait("#e0e020")
      .jpeg()
      .withExif(exif("2025:05:02 10:00:00"))
      .toFile(join(photos, "pairs", "c.jpg"));
    await scene(900, 600)
      .jpeg()
      .withExif(exif("2025:05:01 10:05:00"))
      .toFile(join(photos, "pairs", "land.jpg"));
    // The place from the photo's own XMP (with markup in it, which stays text).
    await scene(1200, 900)
      .jpeg()
      .withExif(exif("2024:07:14 18:30:00"))
      .withXmp(
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" photoshop:City="Z&amp;rich &lt;b&gt;" photoshop:Country="Switzerland"/></rdf:RDF></x:xmpmeta>',
      )
      .toFile(join(photos, "one", "zurich.jpg"));
  });
  after(async () => {
    await dev?.stop();
    await removeDir(photos);
    await removeDir(cache);
  });

  test("--background blur: exactly the frame, the fitted region is the resized photo, the sides are a dimmed blur", async () => {
    const r = await sync("one", "blur", "--fit", "1024x600", "--background", "blur");
    assert.equal(r.code, 0, r.stderr);
    const out = await rawOf(card("blur", "lyon.jpg"));
    assert.deepEqual([out.width, out.height], [1024, 600]);
    const fitted = await rawOf(sharp(join(photos, "one", "lyon.jpg")).resize(800, 600));
    assert.ok(meanDiff(out, fitted, 112, 0) < 4, "the fitted region is the photo resized to 800 × 600");
    const side = { left: 0, top: 0, width: 100, height: 600 };
    assert.equal(count(out, side, dark), 0, "no black bar");
    // Dimmed: the blurred sky is darker than the sky itself.
    const sky = (x: number): number => out.data[(50 * out.width + x) * 3 + 2]!;
    assert.ok(sky(20) < sky(300) - 40, `the sides are dimmed: ${sky(20)} against ${sky(300)}`);

    const grey = await sync("one", "grey", "--fit", "1024x600", "--background", "#336699");
    assert.equal(grey.code, 0, grey.stderr);
    const g = await rawOf(card("grey", "lyon.jpg"));
    const near = ([r, gr, b]: number[]): boolean => Math.abs(r! - 0x33) < 8 && Math.abs(gr! - 0x66) < 8 && Math.abs(b! - 0x99) < 8;
    assert.equal(count(g, side, near), 100 * 600, "the sides are the colour");
  });

  test("--crop smart keeps the disc that a centred crop cuts away", async () => {
    let r = await sync("wide", "centre", "--fill", "400x800");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(count(await rawOf(card("centre", "left.jpg")), { left: 0, top: 0, width: 400, height: 800 }, isRed), 0, "centred: no disc");
    r = await sync("wide", "smart", "--fill", "400x800", "--crop", "smart");
    assert.equal(r.code, 0, r.stderr);
    const smart = await rawOf(card("smart", "left.jpg"));
    assert.deepEqual([smart.width, smart.height], [400, 800]);
    const disc = redBox(smart);
    assert.ok(disc.width > 250, `smart: the disc is kept whole (${disc.width} px wide)`);
  });

  test("--caption: only the bottom-right band changes, light and dark strokes on any photo, the place from GPS or XMP", async () => {
    const plain = await sync("one", "plain", "--fit", "1024x600", "--background", "black");
    assert.equal(plain.code, 0, plain.stderr);
    const before = await rawOf(card("plain", "lyon.jpg"));
    const widths: Record<string, number> = {};
    // The shipped font is the one drawn: with no font on the system (an empty fontconfig), the same caption.
    const noFonts = join(photos, "no-fonts.conf");
    await writeFile(noFonts, `<?xml version="1.0"?>\n<fontconfig><cachedir>${photos}/fc-cache</cachedir></fontconfig>\n`);
    for (const what of ["date", "date,place", "date without system fonts"]) {
      const to = what === "date" ? "date" : what === "date,place" ? "place" : "nofonts";
      const env = to === "nofonts" ? { FONTCONFIG_FILE: noFonts } : {};
      const own = to === "nofonts" ? ["--cache", join(photos, "nofonts-cache")] : [];
      const r = await syncWith(env, "one", to, "--fit", "1024x600", "--background", "black", "--caption", what.split(" ")[0]!, ...own);
      assert.equal(r.code, 0, r.stderr);
      const after = await rawOf(card(to, "lyon.jpg"));
      // Above the band, nothing changed.
      assert.ok(
        meanDiff(after, await rawOf(sharp(before.data, { raw: { width: 1024, height: 540, channels: 3 } })), 0, 0) < 1,
        `${what}: the picture above the band is the same`,
      );
      // The band's changed pixels: right-aligned, with white text and its dark outline.
      let left = 1024;
      for (let y = 540; y < 600; y++) {
        for (let x = 0; x < 1024; x++) {
          const i = (y * 1024 + x) * 3;
          if (Math.abs(after.data[i]! - before.data[i]!) + Math.abs(after.data[i + 2]! - before.data[i + 2]!) > 60) left = Math.min(left, x);
        }
      }
      assert.ok(left < 1000, `${what}: the band changed`);
      const band = { left, top: 540, width: 1024 - left - 10, height: 60 };
      assert.ok(count(after, band, bright) > 50 && count(after, band, dark) > 50, `${what}: white text, dark outline`);
      widths[what] = 1024 - left;
    }
    assert.ok(widths["date,place"]! > widths.date! + 60, `the place makes the caption wider: ${JSON.stringify(widths)}`);
    assert.ok(Math.abs(widths["date without system fonts"]! - widths.date!) <= 2, `the same font without system fonts: ${JSON.stringify(widths)}`);
    // The photo's own XMP place, beside its date.
    const xmp = await rawOf(card("place", "zurich.jpg"));
    assert.ok(count(xmp, { left: 400, top: 560, width: 300, height: 30 }, bright) > 100, "the XMP place is written");

    // On an all-white and an all-black photo the caption has both light and dark pixels: it reads on both.
    const r = await sync("light", "light", "--fill", "800x600", "--caption", "date", "--caption-format", "%d.%m.%Y");
    assert.equal(r.code, 0, r.stderr);
    for (const name of ["white", "black"]) {
      const out = await rawOf(card("light", `${name}.jpg`));
      const band = { left: 500, top: 550, width: 290, height: 45 };
      assert.ok(count(out, band, bright) > 40 && count(out, band, dark) > 40, `${name}: light text and dark outline`);
    }
  });

  test("--pair-portraits: two portraits close in time in one file, a gap between; a second sync converts nothing", async () => {
    const r = await sync("pairs", "pairs", "--fit", "1024x600", "--pair-portraits");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^skipped b\.jpg: shown beside a\.jpg in a\.jpg \(--pair-portraits\)$/m);
    const out = await rawOf(card("pairs", "a.jpg"));
    assert.deepEqual([out.width, out.height], [1024, 600]);
    const green = ([r, g, b]: number[]): boolean => g! > 150 && r! < 80 && b! < 80;
    const blue = ([r, g, b]: number[]): boolean => b! > 180 && r! < 80 && g! < 100;
    const box = (left: number): { left: number; top: number; width: number; height: number } => ({ left, top: 250, width: 100, height: 100 });
    assert.equal(count(out, box(200), green), 100 * 100, "the first photo on the left");
    assert.equal(count(out, box(724), blue), 100 * 100, "the second on the right");
    assert.equal(count(out, { left: 510, top: 0, width: 4, height: 600 }, dark), 4 * 600, "a gap between");
    // c.jpg, a day later, and the landscape stay single.
    assert.deepEqual((await rawOf(card("pairs", "c.jpg"))).height, 600);
    assert.equal(count(await rawOf(card("pairs", "c.jpg")), box(200), blue), 0);

    const again = await sync("pairs", "pairs", "--fit", "1024x600", "--pair-portraits");
    assert.match(again.stdout, /^Photos: 0 converted, 3 from the cache\.$/m);
    const other = await sync("pairs", "pairs", "--fit", "1024x600", "--pair-portraits", "--background", "blur");
    assert.match(other.stdout, /^Photos: 3 converted .*, 0 from the cache\.$/m);
  });

  test("--pixel-aspect 16:9 on an 800 × 480 panel: the disc is squeezed by 15:16, round once stretched", async () => {
    const r = await sync("one", "aspect", "--fill", "800x480", "--pixel-aspect", "16:9");
    assert.equal(r.code, 0, r.stderr);
    const out = await rawOf(card("aspect", "lyon.jpg"));
    assert.deepEqual([out.width, out.height], [800, 480]);
    const disc = redBox(out);
    const ratio = disc.width / disc.height;
    assert.ok(Math.abs(ratio - 15 / 16) < 0.02, `width / height of the disc: ${ratio.toFixed(3)}, want 0.9375`);
  });

  test("bad picture options are usage errors that name the option", async () => {
    const cases: [string[], RegExp][] = [
      [["--fill", "800x480", "--background", "blur"], /--background fills the frame around a fitted photo: add --fit WxH/],
      [["--fit", "800x480", "--background", "mauve"], /--background is blur, black or a colour .* got "mauve"/],
      [["--fit", "800x480", "--crop", "smart"], /--crop chooses what a crop keeps: add --fill WxH/],
      [["--fit", "600x800", "--pair-portraits"], /--pair-portraits puts two portrait photos side by side on a landscape frame, and 600x800 is not one/],
      [["--fit", "800x480", "--caption", "weather"], /--caption is date, place or date,place, got "weather"/],
      [["--fit", "800x480", "--caption", "date", "--caption-format", "%s"], /--caption-format is up to 40 characters/],
      [["--fit", "800x480", "--caption-format", "%Y"], /--caption-format formats the caption's date: add --caption date\./],
      [["--fit", "800x480", "--pixel-aspect", "9:0"], /--pixel-aspect is the aspect the panel is shown at/],
      [["--background", "blur"], /--background needs a frame profile: add --fit WxH or --fill WxH\./],
    ];
    // A caption format is drawn on the photo as it is: control characters (an escape sequence, a line break, a tab,
    // C1's CSI, DEL) are refused, and the error that quotes the value does not pass them to the terminal.
    for (const format of ["%Y\x1b]0;owned\x07", "%d\n%m", "%d\t%m", "%Y\u009b2J", "%Y\x7f"]) {
      cases.push([["--fit", "800x480", "--caption", "date", "--caption-format", format], /--caption-format is up to 40 characters of text with %Y/]);
    }
    for (const [args, want] of cases) {
      const r = await sync("one", "bad", ...args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, want);
      assert.doesNotMatch(r.stderr.slice(0, -1), /[\0-\x1f\x7f-\x9f]/, `${JSON.stringify(args)}: one line, no control characters`);
      assert.equal(r.stdout, "");
    }
    // The .env's [frame] section takes them too, and its key is named.
    const cwd = await tempDir("framefi-env-");
    try {
      await writeFile(join(cwd, ".env"), "[frame]\nFIT=800x480\nCROP=smart\n");
      const args = ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--cache", cache, join(photos, "one"), "--to", "/bad"];
      const r = await framefi(args, { cwd });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /CROP in the \.env's \[frame\] section chooses what a crop keeps: add --fill WxH/);
      await writeFile(join(cwd, ".env"), "[frame]\nFIT=800x480\nCAPTION=date\nCAPTION_FORMAT=%Y\x1b[2J\n");
      const format = await framefi(args, { cwd });
      assert.equal(format.code, 2, format.stderr);
      assert.match(format.stderr, /CAPTION_FORMAT in the \.env's \[frame\] section is up to 40 characters of text/);
      assert.doesNotMatch(format.stderr, /\x1b/);
    } finally {
      await removeDir(cwd);
    }
  });
});
