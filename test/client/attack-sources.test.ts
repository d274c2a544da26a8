// Attack: rclone's stderr lines were cut to 300 characters before the secrets were cut out of them, so a secret
// that straddled the cut was no longer found and its first part reached the error message.
// Attack: a share that changes between runs — a file replaced by a folder of the same name and a folder by a file —
// left the local mirror in a state rclone refused for good ("mkdir …: not a directory"), so every later sync failed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { redact } from "../../src/client/sources/rclone.js";
import { mkdir, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir } from "../helpers.js";
import { framefi, tree } from "./fixtures/cli.js";
import { startSftp, startWebdav } from "./fixtures/shares.js";

test("a secret that straddles the 300-character cut of an rclone stderr line leaks no part of it", () => {
  const secret = "S3cretPassw0rdThatIsLong";
  const line = `2024/01/01 00:00:00 ERROR : ${"x".repeat(290)}${secret} more`;
  const shown = redact([line], [secret]);
  for (let n = 4; n <= secret.length; n++) assert.ok(!shown.includes(secret.slice(0, n)), `leaked ${secret.slice(0, n)}`);
  assert.ok(shown.length <= 300);
});

test("a name that turns from file to folder (and back) on the share reaches the card on the next sync", async () => {
  const [dev, dir, cache] = await Promise.all([startDevice(), tempDir("framefi-attack-share-"), tempDir("framefi-attack-cache-")]);
  const share = await startWebdav(dir);
  try {
    await mkdir(join(dir, "sub"));
    await Promise.all([writeFile(join(dir, "sub", "a.txt"), "a"), writeFile(join(dir, "swap"), "was a file"), writeFile(join(dir, "keep.txt"), "k")]);
    const sync = () =>
      framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), share.source, "--to", "/p", "--delete", "--cache", cache], {
        env: share.env,
      });
    assert.equal((await sync()).code, 0);
    await Promise.all([rm(join(dir, "swap")), rm(join(dir, "sub"), { recursive: true })]);
    await mkdir(join(dir, "swap"));
    await Promise.all([writeFile(join(dir, "swap", "in.txt"), "now a folder"), writeFile(join(dir, "sub"), "now a file")]);
    const r = await sync();
    assert.equal(r.code, 0, r.stderr);
    // The card holds what the share holds now, names and contents.
    assert.deepEqual(await tree(join(dev.card, "p")), await tree(dir));
    // Attack: without photo options --cache was not read, and the share's copy went to ~/.cache/framefi instead.
    assert.equal((await readdir(join(cache, "sources"))).length, 1);
  } finally {
    await Promise.all([share.stop(), dev.stop(), removeDir(dir), removeDir(cache)]);
  }
});

// Attack: the SFTP server follows links, so a link in the share to a file or folder outside it (`etc -> /etc`)
// brought what it points to into the mirror and onto the card; a folder source skips such links.
test("links in an SFTP share, to a file or a folder outside it, reach neither the mirror nor the card", async () => {
  const [dev, dir, outside, cache] = await Promise.all([
    startDevice(),
    tempDir("framefi-attack-share-"),
    tempDir("framefi-attack-outside-"),
    tempDir("framefi-attack-cache-"),
  ]);
  const share = await startSftp(dir);
  try {
    await Promise.all([writeFile(join(dir, "a.txt"), "a"), writeFile(join(outside, "key.txt"), "secret")]);
    await Promise.all([symlink(join(outside, "key.txt"), join(dir, "key.txt")), symlink(outside, join(dir, "linked"))]);
    const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), share.source, "--to", "/p", "--cache", cache], {
      env: share.env,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(Object.keys(await tree(join(dev.card, "p"))), ["a.txt"]);
    const [mirror] = await readdir(join(cache, "sources"));
    assert.deepEqual(Object.keys(await tree(join(cache, "sources", mirror!))), ["a.txt"]);
  } finally {
    await Promise.all([share.stop(), dev.stop(), removeDir(dir), removeDir(outside), removeDir(cache)]);
  }
});
