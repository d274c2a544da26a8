// `npm start` as a user runs it: a second start while the first runs names the taken port and prints no banner;
// `kill -INT` to a backgrounded `npm start` (npm forwards it to the launcher) during a sync lets the sync finish
// and put the device back in USB MSC mode before everything stops.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { eventually, freePort, removeDir, repoRoot, run, start, tempDir, type RunningProgram } from "../helpers.js";

describe("npm start, started twice and interrupted during a sync", () => {
  let demo: string;
  let npm: RunningProgram;
  let env: NodeJS.ProcessEnv;
  let devicePort: number;
  let hooksPort: number;
  const PHOTOS = 120;

  before(async () => {
    demo = await tempDir("framefi-demo-");
    // An empty card (the launcher then adds no sample pictures): --delete would otherwise have the sync remove all of
    // the card's photos, which it holds back (--max-delete).
    await mkdir(join(demo, "sdcard"), { recursive: true });
    // Enough photos that the sync is still running when the test interrupts it.
    await mkdir(join(demo, "photos"), { recursive: true });
    // Real JPEGs of noise (the example hooks decode and resize them), each different, none in any cache.
    for (let i = 0; i < PHOTOS; i++) {
      const pixels = randomBytes(640 * 480 * 3);
      await sharp(pixels, { raw: { width: 640, height: 480, channels: 3 } })
        .jpeg()
        .toFile(join(demo, "photos", `p${String(i).padStart(3, "0")}.jpg`));
    }
    [devicePort, hooksPort] = [await freePort(), await freePort()];
    env = {
      ...process.env,
      FRAMEFI_DEMO_DIR: demo,
      FRAMEFI_DEVICE_PORT: String(devicePort),
      FRAMEFI_HOOKS_PORT: String(hooksPort),
      FRAMEFI_FTP_PORT: String(await freePort()),
      FRAMEFI_SETUP_PORT: String(await freePort()),
      XDG_CACHE_HOME: join(demo, "cache"),
    };
    // --ignore-scripts skips only `prestart` (the compile the suite has already done); `start` runs as for a user.
    npm = start("npm", ["start", "--ignore-scripts", "--silent"], { env });
    await npm.waitFor(/Ctrl-C stops both\./, 30_000);
  });
  after(async () => {
    await npm?.stop(40_000);
    await removeDir(demo);
  });

  test("a second start says which port is taken and prints no banner", async () => {
    const second = await run(process.execPath, [join(repoRoot, "dist", "src", "start.js")], { env });
    assert.equal(second.code, 1);
    assert.equal(second.stdout, "");
    assert.equal(
      second.stderr,
      `framefi start: port ${devicePort} (the device API) is already in use; is FrameFi already running? Stop it, or set FRAMEFI_DEVICE_PORT to a free port.\n`,
    );
    assert.equal((await fetch(`http://127.0.0.1:${devicePort}/`)).status, 200, "the first instance still runs");
  });

  test("two sync requests at once: the second waits its turn (max-concurrency 1), both succeed", async () => {
    const url = `http://127.0.0.1:${hooksPort}/hooks/sync-frame?secret=frame-demo-secret`;
    const [first, second] = await Promise.all([1, 2].map(async () => (await fetch(url, { method: "POST" })).text()));
    const outputs = [first!, second!].sort();
    assert.match(outputs.join("\n"), new RegExp(`Sync done: ${PHOTOS} uploaded`), outputs.join("\n"));
    for (const out of outputs) assert.match(out, /Sync done: .*The device is in USB MSC mode\.\n$/, out);
    // Empty the card again (it is a folder; the device sees the change) for the next test.
    for (const name of await readdir(join(demo, "sdcard"))) if (name.startsWith("p")) await rm(join(demo, "sdcard", name));
  });

  test("kill -INT to npm during a sync: the sync finishes, the device goes back to USB MSC mode, then all stops", async () => {
    const curl = start("curl", ["-sN", "-X", "POST", `http://127.0.0.1:${hooksPort}/hooks/sync-frame?secret=frame-demo-secret`]);
    // The sync is under way: the device is in FTP mode and some photos have arrived.
    await eventually(async () => (await readdir(join(demo, "sdcard"))).some((n) => n.startsWith("p")), 30_000);
    const doneBefore = /Sync done/.test(curl.stdout());
    npm.child.kill("SIGINT");
    assert.equal(await npm.exited, 0, npm.stdout() + npm.stderr());
    assert.equal(await curl.exited, 0);
    assert.equal(doneBefore, false, "the signal came while the sync ran");
    assert.match(curl.stdout(), new RegExp(`Sync done: ${PHOTOS} uploaded .*The device is in USB MSC mode\\.`));
    assert.match(npm.stdout(), /Stopping\.\.\. \(a running sync may take up to 30 s to finish; Ctrl-C again to stop at once\)/);
    assert.match(npm.stdout(), /Stopped\.\n$/);
    const card = (await readdir(join(demo, "sdcard"))).filter((n) => n.startsWith("p"));
    assert.equal(card.length, PHOTOS);
    await assert.rejects(fetch(`http://127.0.0.1:${devicePort}/`));
  });
});
