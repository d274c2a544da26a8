// The --card-size flag and the card figures in bytes, recursive file count, files
// changed in the folder by another program, the default capacity, an emulated card size.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, rm, statfs, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, bin, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { MODE_FTP } from "./fixtures/contract.js";
import { DeviceHttpError } from "../../src/client/api/index.js";
import { api } from "./fixtures/device.js";

interface Card {
  total_size: number;
  used_size: number;
  free_size: number;
  file_count: number;
}
const card = async (dev: RunningDevice): Promise<Card> => (await api(dev).status()).sd_card;

/** Waits (up to a few seconds, as another program's changes may be noticed late) until `ok` holds. */
const settle = (dev: RunningDevice, ok: (c: Card) => boolean): Promise<Card> =>
  eventually(
    async () => {
      const c = await card(dev);
      return ok(c) ? c : undefined;
    },
    6_000,
    100,
  ).catch(async (e) => {
    throw new Error(`${String(e)}; last figures ${JSON.stringify(await card(dev))}`);
  });

describe("an emulated 8GiB card with files already on it", () => {
  let dev: RunningDevice;
  let folder: string;
  before(async () => {
    folder = await tempDir("framefi-card-pre-");
    await mkdir(join(folder, "a/b/c"), { recursive: true });
    await writeFile(join(folder, "top.jpg"), Buffer.alloc(1000));
    await writeFile(join(folder, "a/one.jpg"), Buffer.alloc(2000));
    await writeFile(join(folder, "a/b/c/deep.jpg"), Buffer.alloc(3000));
    await writeFile(join(folder, ".hidden"), Buffer.alloc(10));
    dev = await startDevice({ card: folder, args: ["--card-size", "8GiB"] });
  });
  after(async () => {
    await dev?.stop();
    await removeDir(folder);
  });

  test("boot figures: total is 8 GiB in bytes, files counted recursively, used + free = total", async () => {
    const c = await card(dev);
    assert.equal(c.total_size, 8 * 1024 ** 3);
    assert.equal(c.file_count, 4, "top.jpg, a/one.jpg, a/b/c/deep.jpg, .hidden (folders not counted)");
    assert.ok(c.used_size >= 6010, `used_size ${c.used_size} covers the 6010 bytes`);
    assert.ok(c.used_size < 1024 * 1024, `used_size ${c.used_size} is bytes, not blocks of the host disk`);
    assert.equal(c.used_size + c.free_size, c.total_size);
  });

  test("files written by another program are counted within a few seconds (MSC mode)", async () => {
    const c0 = await card(dev);
    await run("sh", [
      "-c",
      `mkdir -p "${folder}/ext/x/y" && head -c 50000 /dev/zero > "${folder}/ext/x/y/new.bin" && head -c 7000 /dev/zero > "${folder}/ext/b.bin"`,
    ]);
    const c1 = await settle(dev, (c) => c.file_count === c0.file_count + 2 && c.used_size >= c0.used_size + 57_000);
    assert.equal(c1.used_size + c1.free_size, c1.total_size);
  });

  test("files grown, deleted and moved by another program", async () => {
    const c0 = await card(dev);
    await run("sh", ["-c", `head -c 200000 /dev/zero >> "${folder}/top.jpg"`]);
    const c1 = await settle(dev, (c) => c.used_size >= c0.used_size + 200_000 && c.file_count === c0.file_count);
    await run("sh", ["-c", `rm -r "${folder}/ext" && mv "${folder}/a/one.jpg" "${folder}/a/b/moved.jpg"`]);
    const c2 = await settle(dev, (c) => c.file_count === c1.file_count - 2 && c.used_size <= c1.used_size - 57_000);
    assert.equal(c2.used_size + c2.free_size, c2.total_size);
  });

  test("folders made, renamed and removed by another program keep being watched correctly", async () => {
    const c0 = await card(dev);
    // Each first file, once counted, shows the device has taken in the new (or renamed) folder; the file
    // written after it can then only be counted through that folder's watch.
    await run("sh", ["-c", `mkdir -p "${folder}/new/deeper" && head -c 1000 /dev/zero > "${folder}/new/deeper/first.bin"`]);
    const c1 = await settle(dev, (c) => c.file_count === c0.file_count + 1 && c.used_size >= c0.used_size + 1000);
    await run("sh", ["-c", `head -c 4000 /dev/zero > "${folder}/new/deeper/later.bin"`]);
    const c2 = await settle(dev, (c) => c.file_count === c1.file_count + 1 && c.used_size >= c1.used_size + 4000);
    await run("sh", ["-c", `mv "${folder}/new" "${folder}/renamed" && head -c 6000 /dev/zero > "${folder}/renamed/deeper/after-rename.bin"`]);
    const c3 = await settle(dev, (c) => c.file_count === c2.file_count + 1 && c.used_size >= c2.used_size + 6000);
    await run("sh", ["-c", `head -c 3000 /dev/zero > "${folder}/renamed/deeper/later-again.bin"`]);
    const c4 = await settle(dev, (c) => c.file_count === c3.file_count + 1 && c.used_size >= c3.used_size + 3000);
    await run("sh", ["-c", `rm -r "${folder}/renamed"`]);
    const c5 = await settle(dev, (c) => c.file_count === c4.file_count - 4);
    assert.ok(c5.used_size <= c4.used_size - 14_000, `used_size ${c5.used_size} dropped by the removed folder's bytes`);
  });

  test("links leading out of the card or in circles are not followed by the count", async () => {
    const outside = await tempDir("framefi-card-outside-");
    try {
      await writeFile(join(outside, "not-on-card.jpg"), Buffer.alloc(5000));
      const c0 = await card(dev);
      await symlink(outside, join(folder, "out-link"));
      await symlink("..", join(folder, "a", "loop"));
      await writeFile(join(folder, "marker.bin"), Buffer.alloc(100));
      const c1 = await settle(dev, (c) => c.file_count >= c0.file_count + 1);
      assert.equal(c1.file_count, c0.file_count + 1, "only marker.bin is new; the linked folders add nothing");
      assert.ok(c1.used_size < c0.used_size + 5000, "bytes behind the outward link are not the card's");
    } finally {
      await rm(join(folder, "out-link"), { force: true });
      await rm(join(folder, "a", "loop"), { force: true });
      await removeDir(outside);
    }
  });
});

