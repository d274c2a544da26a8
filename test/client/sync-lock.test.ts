// Two `framefi sync` runs to one device at the same time (a sync-frame and a frame-push hook, say): the second
// waits for the first instead of switching the device under it; both finish, the device ends in USB MSC mode.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, removeDir, start, startDevice, tempDir, type RunningDevice } from "../helpers.js";

let dev: RunningDevice;
let dir: string;
before(async () => {
  dev = await startDevice();
  dir = await tempDir("framefi-lock-");
  for (const album of ["one", "two"]) {
    await mkdir(join(dir, album));
    for (let i = 0; i < 30; i++) await writeFile(join(dir, album, `${album}-${i}.jpg`), randomBytes(100_000));
  }
});
after(async () => {
  await dev?.stop();
  await removeDir(dir);
});

test("the second sync waits its turn; both succeed", async () => {
  const args = (album: string): string[] => ["--host", `127.0.0.1:${dev.port}`, "sync", join(dir, album), "--to", `/${album}`, "--parallel", "1"];
  const first = start(bin("framefi"), args("one"), { cwd: dir });
  await first.waitFor(/^uploaded one-\d+\.jpg/m, 30_000);
  // The first sync is mid-way and holds the device: pause it while the second starts, so the overlap is certain.
  first.child.kill("SIGSTOP");
  const second = start(bin("framefi"), args("two"), { cwd: dir });
  try {
    await second.waitFor(new RegExp(`Waiting for another framefi sync to http://127\\.0\\.0\\.1:${dev.port} to finish…`), 30_000);
  } finally {
    first.child.kill("SIGCONT");
  }
  for (const p of [first, second]) {
    assert.equal(await p.exited, 0, p.stderr());
    assert.match(p.stdout(), /Sync done: 30 uploaded .*The device is in USB MSC mode\./);
  }
  assert.equal((await readdir(join(dev.card, "one"))).length, 30);
  assert.equal((await readdir(join(dev.card, "two"))).length, 30);
});
