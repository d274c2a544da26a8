// `framefi sync SOURCE` from shares on real servers started here (fixtures/shares.ts: WebDAV from rclone and from
// Apache's mod_dav at a Nextcloud path, SFTP, SMB): a share
// with sub-folders, an EXIF-rotated photo and a HEIC reaches a running bin/framefi-device as upright JPEGs; one
// file changed and one deleted on the share are mirrored by the next sync; a third sync downloads and uploads
// nothing. The secrets travel in the environment and appear in no output; an unreachable share leaves the card. SFTP
// also with a password login, and a server whose key known_hosts does not hold is refused with what to do.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp from "sharp";
import { freePort, removeDir, repoRoot, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";
import { startApacheDav, startSftp, startSmb, startWebdav, type Share } from "./fixtures/shares.js";

/** An upright 600 × 900 picture stored turned a quarter with EXIF orientation 6, as cameras do. */
async function rotatedPhoto(path: string): Promise<void> {
  const upright = await sharp({ create: { width: 600, height: 900, channels: 3, background: { r: 20, g: 60, b: 200 } } })
    .png()
    .toBuffer();
  await sharp(upright).rotate(270).jpeg().withMetadata({ orientation: 6 }).toFile(path);
}

async function plainPhoto(path: string, width: number, colour: number): Promise<void> {
  await sharp({ create: { width, height: 400, channels: 3, background: { r: colour, g: 100, b: 50 } } })
    .jpeg()
    .toFile(path);
}

/** Every file under `dir` by relative path, with its inode (a file rclone downloads again gets a new one). */
async function inodes(dir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.set(join(e.parentPath, e.name).slice(dir.length + 1), (await stat(join(e.parentPath, e.name))).ino);
  }
  return out;
}

/** A running device, and a cache folder the device's stop() removes. */
async function withCache(): Promise<RunningDevice & { cache: string }> {
  const [dev, cache] = await Promise.all([startDevice(), tempDir("framefi-sources-cache-")]);
  return { ...dev, cache, stop: () => Promise.all([dev.stop(), removeDir(cache)]).then(() => undefined) };
}

/** A share's server and a device, started side by side; when either fails to start, the other is stopped. */
async function shareAndDevice(share: Promise<Share>): Promise<[Share, RunningDevice & { cache: string }]> {
  const [s, d] = await Promise.allSettled([share, withCache()]);
  if (s.status === "fulfilled" && d.status === "fulfilled") return [s.value, d.value];
  await Promise.all([s.status === "fulfilled" && s.value.stop(), d.status === "fulfilled" && d.value.stop()]);
  throw s.status === "rejected" ? s.reason : (d as PromiseRejectedResult).reason;
}

