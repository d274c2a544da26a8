// The panel during FTP transfers, in a real Chromium: the LED blinks while a file is being written (as the
// firmware's does) and a progress line counts the files and bytes FTP mode has written and names the file being
// written; during a real `framefi sync` the count rises live. /panel/display.png is the display as a PNG.
// FRAMEFI_PANEL_SCREENSHOT=path saves a screenshot of the page mid-transfer (the README's docs/panel.png).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { bin, removeDir, run, start, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { chromiumMissing, launchChromium, untilShown, type Browser } from "./browser.js";

const skip = chromiumMissing();
if (skip) console.log(`# ${skip}`);

interface Seen {
  progress: string;
  blinking: string;
}

const seen = (page: Page): Promise<Seen> =>
  page.evaluate(() => ({
    progress: document.getElementById("progress")?.textContent ?? "",
    blinking: document.getElementById("led")?.dataset.blinking ?? "",
  }));

const until = (page: Page, ok: (s: Seen) => boolean, timeoutMs = 15_000): Promise<Seen> => untilShown(() => seen(page), ok, timeoutMs);

describe("the panel shows FTP transfers", { skip }, () => {
  let dev: RunningDevice;
  let browser: Browser;
  let page: Page;
  let files: string;

  before(async () => {
    dev = await startDevice({ args: ["--card-size", "8GiB"] });
    files = await tempDir("framefi-progress-");
    browser = await launchChromium();
    page = await browser.context.newPage();
    await page.goto(`${dev.url}/panel/`);
  });
  after(async () => {
    await browser?.close();
    await dev?.stop();
    await removeDir(files);
  });

  test("a slow upload: the LED blinks and the line names the file; afterwards it counts it", async () => {
    assert.equal((await seen(page)).progress, "", "no progress line in USB MSC mode");
    await fetch(`${dev.url}/mode/ftp`, { method: "POST" });
    await until(page, (s) => s.progress === "FTP: 0 files written (0 B)");
    const big = join(files, "slow.jpg");
    await writeFile(big, randomBytes(300 * 1024));
    // curl sends at 100 kB/s: the transfer lasts about 3 s, long enough to look at.
    const upload = start("curl", ["-sS", "--limit-rate", "100k", "-T", big, `ftp://user:password@127.0.0.1:${dev.ftpPort}/`]);
    const during = await until(page, (s) => s.blinking === "true" && /writing \/slow\.jpg$/.test(s.progress));
    assert.equal(during.progress, "FTP: 0 files written (0 B) · writing /slow.jpg");
    assert.equal(await page.locator("#led").evaluate((el) => getComputedStyle(el).animationName), "blink");
    if (process.env.FRAMEFI_PANEL_SCREENSHOT) await page.screenshot({ path: process.env.FRAMEFI_PANEL_SCREENSHOT, animations: "disabled" });
    assert.equal(await upload.exited, 0, upload.stderr());
    const afterwards = await until(page, (s) => s.blinking === "false" && s.progress.startsWith("FTP: 1 file written"));
    assert.equal(afterwards.progress, "FTP: 1 file written (300.00 KB)");
  });

  test("a real framefi sync: the count rises live to every file", async () => {
    const photos = join(files, "photos");
    const count = 40;
    await mkdir(photos);
    // The panel draws at most once per turn of the device's event loop: a 64 KB file can start and end within one
    // turn and never show as being written. One of 16 MB cannot: it arrives over many turns.
    for (let i = 0; i < count; i++) await writeFile(join(photos, `p${String(i).padStart(2, "0")}.jpg`), randomBytes(i === 0 ? 16 * 1024 * 1024 : 64 * 1024));
    // Every progress line the page shows, as it shows it.
    await page.evaluate(() => {
      const lines: string[] = [];
      (window as unknown as { lines: string[] }).lines = lines;
      new MutationObserver(() => lines.push(document.getElementById("progress")!.textContent ?? "")).observe(document.getElementById("progress")!, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    const r = await run(bin("framefi"), ["--host", `127.0.0.1:${dev.port}`, "sync", photos, "--to", "/photos", "--stay", "--parallel", "1"]);
    assert.equal(r.code, 0, r.stderr);
    await until(page, (s) => s.progress.startsWith(`FTP: ${count + 1} files written`));
    const lines = await page.evaluate(() => (window as unknown as { lines: string[] }).lines);
    const counts = lines.map((l) => Number(/^FTP: (\d+) file/.exec(l)?.[1] ?? NaN)).filter((n) => !Number.isNaN(n));
    assert.ok(new Set(counts).size > 2, `the count rose step by step: ${JSON.stringify(counts)}`);
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      "it never went back",
    );
    assert.ok(
      lines.some((l) => /· writing \/photos\/p\d\d\.jpg$/.test(l)),
      "the file being written was named",
    );
  });

  test("/panel/display.png is the display as a PNG, scaled on request", async () => {
    const one = await fetch(`${dev.url}/panel/display.png`);
    assert.equal(one.status, 200);
    assert.equal(one.headers.get("content-type"), "image/png");
    const png = Buffer.from(await one.arrayBuffer());
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [160, 80]);
    const three = Buffer.from(await (await fetch(`${dev.url}/panel/display.png?scale=3`)).arrayBuffer());
    assert.deepEqual([three.readUInt32BE(16), three.readUInt32BE(20)], [480, 240]);
    // Chromium decodes it: the header bar's colour at the top, the background below.
    const colours = await page.evaluate(async (url) => {
      const img = new Image();
      img.src = url;
      await img.decode();
      const canvas = document.createElement("canvas");
      canvas.width = img.width;
      canvas.height = img.height;
      const g = canvas.getContext("2d")!;
      g.drawImage(img, 0, 0);
      const hex = (x: number, y: number): string => [...g.getImageData(x, y, 1, 1).data.slice(0, 3)].map((v) => v.toString(16).padStart(2, "0")).join("");
      return { size: [img.width, img.height], header: hex(1, 1), body: hex(1, 40) };
    }, `${dev.url}/panel/display.png`);
    assert.deepEqual(colours, { size: [160, 80], header: "a6e3a1", body: "1e1e2e" });
    assert.equal((await fetch(`${dev.url}/panel/display.png?scale=0`)).status, 400);
  });
});
