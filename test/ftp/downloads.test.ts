// Downloads (RETR) on bin/framefi-device over real sockets: a client that hangs up the moment its file has arrived
// (a killed client, or one that knew the size) must not leave its session behind: sessions per address are
// limited, and switching to MSC mode waits for every session to close. Large files in stream mode go out through
// the sendfile helper (native/sendfile-helper.c), a process of its own: byte for byte, from a REST offset, and
// stopped with the transfer (ABOR, the client gone, the card taken back).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, cp, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, processAlive, removeDir, repoRoot, start, tempDir } from "../helpers.js";
import { curl, PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection, logIn, openData } from "./fixtures/raw.js";

const SESSIONS = 40;

describe("FTP downloads", () => {
  let dir: string;
  let ftp: Ftp;
  const file = randomBytes(20_000);
  before(async () => {
    dir = await tempDir();
    const card = join(dir, "card");
    await mkdir(card);
    await writeFile(join(card, "small.jpg"), file);
    ftp = await startFtp(card);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it(`${SESSIONS} clients that hang up as soon as their file has arrived all get their session closed; MSC mode then comes at once`, async () => {
    const closedBefore = (ftp.device.program.stdout().match(/: closed/g) ?? []).length;
    for (let i = 0; i < SESSIONS; i++) {
      const raw = await ftpConnection(ftp.port);
      await logIn(raw, USER, PASSWORD);
      const data = await openData(raw);
      let got = Buffer.alloc(0);
      const arrived = new Promise<void>((resolve) =>
        data.on("data", (d: Buffer) => {
          got = Buffer.concat([got, d]);
          if (got.length >= file.length) resolve();
        }),
      );
      raw.socket.write("RETR small.jpg\r\n");
      await arrived;
      assert.ok(got.equals(file), `session ${i} got the file`);
      raw.socket.destroy();
      data.destroy();
    }
    await eventually(() => (ftp.device.program.stdout().match(/: closed/g) ?? []).length - closedBefore >= SESSIONS, 15_000);
    await ftp.enterMsc();
  });
});

/** The sendfile helpers alive now whose parent is `device` (/proc: their name and parent). */
async function helperPids(device: number): Promise<number[]> {
  const pids: number[] = [];
  for (const pid of (await readdir("/proc")).filter((name) => /^\d+$/.test(name))) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const [state, parent] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (comm === "sendfile-helper" && Number(parent) === device && state !== "Z") pids.push(Number(pid));
  }
  return pids;
}

describe("FTP downloads of large files (the sendfile helper)", () => {
  let dir: string;
  let ftp: Ftp;
  const big = randomBytes(12 * 1024 * 1024);
  /** How many sendfile helpers of the device run now. */
  const helpers = async (): Promise<number> => (await helperPids(ftp.device.program.child.pid!)).length;
  before(async () => {
    assert.ok(existsSync(join(repoRoot, "dist", "native", "sendfile-helper")), "npm ci builds the helper (native/build.sh): is there a C compiler?");
    dir = await tempDir();
    const card = join(dir, "card");
    await mkdir(card);
    await writeFile(join(card, "big.bin"), big);
    await writeFile(join(card, "huge.bin"), Buffer.alloc(64 * 1024 * 1024, 7));
    ftp = await startFtp(card);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("arrives byte for byte, whole and from a REST offset (curl -C -)", async () => {
    const whole = await curl(["-o", join(dir, "whole.bin"), `${ftp.url}/big.bin`]);
    assert.equal(whole.code, 0, whole.stderr);
    assert.ok((await readFile(join(dir, "whole.bin"))).equals(big));
    await writeFile(join(dir, "resumed.bin"), big.subarray(0, 3_000_001));
    const resumed = await curl(["-C", "-", "-o", join(dir, "resumed.bin"), `${ftp.url}/big.bin`]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.ok((await readFile(join(dir, "resumed.bin"))).equals(big));
    assert.equal(await helpers(), 0, "no helper left once the downloads are done");
  });

  it("ABOR stops it at once (426, then 226), and the session downloads again", async () => {
    const raw = await ftpConnection(ftp.port);
    try {
      await logIn(raw, USER, PASSWORD);
      const data = await openData(raw);
      data.pause(); // a client that does not read: the helper waits on a full socket
      assert.match(await raw.command("RETR huge.bin"), /^150/);
      await eventually(async () => (await helpers()) === 1, 10_000);
      const replies = raw.next((t) => /^226 /m.test(t));
      raw.socket.write("ABOR\r\n");
      assert.match(await replies, /^426 .*\r\n226 Abort successful\.\r\n$/m);
      await eventually(async () => (await helpers()) === 0, 10_000);
      data.destroy();
      const again = await curl(["-o", join(dir, "again.bin"), `${ftp.url}/big.bin`]);
      assert.equal(again.code, 0, again.stderr);
      assert.ok((await readFile(join(dir, "again.bin"))).equals(big));
    } finally {
      raw.socket.destroy();
    }
  });

  it("the device killed mid-download takes the helper with it (else it would hold the connection and the file)", async () => {
    const card = join(dir, "card-killed");
    await mkdir(card);
    await writeFile(join(card, "huge.bin"), Buffer.alloc(64 * 1024 * 1024, 7));
    const doomed = await startFtp(card);
    const raw = await ftpConnection(doomed.port);
    try {
      await logIn(raw, USER, PASSWORD);
      const data = await openData(raw);
      data.pause();
      assert.match(await raw.command("RETR huge.bin"), /^150/);
      let helper = 0;
      await eventually(async () => (helper = (await helperPids(doomed.device.program.child.pid!))[0] ?? 0) > 0, 10_000);
      doomed.device.program.child.kill("SIGKILL");
      await eventually(() => !processAlive(helper), 10_000);
      data.destroy();
    } finally {
      raw.socket.destroy();
      await doomed.stop();
    }
  });

  it("a helper that cannot run (not executable): the download goes through Node, byte for byte", async () => {
    // A copy of the install whose helper lost its x bit: the device must not answer 550 for every large file.
    const install = join(dir, "install");
    await cp(join(repoRoot, "bin"), join(install, "bin"), { recursive: true });
    await cp(join(repoRoot, "dist", "src"), join(install, "dist", "src"), { recursive: true });
    await cp(join(repoRoot, "dist", "native"), join(install, "dist", "native"), { recursive: true });
    await cp(join(repoRoot, "package.json"), join(install, "package.json"));
    await symlink(join(repoRoot, "node_modules"), join(install, "node_modules"));
    await chmod(join(install, "dist", "native", "sendfile-helper"), 0o644);
    const card = join(dir, "card-no-helper");
    await mkdir(card);
    await writeFile(join(card, "big.bin"), big);
    const other = await startFtp(card, [], {}, join(install, "bin", "framefi-device"));
    try {
      const r = await curl(["-o", join(dir, "through-node.bin"), `${other.url}/big.bin`]);
      assert.equal(r.code, 0, r.stderr);
      assert.ok((await readFile(join(dir, "through-node.bin"))).equals(big));
    } finally {
      await other.stop();
    }
  });

  it("a client that hangs up, and the card taken back (MSC), stop it; the card file is untouched", async () => {
    const slow = start("curl", ["-sS", "-v", "--limit-rate", "1M", "-o", join(dir, "cut.bin"), `${ftp.url}/huge.bin`]);
    await slow.waitFor(/150 Opening data connection/, 15_000);
    await eventually(async () => (await helpers()) === 1, 10_000);
    await slow.stop();
    await eventually(async () => (await helpers()) === 0, 10_000);

    const taken = start("curl", ["-sS", "-v", "--limit-rate", "1M", "-o", join(dir, "cut.bin"), `${ftp.url}/huge.bin`]);
    await taken.waitFor(/150 Opening data connection/, 15_000);
    await eventually(async () => (await helpers()) === 1, 10_000);
    await ftp.enterMsc();
    assert.notEqual(await taken.exited, 0);
    assert.equal(await helpers(), 0);
    assert.ok((await readFile(join(ftp.card, "huge.bin"))).equals(Buffer.alloc(64 * 1024 * 1024, 7)));
  });
});
