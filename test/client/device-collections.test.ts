// `framefi collection use` and `framefi sync` against a device with collections (bin/framefi-device --collections,
// a folder each), through bin/framefi: a collection the device has is switched to, no photo copied; a sync writes
// into the collection the frame has only when the user names it, so no set's photos are replaced unasked.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";
import { get } from "../device/fixtures/http.js";

describe("a device with collections", () => {
  let dir: string;
  let cwd: string;
  let photos: string;
  let dev: RunningDevice;
  let env: NodeJS.ProcessEnv;
  const current = async (): Promise<string | null> => (JSON.parse((await get(dev.url, "/collections")).text) as { current: string | null }).current;
  const tree = async (): Promise<string[][]> => [await readdir(join(dir, "winter")), await readdir(join(dir, "summer"))].map((l) => l.sort());

  before(async () => {
    dir = await tempDir("framefi-client-col-");
    cwd = await tempDir("framefi-client-col-cwd-");
    photos = await tempDir("framefi-client-col-photos-");
    await mkdir(join(dir, "winter"));
    await mkdir(join(dir, "summer"));
    await writeFile(join(dir, "winter", "snow.jpg"), randomBytes(300));
    await writeFile(join(dir, "summer", "beach.jpg"), randomBytes(300));
    await writeFile(join(photos, "new.jpg"), randomBytes(400));
    await writeFile(join(cwd, ".env"), `[collection autumn]\nSOURCE=${photos}\n`);
    dev = await startDevice({ card: join(dir, "winter"), args: ["--collections", dir] });
    env = { FRAMEFI_DEVICE: `127.0.0.1:${dev.port}`, FRAMEFI_FTP_PORT: String(dev.ftpPort), XDG_CACHE_HOME: join(cwd, "cache") };
  });
  after(async () => {
    await dev?.stop();
    for (const d of [dir, cwd, photos]) await removeDir(d);
  });

  test("collection use NAME switches the device to its collection NAME, without the .env knowing it, and copies nothing", async () => {
    const before = await tree();
    const r = await framefi(["collection", "use", "summer"], { cwd, env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "The frame now has the collection summer.");
    assert.equal(await current(), "summer");
    assert.deepEqual(await tree(), before);
    const json = await framefi(["--json", "collection", "use", "winter"], { cwd, env });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { status: "success", message: "The frame now has the collection winter.", current: "winter" });
  });

  test("collection use of a set the device lacks does not write it over the collection the frame has", async () => {
    const before = await tree();
    const r = await framefi(["collection", "use", "autumn"], { cwd, env });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr.trim(),
      "framefi: Nothing synced: the device's collections are summer, winter and its frame shows winter; [collection autumn] written there would replace winter's photos. Add autumn to the device's --collections folder, then run this again to switch to it.",
    );
    const unknown = await framefi(["collection", "use", "spring"], { cwd, env });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /The \.env has no \[collection spring\] section; use one of: autumn\./);
    assert.deepEqual(await tree(), before);
    assert.equal(await current(), "winter");
  });

  test("a plain sync is refused while the frame shows a collection, unless --collection names that one", async () => {
    const before = await tree();
    const plain = await framefi(["sync", photos], { cwd, env });
    assert.equal(plain.code, 2, plain.stderr);
    assert.match(plain.stderr, /Nothing synced: the device's frame shows the collection winter, and this sync would write into it; add --collection winter/);
    const other = await framefi(["sync", photos, "--collection", "summer"], { cwd, env });
    assert.equal(other.code, 2, other.stderr);
    assert.match(
      other.stderr,
      /Nothing synced: --collection summer, but the device's frame shows the collection winter; switch first \(framefi collection use summer\)/,
    );
    const bad = await framefi(["sync", photos, "--collection", "../x"], { cwd, env });
    assert.equal(bad.code, 2);
    assert.deepEqual(await tree(), before);

    const named = await framefi(["sync", photos, "--collection", "winter"], { cwd, env });
    assert.equal(named.code, 0, named.stderr);
    assert.deepEqual(await readFile(join(dir, "winter", "new.jpg")), await readFile(join(photos, "new.jpg")));
    assert.deepEqual((await tree())[1], before[1], "summer untouched");
  });
});

test("--collection against a device without collections is refused; a plain sync works as before", async (t) => {
  const dev = await startDevice();
  t.after(() => dev.stop());
  const photos = await tempDir("framefi-client-col-photos-");
  t.after(() => removeDir(photos));
  await writeFile(join(photos, "a.jpg"), randomBytes(100));
  const env = { FRAMEFI_DEVICE: `127.0.0.1:${dev.port}`, FRAMEFI_FTP_PORT: String(dev.ftpPort), XDG_CACHE_HOME: join(photos, ".cache") };
  const r = await framefi(["sync", photos, "--collection", "winter"], { cwd: photos, env });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--collection winter, but the device's frame shows no collection \(the device has none\)/);
  assert.deepEqual(await readdir(dev.card), []);
  const plain = await framefi(["sync", photos], { cwd: photos, env });
  assert.equal(plain.code, 0, plain.stderr);
  assert.deepEqual(await readdir(dev.card), ["a.jpg"]);
});