/** A device and a cache per share, so that the shares' tests run side by side (one sync per device at a time). */
describe("framefi sync from a share", { concurrency: 4 }, () => {
  const sync = (dev: RunningDevice & { cache: string }, share: Share, to: string, ...args: string[]) =>
    framefi(
      [
        "--host",
        `127.0.0.1:${dev.port}`,
        "sync",
        "--ftp-port",
        String(dev.ftpPort),
        share.source,
        "--to",
        to,
        "--fit",
        "800x600",
        "--cache",
        dev.cache,
        ...args,
      ],
      {
        env: share.env,
        timeoutMs: 120_000,
      },
    );

  for (const [kind, startShare] of [
    ["WebDAV", startWebdav],
    ["Apache", startApacheDav],
    ["SFTP", startSftp],
    ["SMB", startSmb],
  ] as const) {
    test(`${kind}: photos through to the card, a change and a delete, then nothing to do`, async () => {
      const dir = await tempDir(`framefi-share-${kind}-`);
      await mkdir(join(dir, "album", "2024"), { recursive: true });
      await rotatedPhoto(join(dir, "album", "rotated.jpg"));
      await copyFile(join(repoRoot, "test", "client", "fixtures", "marked.heic"), join(dir, "album", "2024", "IMG_0001.HEIC"));
      await plainPhoto(join(dir, "top.jpg"), 500, 200);
      await plainPhoto(join(dir, "old.jpg"), 300, 10);
      const [share, dev] = await shareAndDevice(startShare(dir));
      const to = `/${kind.toLowerCase()}`;
      const card = join(dev.card, kind.toLowerCase());
      try {
        const first = await sync(dev, share, to, "--delete");
        assert.equal(first.code, 0, first.stdout + first.stderr);
        const upright = await sharp(join(card, "album", "rotated.jpg")).metadata();
        assert.deepEqual([upright.width, upright.height, upright.orientation], [400, 600, undefined], "turned upright, within 800x600");
        assert.equal((await sharp(join(card, "album", "2024", "IMG_0001.jpg")).metadata()).format, "jpeg");
        assert.ok((await stat(join(card, "old.jpg"))).isFile());

        await plainPhoto(join(dir, "top.jpg"), 700, 90);
        await rm(join(dir, "old.jpg"));
        const second = await sync(dev, share, to, "--delete");
        assert.equal(second.code, 0, second.stdout + second.stderr);
        assert.match(second.stdout, /^uploaded top\.jpg /m);
        assert.match(second.stdout, /^deleted old\.jpg$/m);
        assert.match(second.stdout, /Sync done: 1 uploaded .*, 1 deleted, 0 folders created, 2 unchanged\./);
        assert.equal((await sharp(join(card, "top.jpg")).metadata()).width, 700);
        await assert.rejects(stat(join(card, "old.jpg")));

        const mirrors = join(dev.cache, "sources");
        const before = new Map<string, Map<string, number>>();
        for (const m of await readdir(mirrors)) before.set(m, await inodes(join(mirrors, m)));
        const third = await sync(dev, share, to, "--delete");
        assert.equal(third.code, 0, third.stdout + third.stderr);
        assert.match(third.stdout, /Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 3 unchanged\./);
        for (const [m, files] of before) assert.deepEqual(await inodes(join(mirrors, m)), files, "nothing downloaded again");

        for (const r of [first, second, third]) {
          if (share.password !== "") assert.ok(!(r.stdout + r.stderr).includes(share.password), "the password is never shown");
        }
      } finally {
        await Promise.all([share.stop(), dev.stop()]);
        await removeDir(dir);
      }
    });
  }

  test("SFTP with a password login (FRAMEFI_SOURCE_PASSWORD): photos through to the card; a wrong one is refused, unshown", async () => {
    const dir = await tempDir("framefi-share-sftp-pass-");
    await mkdir(join(dir, "album"));
    await plainPhoto(join(dir, "album", "a.jpg"), 300, 40);
    const [share, dev] = await shareAndDevice(startSftp(dir, { password: true }));
    try {
      const first = await sync(dev, share, "/pass", "--delete");
      assert.equal(first.code, 0, first.stdout + first.stderr);
      assert.match(first.stdout, /^uploaded album\/a\.jpg /m);
      assert.equal((await sharp(join(dev.card, "pass", "album", "a.jpg")).metadata()).width, 300);
      const wrong = await sync(dev, { ...share, env: { ...share.env, FRAMEFI_SOURCE_PASSWORD: "not-it-\u00e9" } }, "/pass", "--delete");
      assert.equal(wrong.code, 3, wrong.stderr);
      assert.match(wrong.stderr, /^framefi: Cannot read sftp:\/\/anna@127\.0\.0\.1:\d+\/\S+; the card was left as it is\. .*unable to authenticate/m);
      for (const r of [first, wrong]) {
        for (const secret of [share.password, "not-it"]) assert.ok(!(r.stdout + r.stderr).includes(secret), r.stdout + r.stderr);
      }
      assert.ok((await stat(join(dev.card, "pass", "album", "a.jpg"))).isFile());
    } finally {
      await Promise.all([share.stop(), dev.stop()]);
      await removeDir(dir);
    }
  });

  test("SFTP: a server whose key is not the one known_hosts holds is refused, names no secret, leaves the card", async () => {
    const dir = await tempDir("framefi-share-sftp-key-");
    await plainPhoto(join(dir, "a.jpg"), 300, 50);
    const [share, dev, other] = await Promise.all([startSftp(dir, { password: true }), withCache(), tempDir("framefi-other-key-")]);
    try {
      const good = await sync(dev, share, "/hostkey", "--delete");
      assert.equal(good.code, 0, good.stdout + good.stderr);
      // The same host and port in known_hosts, with another key: a server that took the address over.
      await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(other, "key")]);
      const known = await readFile(share.env.FRAMEFI_SOURCE_KNOWN_HOSTS!, "utf8");
      const otherKey = (await readFile(join(other, "key.pub"), "utf8")).split(" ").slice(0, 2).join(" ");
      await writeFile(join(other, "known_hosts"), `${known.split(" ")[0]} ${otherKey}\n`);
      await rm(join(dir, "a.jpg"));
      const refused = await sync(dev, { ...share, env: { ...share.env, FRAMEFI_SOURCE_KNOWN_HOSTS: join(other, "known_hosts") } }, "/hostkey", "--delete");
      assert.equal(refused.code, 3, refused.stdout + refused.stderr);
      const file = join(other, "known_hosts").replace(/[.]/g, "\\.");
      assert.match(
        refused.stderr,
        new RegExp(
          `^framefi: sftp://anna@127\\.0\\.0\\.1:(\\d+)/\\S+: the server's key is not the one ${file} holds for \\[127\\.0\\.0\\.1\\]:\\1, so another machine may stand in its place; nothing was read and the card was left as it is\\. Check with the server's owner; if its key changed, replace the line \\(ssh-keygen -R '\\[127\\.0\\.0\\.1\\]:\\1' -f ${file}, then ssh-keyscan -p \\1 127\\.0\\.0\\.1 >> ${file}\\)\\.$`,
          "m",
        ),
      );
      // known_hosts without the server: its key is not trusted either.
      await writeFile(join(other, "known_hosts"), `[127.0.0.1]:1 ${otherKey}\n`);
      const unknown = await sync(dev, { ...share, env: { ...share.env, FRAMEFI_SOURCE_KNOWN_HOSTS: join(other, "known_hosts") } }, "/hostkey", "--delete");
      assert.equal(unknown.code, 3, unknown.stdout + unknown.stderr);
      assert.match(
        unknown.stderr,
        /^framefi: sftp:\/\/\S+: \S+known_hosts holds no key for \[127\.0\.0\.1\]:\d+, so the server cannot be checked; .* Add its key /m,
      );
      for (const r of [refused, unknown]) assert.ok(!(r.stdout + r.stderr).includes(share.password), r.stderr);
      assert.ok((await stat(join(dev.card, "hostkey", "a.jpg"))).isFile(), "the card is left as it is");
    } finally {
      await Promise.all([share.stop(), dev.stop(), removeDir(other)]);
      await removeDir(dir);
    }
  });

  test("an unreachable share or a wrong password leaves the card as it is and shows no secret", async () => {
    const dir = await tempDir("framefi-share-bad-");
    await plainPhoto(join(dir, "a.jpg"), 300, 30);
    const [share, dev] = await shareAndDevice(startWebdav(dir));
    try {
      const good = await sync(dev, share, "/bad", "--delete");
      assert.equal(good.code, 0, good.stdout + good.stderr);
      // The password from the .env file, not the environment.
      const cwd = await tempDir("framefi-share-env-");
      await writeFile(join(cwd, ".env"), `FRAMEFI_SOURCE_PASSWORD="${share.env.FRAMEFI_SOURCE_PASSWORD}"\n`);
      const fromFile = await framefi(
        ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), share.source, "--to", "/bad", "--fit", "800x600", "--cache", dev.cache],
        {
          cwd,
        },
      );
      await removeDir(cwd);
      assert.equal(fromFile.code, 0, fromFile.stdout + fromFile.stderr);
      assert.match(fromFile.stdout, /Sync done: 0 uploaded/);
      const wrong = await sync(dev, { ...share, env: { FRAMEFI_SOURCE_PASSWORD: "not-it-\u00e9" } }, "/bad", "--delete");
      assert.equal(wrong.code, 3, wrong.stderr);
      assert.match(wrong.stderr, /^framefi: Cannot read webdav:\/\/anna@127\.0\.0\.1:\d+; the card was left as it is\. .*401/m);
      assert.ok(!wrong.stderr.includes("not-it"), wrong.stderr);
      const closed = await freePort();
      const gone = await sync(dev, { ...share, source: `webdav://anna@127.0.0.1:${closed}/` }, "/bad", "--delete");
      assert.equal(gone.code, 3, gone.stderr);
      assert.match(gone.stderr, /the card was left as it is.*connection refused/);
      assert.ok((await stat(join(dev.card, "bad", "a.jpg"))).isFile());
      const inUrl = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "webdav://anna:hunter2@127.0.0.1/"]);
      assert.equal(inUrl.code, 2);
      assert.match(inUrl.stderr, /anna:\*\*\*@.*set FRAMEFI_SOURCE_PASSWORD instead/);
      assert.ok(!inUrl.stderr.includes("hunter2"));
    } finally {
      await Promise.all([share.stop(), dev.stop()]);
      await removeDir(dir);
    }
  });
});
