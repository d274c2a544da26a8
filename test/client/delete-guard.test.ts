// `framefi sync --delete` held back by its guard (plan.ts guardDeletes), through the CLI against a running
// bin/framefi-device: over --max-delete N or N% nothing is deleted, the run says why and exits 1; at the limit, or
// with --force, the files go. A folder or a WebDAV share that lists no file any more deletes nothing, even with
// --force.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";
import { startWebdav } from "./fixtures/shares.js";

const photo = (i: number): string => `p${i}.jpg`;

describe("framefi sync --delete, held back by its guard", () => {
  let dev: RunningDevice;
  let cache: string;
  const dirs: string[] = [];
  before(async () => {
    [dev, cache] = await Promise.all([startDevice(), tempDir("framefi-guard-cache-")]);
  });
  after(async () => {
    await dev?.stop();
    await Promise.all([cache, ...dirs].map(removeDir));
  });
  const sync = (source: string, to: string, ...args: string[]) =>
    framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), source, "--to", to, "--cache", cache, ...args]);
  const onCard = async (to: string): Promise<string[]> => (await readdir(join(dev.card, to))).sort();
  /** A folder of `count` photos, mirrored to the card's `to`. */
  const synced = async (to: string, count: number): Promise<string> => {
    const dir = await tempDir("framefi-guard-");
    dirs.push(dir);
    for (let i = 0; i < count; i++) await writeFile(join(dir, photo(i)), `photo ${i}`);
    const first = await sync(dir, to);
    assert.equal(first.code, 0, first.stderr);
    return dir;
  };
  const removeLocal = async (dir: string, ...which: number[]): Promise<void> => {
    for (const i of which) await rm(join(dir, photo(i)));
  };

  test("--max-delete N: over it nothing is deleted and the run says why; at it, or with --force, the files go", async () => {
    const dir = await synced("n", 10);
    await removeLocal(dir, 0, 1, 2);
    const held = await sync(dir, "/n", "--delete", "--max-delete", "2");
    assert.equal(held.code, 1, held.stderr);
    assert.match(
      held.stderr,
      /^failed --delete: not deleted: --delete would remove 3 of the card's 10 files, more than --max-delete 2; check the source, then rerun with --force$/m,
    );
    assert.doesNotMatch(held.stdout, /^deleted /m);
    assert.match(held.stdout, /0 deleted/);
    assert.equal((await onCard("n")).length, 10, "nothing deleted");

    const atLimit = await sync(dir, "/n", "--delete", "--max-delete", "3");
    assert.equal(atLimit.code, 0, atLimit.stderr);
    assert.match(atLimit.stdout, /Sync done: 0 uploaded \(0 B\), 3 deleted, 0 folders created, 7 unchanged\./);
    assert.deepEqual(await onCard("n"), [3, 4, 5, 6, 7, 8, 9].map(photo).sort());

    await removeLocal(dir, 3, 4, 5);
    const forced = await sync(dir, "/n", "--delete", "--max-delete", "2", "--force");
    assert.equal(forced.code, 0, forced.stderr);
    for (const i of [3, 4, 5]) assert.match(forced.stdout, new RegExp(`^deleted ${photo(i).replace(".", "\\.")}$`, "m"));
    assert.deepEqual(await onCard("n"), [6, 7, 8, 9].map(photo).sort());
  });

  test("--max-delete N% (and the default, 50%): a share of the card's files; --force goes past it", async () => {
    const dir = await synced("pc", 10);
    await removeLocal(dir, 0, 1, 2, 3, 4, 5);
    const byDefault = await sync(dir, "/pc", "--delete");
    assert.equal(byDefault.code, 1, byDefault.stderr);
    assert.match(byDefault.stderr, /would remove 6 of the card's 10 files, more than --max-delete 50%; check the source, then rerun with --force$/m);
    const lower = await sync(dir, "/pc", "--delete", "--max-delete", "30%");
    assert.equal(lower.code, 1, lower.stderr);
    assert.match(lower.stderr, /would remove 6 of the card's 10 files, more than --max-delete 30%/);
    assert.equal((await onCard("pc")).length, 10, "nothing deleted");

    const higher = await sync(dir, "/pc", "--delete", "--max-delete", "60%");
    assert.equal(higher.code, 0, higher.stderr);
    assert.match(higher.stdout, /6 deleted/);
    assert.deepEqual(await onCard("pc"), [6, 7, 8, 9].map(photo).sort());

    await removeLocal(dir, 6, 7, 8);
    const forced = await sync(dir, "/pc", "--delete", "--max-delete", "10%", "--force");
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(await onCard("pc"), [photo(9)]);
  });

  test("a folder emptied of files deletes nothing, even with --force, and says so", async () => {
    const dir = await synced("empty", 4);
    await mkdir(join(dir, "album"));
    assert.equal((await sync(dir, "/empty")).code, 0);
    await removeLocal(dir, 0, 1, 2, 3);
    for (const args of [["--delete"], ["--delete", "--force", "--max-delete", "100%"]]) {
      const r = await sync(dir, "/empty", ...args);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^failed --delete: not deleted: the source lists no files, which looks like a failure rather than an empty album$/m);
      assert.match(r.stdout, /0 deleted/);
    }
    assert.deepEqual(await onCard("empty"), ["album", ...[0, 1, 2, 3].map(photo)].sort());
  });

  test("a WebDAV share emptied of files deletes nothing, even with --force, and says so", async () => {
    const dir = await tempDir("framefi-guard-share-");
    dirs.push(dir);
    for (let i = 0; i < 3; i++) await writeFile(join(dir, photo(i)), `photo ${i}`);
    const share = await startWebdav(dir);
    try {
      const fromShare = (...args: string[]) =>
        framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), share.source, "--to", "/share", "--cache", cache, ...args], {
          env: share.env,
          timeoutMs: 120_000,
        });
      const first = await fromShare("--delete");
      assert.equal(first.code, 0, first.stdout + first.stderr);
      assert.deepEqual(await onCard("share"), [0, 1, 2].map(photo));
      await removeLocal(dir, 0, 1, 2);
      const emptied = await fromShare("--delete", "--force");
      assert.equal(emptied.code, 1, emptied.stdout + emptied.stderr);
      assert.match(emptied.stderr, /^failed --delete: not deleted: the source lists no files, which looks like a failure rather than an empty album$/m);
      assert.match(emptied.stdout, /0 deleted/);
      assert.deepEqual(await onCard("share"), [0, 1, 2].map(photo), "nothing deleted");
      assert.ok(!(emptied.stdout + emptied.stderr).includes(share.password));
    } finally {
      await share.stop();
    }
  });
});
