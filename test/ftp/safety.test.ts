// FTP mode's bad paths, against bin/framefi-device: wrong password, escapes from the card, a full card, and
// leaving FTP mode (MSC, restart, Wi-Fi reset) in the middle of transfers.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, freePort, removeDir, start, startDevice, tempDir } from "../helpers.js";
import { curl, hasPartial, lftp, PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection } from "./fixtures/raw.js";
import { listTree } from "../fixtures/files.js";

/** True when a listener can take the port again (the server released it). */
async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

describe("FTP mode: the card folder replaced while the device runs", () => {
  it("a served folder or the card folder swapped for a link leading out is not followed; a card folder made anew is served", async (t) => {
    const dir = await tempDir("framefi-ftp-root-swap-");
    const card = join(dir, "card");
    await mkdir(card);
    await mkdir(join(dir, "outside"));
    await writeFile(join(dir, "outside/secret.txt"), "secret");
    await writeFile(join(card, "photo.jpg"), "photo");
    const ftp = await startFtp(card);
    t.after(async () => {
      await ftp.stop();
      await removeDir(dir);
    });
    await writeFile(join(dir, "local.txt"), "planted");
    /** Reading the outside file and uploading next to it through `folder` (a card path) both fail; nothing lands outside. */
    const refused = async (folder: string): Promise<void> => {
      const get = await curl([`${ftp.url}${folder}/secret.txt`]);
      assert.notEqual(get.code, 0);
      assert.doesNotMatch(get.stdout, /secret/);
      assert.notEqual((await curl(["-T", join(dir, "local.txt"), `${ftp.url}${folder}/planted.txt`])).code, 0);
      assert.deepEqual(await listTree(join(dir, "outside")), ["secret.txt"], "nothing written outside the card");
    };
    assert.equal((await curl([`${ftp.url}/photo.jpg`])).stdout, "photo");

    // A folder served a moment ago, swapped for a link leading out.
    await mkdir(join(card, "album"));
    await writeFile(join(card, "album/a.jpg"), "a");
    assert.equal((await curl([`${ftp.url}/album/a.jpg`])).stdout, "a");
    assert.equal((await curl(["-T", join(dir, "local.txt"), `${ftp.url}/album/b.jpg`])).code, 0);
    await rename(join(card, "album"), join(dir, "album.old"));
    await symlink(join(dir, "outside"), join(card, "album"));
    await refused("/album");
    const mtime = (await stat(join(dir, "outside/secret.txt"))).mtimeMs;
    const mfmt = await lftp(ftp, "quote MFMT 20200101000000 /album/secret.txt");
    assert.match(mfmt.stderr + mfmt.stdout, /550/);
    assert.equal((await stat(join(dir, "outside/secret.txt"))).mtimeMs, mtime, "the outside file's time is untouched");
    await rm(join(card, "album"));

    // The card folder itself.
    await rename(card, join(dir, "card.old"));
    await symlink(join(dir, "outside"), card);
    await refused("");

    await rm(card);
    await mkdir(card);
    const again = await curl(["-T", join(dir, "local.txt"), `${ftp.url}/again.txt`]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await readFile(join(card, "again.txt"), "utf8"), "planted");
  });
});

