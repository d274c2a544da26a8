// FTP mode under attack, against bin/framefi-device over real sockets: reply floods from clients that never read,
// data poured into data connections without a STOR, idle connections that hold every slot, password guessing,
// clients killed mid-upload, and names of the device's own temp files.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, removeDir, start, startDevice, tempDir } from "../helpers.js";
import { curl, hasPartial, isPartial, lftp, PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { listTree } from "../fixtures/files.js";
import { ftpConnection, logIn, openData } from "./fixtures/raw.js";
import { rssMiB } from "../fixtures/memory.js";

/** Bytes of the upload in progress on the card (0 when there is none). */
async function partialSize(card: string): Promise<number> {
  const partial = (await listTree(card)).find(isPartial);
  return partial ? ((await stat(join(card, partial)).catch(() => undefined))?.size ?? 0) : 0;
}

describe("FTP mode: floods and idle connections", () => {
  let dir: string;
  let ftp: Ftp;
  before(async () => {
    dir = await tempDir("framefi-ftp-attack-");
    await mkdir(join(dir, "card"));
    ftp = await startFtp(join(dir, "card"));
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("before login, a stream of HELP/FEAT/NOOP gets at most 20 answers and then 421", async () => {
    const c = await ftpConnection(ftp.port);
    c.socket.write("HELP\r\nFEAT\r\nNOOP\r\n".repeat(5_000));
    await c.closed;
    // The 421 may be lost: closing a socket with unread commands resets the connection.
    const codes = c.replies().map((r) => r.slice(0, 3));
    assert.ok(codes.length <= 22, `${codes.length} replies`);
    assert.deepEqual(
      [...new Set(codes)].filter((code) => !["220", "214", "211", "200", "421"].includes(code)),
      [],
    );
    await ftp.device.program.waitFor(/ftp 127\.0\.0\.1:\d+: closed: 421 Too many commands before login; closing the connection\./, 5_000);
  });

  it("a logged-in client that sends commands and never reads the replies is paused: memory stays bounded", async () => {
    const c = await ftpConnection(ftp.port);
    await c.command(`USER ${USER}`);
    assert.match(await c.command(`PASS ${PASSWORD}`), /^230/);
    c.socket.pause();
    const chunk = Buffer.from("FEAT\r\nHELP\r\n".repeat(10_000));
    let sent = 0;
    // Keep the socket fed until the device stops reading (the bytes handed to the kernel stop growing).
    let last = -1;
    await eventually(
      async () => {
        while (c.socket.writableLength < 4 * chunk.length && sent < 500_000_000) {
          c.socket.write(chunk);
          sent += chunk.length;
        }
        const stalled = c.socket.bytesWritten === last;
        last = c.socket.bytesWritten;
        return stalled;
      },
      30_000,
      500,
    );
    const rss = Math.round(rssMiB(ftp.device.program.child.pid!));
    console.log(`reply flood: device stopped reading after ${(last / 1e6).toFixed(1)} MB of commands; device RSS ${rss} MB`);
    assert.ok(rss < 200, `device RSS ${rss} MB`);
    // The device still serves others meanwhile.
    const list = await curl(["-l", `${ftp.url}/`]);
    assert.equal(list.code, 0, list.stderr);
    c.socket.destroy();
  });

  it("logged-in clients that pour data into their data connections and never send STOR: memory stays bounded", async () => {
    const SESSIONS = 12;
    const chunk = Buffer.alloc(1024 * 1024, 1);
    const CHUNKS = 64;
    const sessions = await Promise.all(
      Array.from({ length: SESSIONS }, async () => {
        const raw = await ftpConnection(ftp.port);
        await logIn(raw, USER, PASSWORD);
        const data = await openData(raw);
        for (let i = 0; i < CHUNKS; i++) data.write(chunk);
        return { raw, data };
      }),
    );
    try {
      // The device takes one read of each and stops: the rest stays queued here, once the kernel's buffers are full.
      let last = -1;
      await eventually(
        () => {
          const queued = sessions.reduce((sum, { data }) => sum + data.writableLength, 0);
          const stalled = queued === last && sessions.every(({ data }) => data.writableLength > 0);
          last = queued;
          return stalled;
        },
        30_000,
        500,
      );
      const rss = Math.round(rssMiB(ftp.device.program.child.pid!));
      const taken = (SESSIONS * CHUNKS * chunk.length - last) / 1e6;
      console.log(`data before STOR: ${SESSIONS} connections held after ${taken.toFixed(1)} MB left the clients; device RSS ${rss} MB`);
      assert.ok(rss < 200, `device RSS ${rss} MB`);
      // The device still serves others, and has not read on meanwhile.
      const list = await curl(["-l", `${ftp.url}/`]);
      assert.equal(list.code, 0, list.stderr);
      const later = Math.round(rssMiB(ftp.device.program.child.pid!));
      assert.ok(later < 200, `device RSS ${later} MB`);
    } finally {
      for (const { raw, data } of sessions) {
        data.destroy();
        raw.socket.destroy();
      }
    }
  });

  it("idle connections from one address cannot lock out another: 16 per address, then 421", async () => {
    const idle: Awaited<ReturnType<typeof ftpConnection>>[] = [];
    try {
      for (let i = 0; i < 16; i++) idle.push(await ftpConnection(ftp.port));
      const refused = await ftpConnection(ftp.port);
      await refused.closed;
      assert.match(refused.text(), /^421 Too many connections from your address; try again later\.\r\n$/);
      const rss = Math.round(rssMiB(ftp.device.program.child.pid!));
      console.log(`16 idle connections: device RSS ${rss} MB`);
      // Another address still gets in and works.
      const other = await curl(["--interface", "127.0.0.2", "-l", `${ftp.url}/`]);
      assert.equal(other.code, 0, other.stderr);
    } finally {
      for (const c of idle) c.socket.destroy();
    }
    await ftp.device.program.waitFor(/refused: Too many connections from your address/, 5_000);
  });
});

describe("FTP mode: password guessing", () => {
  let dir: string;
  let ftp: Ftp;
  before(async () => {
    dir = await tempDir("framefi-ftp-guess-");
    await mkdir(join(dir, "card"));
    // Three free failures, so the doubling shows within the test's 3 s (the default is 5).
    ftp = await startFtp(join(dir, "card"), ["--login-attempts", "3"]);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("guesses from one address slow down however often it reconnects; others log in at once; failures are logged", async () => {
    let guesses = 0;
    const until = Date.now() + 3_000;
    // Reconnecting after every third failure used to reset the count: ~7 000 guesses a second.
    while (Date.now() < until) {
      const c = await ftpConnection(ftp.port);
      for (let i = 0; i < 3 && Date.now() < until && !c.ended(); i++) {
        await c.command(`USER ${USER}`);
        const reply = await c.command(`PASS Wr0ngPw-${guesses}`, Math.max(1, until - Date.now()));
        if (/^530/.test(reply)) guesses++;
      }
      c.socket.destroy();
    }
    console.log(`password guessing: ${guesses} guesses answered in 3 s; device RSS ${Math.round(rssMiB(ftp.device.program.child.pid!))} MB`);
    assert.ok(guesses <= 8, `${guesses} guesses in 3 s`);
    const other = await curl(["--interface", "127.0.0.2", "-l", `${ftp.url}/`]);
    assert.equal(other.code, 0, other.stderr);
    const log = ftp.device.program.stdout() + ftp.device.program.stderr();
    assert.match(log, /ftp 127\.0\.0\.1:\d+: login failed \(4 in a row from 127\.0\.0\.1; the next attempt from this address waits 2 s\)/);
    assert.doesNotMatch(
      log,
      /Wr0ngPw/,
      `passwords are never logged: ${log
        .split("\n")
        .filter((l) => l.includes("Wr0ngPw"))
        .join("\n")}`,
    );
  });
});

describe("FTP mode: clients killed mid-upload", () => {
  let dir: string;
  let ftp: Ftp;
  let card: string;
  before(async () => {
    dir = await tempDir("framefi-ftp-kill-");
    card = join(dir, "card");
    await mkdir(card);
    ftp = await startFtp(card);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("kill -9 of curl or lftp during STOR over an existing file: the old file stays whole, or the new one is complete", async () => {
    const old = randomBytes(500_000);
    const upload = randomBytes(3_000_000);
    await writeFile(join(card, "photo.jpg"), old);
    await writeFile(join(dir, "photo.jpg"), upload);
    const outcomes: string[] = [];
    for (let run = 0; run < 12; run++) {
      const client =
        run % 2 === 0
          ? start("curl", ["-sS", "--limit-rate", "6M", "-T", join(dir, "photo.jpg"), `${ftp.url}/photo.jpg`])
          : start("lftp", ["-c", `set ftp:ssl-allow no; set net:limit-rate 6M; open -u ${USER},${PASSWORD} -p ${ftp.port} 127.0.0.1; put photo.jpg`], {
              cwd: dir,
            });
      // Kill it after a different share of the file each time (a slow machine may let it finish first).
      const threshold = ((run % 4) + 1) * 500_000;
      let exited = false;
      void client.exited.then(() => (exited = true));
      await eventually(async () => exited || (await partialSize(card)) >= threshold, 20_000, 5);
      client.child.kill("SIGKILL");
      await client.exited;
      await eventually(async () => !hasPartial(await listTree(card)), 15_000);
      const now = await readFile(join(card, "photo.jpg"));
      assert.ok(now.equals(old) || now.equals(upload), `run ${run}: photo.jpg is ${now.length} bytes, neither the old file nor the upload`);
      outcomes.push(now.equals(old) ? "old" : "new");
      if (now.equals(upload)) await writeFile(join(card, "photo.jpg"), old);
    }
    console.log(`killed uploads: ${outcomes.join(" ")}`);
  });

  it("with ALLO (lftp's ftp:use-allo), a data connection closed short of the announced size keeps the old file", async () => {
    await writeFile(join(card, "short.jpg"), "old");
    const c = await ftpConnection(ftp.port);
    await c.command(`USER ${USER}`);
    await c.command(`PASS ${PASSWORD}`);
    assert.match(await c.command("ALLO 1000"), /^202/);
    const pasv = await c.command("EPSV");
    const port = Number(/\|\|\|(\d+)\|/.exec(pasv)![1]);
    const data: Socket = connect(port, "127.0.0.1");
    await new Promise((resolve) => data.once("connect", resolve));
    c.socket.write("STOR short.jpg\r\n");
    data.end(Buffer.alloc(400, 1));
    const reply = await c.next((r) => /^4\d\d /m.test(r) || /^226/m.test(r));
    assert.match(reply, /426 Upload incomplete: 400 of the 1000 bytes announced with ALLO arrived; the file was not changed\./);
    assert.equal(await readFile(join(card, "short.jpg"), "utf8"), "old");
    c.socket.destroy();
    const allo = await lftp(ftp, "set ftp:use-allo yes; put photo.jpg -o allo.jpg", { cwd: dir });
    assert.equal(allo.code, 0, allo.stderr);
    assert.ok((await readFile(join(card, "allo.jpg"))).equals(await readFile(join(dir, "photo.jpg"))));
  });

  it("a second upload to a file while one runs gets 450 (no lost APPE)", async () => {
    await writeFile(join(card, "log.txt"), "start\n");
    const slow = start("curl", ["-sS", "--limit-rate", "200K", "-a", "-T", join(dir, "photo.jpg"), `${ftp.url}/log.txt`]);
    await eventually(async () => hasPartial(await listTree(card)), 15_000, 5);
    await writeFile(join(dir, "line.txt"), "line\n");
    const second = await curl(["-a", "-T", join(dir, "line.txt"), `${ftp.url}/log.txt`]);
    assert.notEqual(second.code, 0);
    assert.match(second.stderr, /450/);
    slow.child.kill("SIGKILL");
    await slow.exited;
    await eventually(async () => !hasPartial(await listTree(card)), 15_000);
  });
});

describe("FTP mode: the device's own temp names", () => {
  it("are refused on every FTP write path and in web uploads; a folder of that name never blocks FTP mode", async () => {
    const dir = await tempDir("framefi-ftp-names-");
    const card = join(dir, "card");
    // Made behind the device's back (USB host, an older version): must not keep FTP mode from starting.
    await mkdir(join(card, ".framefi-upload-0.part"), { recursive: true });
    await writeFile(join(card, ".framefi-upload-1.part"), "stale temp file");
    const ftp = await startFtp(card);
    try {
      assert.deepEqual(await listTree(card), [".framefi-upload-0.part/"], "the stale temp file is gone, the folder stays");
      await writeFile(join(dir, "x.txt"), "x");
      for (const cmd of [
        "mkdir /.framefi-upload-7.part",
        "mkdir /.framefi-upload-abc.part",
        "put x.txt -o /.framefi-upload-8.part",
        "mv x.jpg /.framefi-upload-9.part",
      ]) {
        if (cmd.startsWith("mv")) await writeFile(join(card, "x.jpg"), "x");
        const r = await lftp(ftp, cmd, { cwd: dir });
        assert.notEqual(r.code, 0, cmd);
        assert.match(r.stderr, /550/, cmd);
      }
      const form = new FormData();
      form.append("file", new Blob(["x"]), ".framefi-upload-5.part");
      const web = await fetch(`${ftp.device.url}/upload`, { method: "POST", body: form });
      assert.equal(web.status, 400);
      assert.deepEqual(await listTree(card), [".framefi-upload-0.part/", "x.jpg"]);
      await ftp.enterMsc();
      await ftp.enterFtp(); // throws unless POST /mode/ftp answers success
      const list = await curl(["-l", `${ftp.url}/`]);
      assert.equal(list.stdout, "x.jpg\n");
    } finally {
      await ftp.stop();
      await removeDir(dir);
    }
  });
});

describe("FTP mode: space shared with web uploads", () => {
  it("an FTP upload in progress holds its space: a web upload that does not fit beside it gets 507 (emulated card)", async () => {
    const dir = await tempDir("framefi-ftp-space-");
    const card = join(dir, "card");
    await mkdir(card);
    await writeFile(join(dir, "ftp.bin"), randomBytes(600_000));
    const ftp = await startFtp(card, ["--card-size", "1000000"]);
    try {
      const upload = start("curl", ["-sS", "--limit-rate", "300K", "-T", join(dir, "ftp.bin"), `${ftp.url}/ftp.bin`]);
      await eventually(async () => (await partialSize(card)) >= 450_000, 20_000, 5);
      const web = await fetch(`${ftp.device.url}/upload?filename=web.bin`, { method: "PUT", body: randomBytes(700_000) });
      assert.equal(web.status, 507, await web.text());
      assert.equal(await upload.exited, 0, "the FTP upload completes");
      assert.deepEqual(await listTree(card), ["ftp.bin"]);
      await eventually(async () => (await ftp.figures()).used_size === 600_000);
      assert.deepEqual(await ftp.figures(), { total_size: 1_000_000, used_size: 600_000, free_size: 400_000, file_count: 1 });
    } finally {
      await ftp.stop();
      await removeDir(dir);
    }
  });

  it("temp files a crash left are counted while the card is a USB drive, and removed (and uncounted) in FTP mode", async () => {
    const dir = await tempDir("framefi-ftp-stale-");
    const card = join(dir, "card");
    await mkdir(join(card, "album"), { recursive: true });
    await writeFile(join(card, "album/.lost.jpg.ftp-partial-0123abcd"), randomBytes(5_000));
    await writeFile(join(card, ".framefi-upload-1f.part"), randomBytes(3_000));
    const device = await startDevice({ card, args: ["--boot-delay", "0", "--card-size", "1MB"] });
    try {
      const before = ((await (await fetch(`${device.url}/`)).json()) as { sd_card: { used_size: number; file_count: number } }).sd_card;
      assert.deepEqual([before.used_size, before.file_count], [8_000, 2]);
    } finally {
      await device.stop();
    }
    const ftp = await startFtp(card, ["--card-size", "1MB"]);
    try {
      assert.deepEqual(await listTree(card), ["album/"]);
      assert.deepEqual(await ftp.figures(), { total_size: 1_000_000, used_size: 0, free_size: 1_000_000, file_count: 0 });
    } finally {
      await ftp.stop();
      await removeDir(dir);
    }
  });
});
