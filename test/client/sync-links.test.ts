// `framefi sync` does not follow symbolic links that leave the photo folder (a private key
// linked in would be uploaded) unless --follow-links is given, and says what it skipped. Links inside the folder
// are followed as before.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";

let dev: RunningDevice;
let local: string;
let secrets: string;
before(async () => {
  dev = await startDevice();
  local = await tempDir("framefi-photos-");
  secrets = await tempDir("framefi-secrets-");
  await writeFile(join(secrets, "id_ed25519"), "PRIVATE KEY");
  await mkdir(join(secrets, "more"));
  await writeFile(join(secrets, "more", "passwords.txt"), "hunter2");
  await writeFile(join(local, "a.jpg"), "photo");
  await mkdir(join(local, "album"));
  await writeFile(join(local, "album", "b.jpg"), "photo b");
  await symlink(join(secrets, "id_ed25519"), join(local, "key.jpg"));
  await symlink(join(secrets, "more"), join(local, "linked-folder"));
  await symlink(join(local, "a.jpg"), join(local, "best.jpg"));
});
after(async () => {
  await dev?.stop();
  await removeDir(local);
  await removeDir(secrets);
});

const sync = (...args: string[]): ReturnType<typeof framefi> =>
  framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), ...args, local]);

test("links leading outside the folder are skipped and reported; links inside it are followed", async () => {
  const r = await sync();
  assert.match(r.stderr, /key\.jpg: a link that leads outside the folder; skipped \(--follow-links uploads what it points to\)/);
  assert.match(r.stderr, /linked-folder: a link that leads outside the folder; skipped/);
  const card = (await readdir(dev.card, { recursive: true })).map(String).sort();
  assert.deepEqual(card, ["a.jpg", "album", "album/b.jpg", "best.jpg"]);
  assert.doesNotMatch(r.stdout + r.stderr, /PRIVATE KEY|hunter2/);
});

test("--follow-links uploads what they point to", async () => {
  const r = await sync("--follow-links");
  assert.equal(r.code, 0, r.stderr);
  const card = (await readdir(dev.card, { recursive: true })).map(String).sort();
  assert.ok(card.includes("key.jpg") && card.includes("linked-folder/passwords.txt"), card.join(", "));
});