describe("FTP mode: login and confinement", () => {
  let dir: string;
  let card: string;
  let ftp: Ftp;
  const secret = "top secret outside the card";

  before(async () => {
    dir = await tempDir("framefi-ftp-safety-");
    card = join(dir, "card");
    await mkdir(join(dir, "outside"), { recursive: true });
    await mkdir(card);
    await writeFile(join(dir, "outside/secret.txt"), secret);
    await writeFile(join(card, "photo.jpg"), "photo");
    await symlink(join(dir, "outside"), join(card, "escape-dir"));
    await symlink(join(dir, "outside/secret.txt"), join(card, "escape-file"));
    ftp = await startFtp(card);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("a wrong password gets 530 and no access (lftp and curl)", async () => {
    const l = await lftp(ftp, "cls /", { password: "wrong" });
    assert.notEqual(l.code, 0);
    assert.match(l.stderr, /530 Login incorrect/);
    assert.doesNotMatch(l.stdout, /photo\.jpg/);
    const c = await curl([`ftp://user:wrong@127.0.0.1:${ftp.port}/photo.jpg`]);
    assert.equal(c.code, 67, "curl: login denied");
    assert.match(c.stderr, /530/);
    assert.equal(c.stdout, "");
    const u = await curl([`ftp://nobody:password@127.0.0.1:${ftp.port}/`]);
    assert.equal(u.code, 67);
    assert.doesNotMatch(ftp.device.program.stdout() + ftp.device.program.stderr(), /wrong/, "passwords never logged");
  });

  it("commands before login get 530", async () => {
    const r = await curl(["-Q", "DELE photo.jpg", "--ftp-skip-pasv-ip", `ftp://127.0.0.1:${ftp.port}/`, "-u", ":"]);
    assert.notEqual(r.code, 0);
    assert.equal(await readFile(join(card, "photo.jpg"), "utf8"), "photo");
  });

  it("'..' and absolute paths stay inside the card", async () => {
    const outside = join(dir, "outside/secret.txt");
    for (const path of ["../outside/secret.txt", "../../../../etc/passwd", outside, "/../outside/secret.txt"]) {
      const size = await lftp(ftp, `quote SIZE ${path}`);
      assert.match(size.stderr + size.stdout, /550/, path);
      const get = await curl(["--path-as-is", `${ftp.url}/${path}`]);
      assert.notEqual(get.code, 0, path);
      assert.doesNotMatch(get.stdout, /secret|root:/, path);
    }
    // CWD .. at the root stays at the root.
    const up = await lftp(ftp, "quote CWD ../..; quote PWD");
    assert.match(up.stdout, /^257 "\/" is the current folder\.$/m);
    // Writes addressed outside land inside the card (or nowhere), never outside.
    await writeFile(join(dir, "local.txt"), "uploaded");
    const put = await curl(["--path-as-is", "-T", join(dir, "local.txt"), `${ftp.url}/../outside/planted.txt`]);
    assert.notEqual(put.code, 0);
    await assert.rejects(stat(join(dir, "outside/planted.txt")));
  });

  it("symlinks inside the card that point outside are refused and not listed", async () => {
    const get = await curl([`${ftp.url}/escape-file`]);
    assert.notEqual(get.code, 0);
    assert.doesNotMatch(get.stdout, /secret/);
    const inDir = await curl([`${ftp.url}/escape-dir/secret.txt`]);
    assert.notEqual(inDir.code, 0);
    assert.doesNotMatch(inDir.stdout, /secret/);
    const cwd = await lftp(ftp, "cd /escape-dir");
    assert.notEqual(cwd.code, 0);
    for (const cmd of [
      "quote SIZE /escape-file",
      "quote MDTM /escape-dir/secret.txt",
      "rm /escape-file",
      "rm /escape-dir/secret.txt",
      "mkdir /escape-dir/new",
      "mv /escape-dir/secret.txt /stolen.txt",
    ]) {
      const r = await lftp(ftp, cmd);
      assert.match(r.stderr + r.stdout, /550/, cmd);
    }
    await writeFile(join(dir, "local.txt"), "planted");
    const put = await curl(["-T", join(dir, "local.txt"), `${ftp.url}/escape-dir/planted.txt`]);
    assert.notEqual(put.code, 0);
    // Appending to or resuming over the outward link must not copy the outside file into the card.
    const append = await curl(["-a", "-T", join(dir, "local.txt"), `${ftp.url}/escape-file`]);
    assert.notEqual(append.code, 0);
    const resume = await lftp(ftp, "quote REST 3; quote SIZE /escape-file");
    assert.match(resume.stdout, /550/);
    const list = await curl([`${ftp.url}/`]);
    assert.doesNotMatch(list.stdout, /escape/);
    assert.match(list.stdout, /photo\.jpg/);
    assert.deepEqual(await listTree(join(dir, "outside")), ["secret.txt"]);
    assert.equal(await readFile(join(dir, "outside/secret.txt"), "utf8"), secret);
  });

  it("symlinks that stay inside the card are followed, at any depth", async () => {
    await mkdir(join(card, "albums/2024"), { recursive: true });
    await writeFile(join(card, "albums/2024/beach.jpg"), "beach");
    await symlink(join(card, "albums/2024"), join(card, "albums/latest"));
    await symlink("2024/beach.jpg", join(card, "albums/best.jpg"));
    assert.equal((await curl([`${ftp.url}/albums/latest/beach.jpg`])).stdout, "beach");
    assert.equal((await curl([`${ftp.url}/albums/best.jpg`])).stdout, "beach");
    await writeFile(join(dir, "new.txt"), "new photo");
    const put = await curl(["-T", join(dir, "new.txt"), `${ftp.url}/albums/latest/new.jpg`]);
    assert.equal(put.code, 0, put.stderr);
    assert.equal(await readFile(join(card, "albums/2024/new.jpg"), "utf8"), "new photo");
    const mdtm = await lftp(ftp, "quote MDTM /albums/latest/new.jpg");
    assert.match(mdtm.stdout, /^213 \d{14}/m);
  });

  it("PORT to another address is refused (no FTP bounce)", async () => {
    const r = await lftp(ftp, "quote PORT 10,0,0,1,20,20");
    assert.match(r.stderr + r.stdout, /504/);
  });
});

describe("FTP mode: passive settings", () => {
  it("announces --ftp-public-address and uses the passive port range (FRAMEFI_FTP_PASSIVE_PORTS)", async () => {
    const dir = await tempDir("framefi-ftp-pasv-");
    const low = await freePort();
    const ftp = await startFtp(dir, ["--ftp-public-address", "10.1.2.3"], { FRAMEFI_FTP_PASSIVE_PORTS: `${low}-${low}` });
    try {
      const r = await lftp(ftp, "quote PASV");
      assert.match(r.stdout, new RegExp(`^227 Entering Passive Mode \\(10,1,2,3,${low >> 8},${low & 255}\\)`, "m"));
      const e = await lftp(ftp, "quote EPSV");
      assert.match(e.stdout, new RegExp(`^229 Entering Extended Passive Mode \\(\\|\\|\\|${low}\\|\\)`, "m"));
    } finally {
      await ftp.stop();
      await removeDir(dir);
    }
  });
});

describe("FTP mode: its port taken by another program", () => {
  it("the switch fails with a clear log line and the device stays in USB MSC mode", async (t) => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    t.after(() => blocker.close());
    const taken = (blocker.address() as { port: number }).port;
    const dev = await startDevice({ ftpPort: taken, args: ["--boot-delay", "0"] });
    t.after(() => dev.stop());
    const res = await fetch(`${dev.url}/mode/ftp`, { method: "POST" });
    assert.equal(res.status, 500, "the switch answers once it is done, with its failure");
    const body = (await res.json()) as { status: string; message: string };
    assert.equal(body.status, "error");
    assert.match(
      body.message,
      /^Could not switch to Application \(FTP\) mode: Cannot listen for FTP on 127\.0\.0\.1:\d+: EADDRINUSE\. Choose another FTP port\. The device stays in USB MSC mode\.$/,
    );
    await dev.program.waitFor(/Cannot listen for FTP on 127\.0\.0\.1:\d+: EADDRINUSE\. Choose another FTP port\..*staying in USB MSC mode/, 15_000);
    const status = (await (await fetch(`${dev.url}/`)).json()) as { mode: string; led: { color: string } };
    assert.equal(status.mode, "USB MSC");
    assert.equal(status.led.color, "green");
  });
});

describe("FTP mode: full card", () => {
  let dir: string;
  let ftp: Ftp;
  before(async () => {
    dir = await tempDir("framefi-ftp-full-");
    await mkdir(join(dir, "card"));
    await writeFile(join(dir, "card/existing.jpg"), randomBytes(400_000));
    ftp = await startFtp(join(dir, "card"), ["--card-size", "1000000"]);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("an upload that does not fit gets 552 and leaves no file (curl, lftp); one that fits succeeds", async () => {
    await writeFile(join(dir, "big.bin"), randomBytes(700_000));
    const c = await curl(["-T", join(dir, "big.bin"), `${ftp.url}/big.bin`]);
    assert.equal(c.code, 70, `curl reports 552 as "exceeded storage allocation": ${c.stderr}`);
    const l = await lftp(ftp, "put big.bin -o /sub-big.bin", { cwd: dir });
    assert.notEqual(l.code, 0);
    assert.match(l.stderr, /552 Upload aborted: Not enough space on the card/);
    assert.deepEqual(await listTree(join(dir, "card")), ["existing.jpg"], "no partial or truncated file");
    assert.deepEqual(await ftp.figures(), { total_size: 1_000_000, used_size: 400_000, free_size: 600_000, file_count: 1 });

    await writeFile(join(dir, "small.bin"), randomBytes(500_000));
    const ok = await curl(["-T", join(dir, "small.bin"), `${ftp.url}/small.bin`]);
    assert.equal(ok.code, 0, ok.stderr);
    const again = await curl(["-T", join(dir, "small.bin"), `${ftp.url}/small2.bin`]);
    assert.equal(again.code, 70, "the card is now full");
    assert.deepEqual(await listTree(join(dir, "card")), ["existing.jpg", "small.bin"]);
    assert.deepEqual(await ftp.figures(), { total_size: 1_000_000, used_size: 900_000, free_size: 100_000, file_count: 2 });
  });
});

describe("FTP mode: leaving it during transfers", () => {
  let dir: string;
  before(async () => {
    dir = await tempDir("framefi-ftp-stop-");
    await writeFile(join(dir, "large.bin"), randomBytes(8_000_000));
  });
  after(async () => removeDir(dir));

  it("switching to MSC aborts a running upload, removes its partial file, closes connections and frees the ports", async () => {
    const card = join(dir, "card-up");
    await mkdir(card);
    const low = await freePort();
    const ftp = await startFtp(card, ["--ftp-passive-ports", `${low}-${low}`]);
    try {
      const upload = start("curl", ["-sS", "--limit-rate", "500K", "-T", join(dir, "large.bin"), `${ftp.url}/large.bin`]);
      await eventually(async () => hasPartial(await listTree(card)), 15_000);
      await ftp.enterMsc();
      const code = await upload.exited;
      assert.notEqual(code, 0, "the client sees the transfer fail");
      assert.deepEqual(await listTree(card), [], "no partial file, no target");
      assert.ok(await portIsFree(ftp.port), "control port is free");
      assert.ok(await portIsFree(low), "passive port is free");
      // In MSC mode the card belongs to the USB host: FTP cannot write to it.
      const refused = await curl(["-T", join(dir, "large.bin"), `${ftp.url}/again.bin`]);
      assert.equal(refused.code, 7, "curl: cannot connect");
      assert.equal((await ftp.figures()).file_count, 0);

      // Entering FTP mode again serves the card again on the same port.
      await ftp.enterFtp();
      const list = await curl(["-l", `${ftp.url}/`]);
      assert.equal(list.code, 0, list.stderr);
      assert.equal(list.stdout, "");
    } finally {
      await ftp.stop();
    }
  });

  it("switching to MSC aborts a running download and frees the port", async () => {
    const card = join(dir, "card-down");
    await mkdir(card);
    await writeFile(join(card, "large.bin"), await readFile(join(dir, "large.bin")));
    const ftp = await startFtp(card);
    try {
      const download = start("curl", ["-sS", "-v", "--limit-rate", "500K", "-o", join(dir, "got.bin"), `${ftp.url}/large.bin`]);
      await download.waitFor(/150 Opening data connection/, 15_000);
      await ftp.enterMsc();
      assert.notEqual(await download.exited, 0);
      const got = await stat(join(dir, "got.bin")).catch(() => undefined);
      assert.ok((got?.size ?? 0) < 8_000_000, "download was cut short");
      assert.ok(await portIsFree(ftp.port));
      assert.deepEqual(await listTree(card), ["large.bin"], "the card file is untouched");
    } finally {
      await ftp.stop();
    }
  });

  it("an upload still waiting for its data connection does not hold up a switch to MSC (one passive port)", async () => {
    const card = join(dir, "card-waiting");
    await mkdir(card);
    const low = await freePort();
    const ftp = await startFtp(card, ["--ftp-passive-ports", `${low}-${low}`]);
    try {
      const c = await ftpConnection(ftp.port);
      assert.match(await c.command(`USER ${USER}`), /^331 /);
      assert.match(await c.command(`PASS ${PASSWORD}`), /^230 /);
      assert.match(await c.command("PASV"), /^227 /);
      // STOR, and no data connection ever: the server waits up to 30 s for one.
      c.socket.write("STOR waiting.bin\r\n");
      const started = Date.now();
      await ftp.enterMsc();
      await c.closed;
      assert.ok(Date.now() - started < 20_000, `the switch took ${Date.now() - started} ms: it waited for the data connection`);
      assert.match(c.replies().at(-1) ?? "", /^421 /, "the session was closed with 421");
      assert.deepEqual(await listTree(card), [], "nothing stored");
      assert.ok(await portIsFree(low), "passive port is free");
    } finally {
      await ftp.stop();
    }
  });

  it("a restart and a Wi-Fi reset stop the FTP server, aborting an upload without leaving a partial file", async () => {
    const card = join(dir, "card-restart");
    await mkdir(card);
    const ftp = await startFtp(card);
    try {
      const upload = start("curl", ["-sS", "--limit-rate", "500K", "-T", join(dir, "large.bin"), `${ftp.url}/large.bin`]);
      await eventually(async () => hasPartial(await listTree(card)), 15_000);
      const restarted = await fetch(`${ftp.device.url}/device/restart`, { method: "POST" });
      assert.equal(restarted.status, 200);
      assert.notEqual(await upload.exited, 0, "the client sees the transfer fail");
      assert.deepEqual(await listTree(card), [], "no partial file, no target");
      await eventually(async () => (await ftp.figures().catch(() => undefined))?.file_count === 0, 15_000);
      assert.ok(await portIsFree(ftp.port), "back in MSC mode after the restart: no FTP server");

      await ftp.enterFtp();
      const reset = await fetch(`${ftp.device.url}/wifi/reset`, { method: "POST" });
      assert.equal(reset.status, 200);
      await eventually(async () => (await fetch(`http://127.0.0.1:${ftp.device.setupPort}/`).catch(() => undefined))?.ok, 15_000);
      assert.ok(await portIsFree(ftp.port), "setup mode: no FTP server");
    } finally {
      await ftp.stop();
    }
  });

  it("FTP temp files left by a crash are removed when FTP mode starts, and not counted after", async () => {
    const card = join(dir, "card-crash");
    await mkdir(join(card, "album"), { recursive: true });
    await writeFile(join(card, "album/kept.jpg"), randomBytes(1_000));
    await writeFile(join(card, "album/.lost.jpg.ftp-partial-0123abcd"), randomBytes(5_000));
    const ftp = await startFtp(card, ["--card-size", "1MB"]);
    try {
      assert.deepEqual(await listTree(card), ["album/", "album/kept.jpg"]);
      assert.deepEqual(await ftp.figures(), { total_size: 1_000_000, used_size: 1_000, free_size: 999_000, file_count: 1 });
    } finally {
      await ftp.stop();
    }
  });

  it("a client killed mid-upload leaves no partial file, and never a file that is not a prefix of the upload", async () => {
    const card = join(dir, "card-kill");
    await mkdir(card);
    const ftp = await startFtp(card);
    try {
      const upload = start("curl", ["-sS", "--limit-rate", "500K", "-T", join(dir, "large.bin"), `${ftp.url}/large.bin`]);
      await eventually(async () => hasPartial(await listTree(card)), 15_000);
      upload.child.kill("SIGKILL");
      await upload.exited;
      // FTP stream mode ends a file by closing the data connection, which a dying client also does;
      // when that arrives before its control connection closes, the bytes received are kept.
      await eventually(async () => !hasPartial(await listTree(card)), 15_000);
      const kept = await readFile(join(card, "large.bin")).catch(() => undefined);
      if (kept) assert.ok((await readFile(join(dir, "large.bin"))).subarray(0, kept.length).equals(kept));
    } finally {
      await ftp.stop();
    }
  });
});
