// `framefi sync --delete --trash DAYS` against a running bin/framefi-device: what --delete removes lands in
// .trash/<when>/ on the card instead, which later syncs neither mirror nor delete; a trash folder older than DAYS
// is emptied by the next sync with --trash; on a card less than a tenth free they are deleted instead. A source's own
// .trash at its top is left out. On a terminal, --delete asks first.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi, framefiOnTerminal } from "./fixtures/cli.js";

describe("framefi sync --trash", () => {
  let dev: RunningDevice;
  let dir: string;
  before(async () => {
    [dev, dir] = await Promise.all([startDevice(), tempDir("framefi-trash-")]);
  });
  after(async () => {
    await dev?.stop();
    await removeDir(dir);
  });
  const sync = (...args: string[]) => framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--to", "/t", ...args]);

  test("removed files are kept in .trash for the days given, then emptied", async () => {
    for (const name of ["a.jpg", "b.jpg", "c.jpg"]) await writeFile(join(dir, name), `photo ${name}`);
    assert.equal((await sync()).code, 0);
    await rm(join(dir, "c.jpg"));
    const moved = await sync("--delete", "--trash", "30");
    assert.equal(moved.code, 0, moved.stderr);
    assert.match(moved.stdout, /^deleted c\.jpg$/m);
    const [stamp, ...more] = await readdir(join(dev.card, "t", ".trash"));
    assert.match(stamp!, /^\d{8}T\d{6}$/);
    assert.deepEqual(more, []);
    assert.equal(await readFile(join(dev.card, "t", ".trash", stamp!, "c.jpg"), "utf8"), "photo c.jpg");
    assert.deepEqual((await readdir(join(dev.card, "t"))).sort(), [".trash", "a.jpg", "b.jpg"]);

    const again = await sync("--delete");
    assert.match(again.stdout, /Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 2 unchanged\./, "the trash is not the source's to mirror");

    await rename(join(dev.card, "t", ".trash", stamp!), join(dev.card, "t", ".trash", "20000101T000000"));
    const emptied = await sync("--delete", "--trash", "30");
    assert.equal(emptied.code, 0, emptied.stderr);
    assert.match(emptied.stdout + emptied.stderr, /Emptied 1 trash folder older than 30 days\./);
    assert.deepEqual(await readdir(join(dev.card, "t", ".trash")), []);
    assert.equal((await sync("--trash", "0")).code, 2);
  });

  test("a source's own .trash is not mirrored: it never reaches the card, and the next sync still succeeds", async () => {
    const src = await tempDir("framefi-trash-source-");
    try {
      await writeFile(join(src, "kept.jpg"), "photo kept");
      await mkdir(join(src, ".trash", "20240101T000000"), { recursive: true });
      await writeFile(join(src, ".trash", "20240101T000000", "old.jpg"), "photo old");
      const run = () => framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), src, "--to", "/s", "--delete", "--trash", "30"]);
      const first = await run();
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(await readdir(join(dev.card, "s")), ["kept.jpg"]);
      await writeFile(join(src, "new.jpg"), "photo new");
      const second = await run();
      assert.equal(second.code, 0, second.stderr);
      assert.deepEqual((await readdir(join(dev.card, "s"))).sort(), ["kept.jpg", "new.jpg"]);
    } finally {
      await removeDir(src);
    }
  });

  test("on a terminal --delete lists what it would remove and asks; no keeps it all", async () => {
    await rm(join(dir, "b.jpg"));
    const args = ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--to", "/t", "--delete"];
    const r = await framefiOnTerminal(args, [["Delete 1 file from the card? [y/N]", "n\r"]]);
    assert.equal(r.code, 1, r.transcript);
    assert.match(r.transcript, /would delete b\.jpg/);
    assert.match(r.transcript, /--delete: not deleted: declined at the prompt/);
    assert.equal(await readFile(join(dev.card, "t", "b.jpg"), "utf8"), "photo b.jpg");
  });
});

describe("framefi sync --trash on a card less than a tenth free", () => {
  let dev: RunningDevice;
  let dir: string;
  before(async () => {
    [dev, dir] = await Promise.all([startDevice({ args: ["--card-size", "1000000"] }), tempDir("framefi-trash-full-")]);
  });
  after(async () => {
    await dev?.stop();
    await removeDir(dir);
  });

  test("removed files are deleted, not kept, and the run says so", async () => {
    // 920 000 of the card's 1 000 000 bytes: 80 000 free, under a tenth.
    for (const name of ["a.jpg", "b.jpg", "c.jpg", "d.jpg"]) await writeFile(join(dir, name), Buffer.alloc(230_000, name));
    const sync = (...args: string[]) => framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--to", "/f", ...args]);
    const first = await sync();
    assert.equal(first.code, 0, first.stderr);
    await rm(join(dir, "d.jpg"));
    const r = await sync("--delete", "--trash", "30");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^The card has less than a tenth free: deleting, not keeping in \.trash\.$/m);
    assert.match(r.stdout, /^deleted d\.jpg$/m);
    assert.deepEqual((await readdir(join(dev.card, "f"))).sort(), ["a.jpg", "b.jpg", "c.jpg"], "no .trash, d.jpg gone");
  });
});
