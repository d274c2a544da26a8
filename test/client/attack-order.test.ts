// Attacks on --order and --max-per-folder through bin/framefi syncing to a running bin/framefi-device: card names
// read back must be attributed to the folder they belong to, so that a sync sends only what changed.
import { describe, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";
import { add, names, summary } from "./fixtures/order.js";
import { collectionNames } from "../../src/device/gadget/usb.js";

async function setup(t: TestContext) {
  const dev = await startDevice();
  t.after(() => dev.stop());
  const dir = await tempDir("framefi-attack-order-");
  t.after(() => removeDir(dir));
  const sync = (...args: string[]) => framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--delete", ...args]);
  return { dev, dir, sync };
}

describe("attacks on --order and --max-per-folder", { concurrency: 2 }, () => {
  test("a source folder named like a subfolder (2023) keeps its numbers with --max-per-folder", async (t) => {
    const { dev, dir, sync } = await setup(t);
    await add(dir, { "2023/a.jpg": 10, "2023/b.jpg": 20, "2023/c.jpg": 30 });
    let r = await sync("--order", "date", "--max-per-folder", "50");
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await names(dev.card), ["2023/00001000-a.jpg", "2023/00002000-b.jpg", "2023/00003000-c.jpg"]);
    await add(dir, { "2023/first.jpg": 1 });
    r = await sync("--order", "date", "--max-per-folder", "50");
    assert.equal(r.code, 0, r.stderr);
    assert.match(summary(r.stdout), /^Sync done: 1 uploaded .* 0 deleted, .* 3 unchanged\./);
    assert.deepEqual(await names(dev.card), ["2023/00000500-first.jpg", "2023/00001000-a.jpg", "2023/00002000-b.jpg", "2023/00003000-c.jpg"]);
  });

  test("a photo named like a subfolder (002) is spread with the others; no photo leaves the card for it", async (t) => {
    const { dev, dir, sync } = await setup(t);
    await add(dir, { "a.jpg": 1, "b.jpg": 2, "c.jpg": 3, "d.jpg": 4 });
    let r = await sync("--order", "name", "--max-per-folder", "2");
    assert.equal(r.code, 0, r.stderr);
    await add(dir, { "002": 0 });
    r = await sync("--order", "name", "--max-per-folder", "2");
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await names(dev.card), ["001/00000500-002", "001/00001000-a.jpg", "002/00002000-b.jpg", "002/00003000-c.jpg", "003/00004000-d.jpg"]);
  });
});

describe("attacks on the .env's collections", () => {
  test("a day that does not exist (FROM=2023-02-31) is a usage error, not March 3rd", async (t) => {
    const cwd = await tempDir("framefi-attack-env-");
    t.after(() => removeDir(cwd));
    await writeFile(join(cwd, ".env"), `[collection winter]\nSOURCE=${cwd}\nFROM=2023-02-31\n`);
    const r = await framefi(["--host", "127.0.0.1:1", "collection", "use", "winter"], { cwd });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /\[collection winter\]: FROM is a day as 2026-12-24, got "2023-02-31"/);
  });
});

// The collections' folder (framefi-device --usb-gadget --collections): what the MQTT select offers and takes. The
// swap itself needs the gadget (test/gadget); the listing is what keeps a select inside the folder.
describe("attacks on --collections", () => {
  test("a symbolic link or a folder named NAME.img is not a collection", async (t) => {
    const dir = await tempDir("framefi-attack-collections-");
    t.after(() => removeDir(dir));
    const outside = await tempDir("framefi-attack-outside-");
    t.after(() => removeDir(outside));
    await writeFile(join(outside, "disk.img"), "not ours");
    await writeFile(join(dir, "summer.img"), "");
    await writeFile(join(dir, "summer.img.img"), "");
    await writeFile(join(dir, "-x.img"), "");
    await symlink(join(outside, "disk.img"), join(dir, "escape.img"));
    await symlink("/dev/null", join(dir, "null.img"));
    await mkdir(join(dir, "folder.img"));
    assert.deepEqual(await collectionNames(dir), ["summer"]);
  });
});