describe("a card already fuller than --card-size", () => {
  test("free_size is 0, never negative, and uploads get 507", async (t) => {
    const folder = await tempDir("framefi-card-full-");
    await writeFile(join(folder, "big.bin"), Buffer.alloc(2 * 1024 * 1024));
    const dev = await startDevice({ card: folder, args: ["--card-size", "1MiB"] });
    t.after(async () => {
      await dev.stop();
      await removeDir(folder);
    });
    const c = await card(dev);
    assert.equal(c.total_size, 1024 * 1024);
    assert.equal(c.free_size, 0);
    assert.ok(c.used_size >= 2 * 1024 * 1024);
    await api(dev).setMode("ftp");
    await eventually(async () => (await api(dev).status()).mode === MODE_FTP || undefined, 10_000);
    await assert.rejects(api(dev).upload({ name: "one-more.jpg", data: Buffer.from("x") }), (e: unknown) => e instanceof DeviceHttpError && e.status === 507);
  });
});

describe("the default capacity is the folder's filesystem", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice();
  });
  after(async () => {
    await dev?.stop();
  });

  test("total_size is the filesystem's size in bytes; free near the filesystem's free bytes", async () => {
    const fs = await statfs(dev.card);
    const c = await card(dev);
    assert.equal(c.total_size, fs.blocks * fs.bsize);
    const slack = 1024 ** 3; // other programs write to this disk meanwhile
    assert.ok(
      c.free_size >= Math.min(fs.bavail, fs.bfree) * fs.bsize - slack && c.free_size <= fs.bfree * fs.bsize + slack,
      `free_size ${c.free_size} vs bavail ${fs.bavail * fs.bsize} / bfree ${fs.bfree * fs.bsize}`,
    );
    assert.equal(c.used_size + c.free_size, c.total_size);
    assert.equal(c.file_count, 0);
  });
});

describe("--card-size forms", () => {
  const forms: Array<[string, number]> = [
    ["64MiB", 64 * 1024 ** 2],
    ["1048576", 1048576],
  ];
  for (const [form, bytes] of forms) {
    test(`--card-size ${form} → total_size ${bytes}`, async (t) => {
      const dev = await startDevice({ args: ["--card-size", form] });
      t.after(() => dev.stop());
      const c = await card(dev);
      assert.equal(c.total_size, bytes);
      assert.equal(c.free_size, bytes - c.used_size);
    });
  }

  test("a nonsense --card-size is refused with a clear error", async () => {
    const dir = await tempDir("framefi-bad-size-");
    const r = await run(bin("framefi-device"), ["--card-size", "lots", "--port", "0", "--card", join(dir, "card"), "--state", join(dir, "state")], {
      timeoutMs: 10_000,
    });
    await removeDir(dir);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /lots/, "the error names the bad value");
    assert.match(r.stderr, /size/i);
  });
});
