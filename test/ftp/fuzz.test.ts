// Seeded fuzz of the FTP command loop: random and mutated command lines, before and after login, sent over real
// sockets to bin/framefi-device in FTP mode. The device must stay up, keep answering and keep its memory bounded.
// A failure names its seed: FUZZ_SEED=<seed> npm test replays it; npm run fuzz runs many more cases.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { removeDir, tempDir, within } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";
import { curl, PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection } from "./fixtures/raw.js";
import { rssMiB } from "../fixtures/memory.js";

const VERBS = [
  "USER",
  "PASS",
  "QUIT",
  "FEAT",
  "SYST",
  "NOOP",
  "OPTS",
  "AUTH",
  "HELP",
  "PWD",
  "XPWD",
  "CWD",
  "CDUP",
  "TYPE",
  "MODE",
  "STRU",
  "PASV",
  "EPSV",
  "PORT",
  "EPRT",
  "REST",
  "ABOR",
  "LIST",
  "NLST",
  "MLSD",
  "MLST",
  "SIZE",
  "MDTM",
  "MFMT",
  "RETR",
  "STOR",
  "APPE",
  "DELE",
  "MKD",
  "RMD",
  "RNFR",
  "RNTO",
  "ALLO",
  "SITE",
  "REIN",
  "ACCT",
  "XYZZY",
  "",
];

function argument(r: Random, sinkPort: number): string {
  const pick = r.int(16);
  switch (pick) {
    case 0:
      return "";
    case 1:
      return r.pick(["/", ".", "..", "../..", "/../../etc/passwd", "*", "-la", "~", "//", "a/../../b"]);
    case 2:
      return r.pick([".framefi-upload-1.part", ".x.ftp-partial-0000abcd", "album/.framefi-upload-ff.part", "dir/sub"]);
    case 3:
      return "a".repeat(r.int(5) === 0 ? 9000 : r.int(600));
    case 4:
      return r.bytes(1 + r.int(40)).toString("latin1");
    case 5:
      return String(r.pick([0, 1, -1, 2 ** 53, 1e21, NaN])) + r.pick(["", " R 5", "x"]);
    case 6:
      return r.pick(["I", "A", "L 8", "E", "A N", "S", "F", "Z", "B"]);
    case 7:
      return r.pick(["UTF8 ON", "MLST size;type;", "MLST", "utf-8", "FOO BAR"]);
    case 8:
      return r.pick(["127,0,0,1,0,21", "127,0,0,1,300,1", "1,2,3", `127,0,0,1,${sinkPort >> 8},${sinkPort & 255}`]);
    case 9:
      return r.pick(["|1|127.0.0.1|21|", "|2|::1|1|", "||||", `|1|127.0.0.1|${sinkPort}|`, "|3|x|1|"]);
    case 10:
      return r.pick(["20240101000000 a.jpg", "99999999999999 /", "2024 x", "20240101000000"]);
    case 11:
      return "é漢字🙂\u0000\u007f";
    case 12:
      return `f${r.int(4)}.jpg`;
    case 13:
      return `d${r.int(3)}`;
    case 14:
      return "\xff\xf4\xff\xf2" + r.pick(["ABOR", "x"]);
    default:
      return "x y  z\t";
  }
}

function line(r: Random, sinkPort: number): string {
  const verb = r.pick(VERBS);
  let text = `${r.int(4) === 0 ? verb.toLowerCase() : verb}${r.int(6) === 0 ? "" : " "}${argument(r, sinkPort)}`;
  if (r.int(5) === 0) {
    // Mutate: flip, cut or repeat a few bytes.
    const b = Buffer.from(text, "latin1");
    for (let i = r.int(4); i >= 0 && b.length > 0; i--) b[r.int(b.length)] = r.int(256);
    text = b.toString("latin1");
    if (r.int(3) === 0) text = text.slice(0, r.int(text.length + 1));
    if (r.int(4) === 0) text = text.repeat(1 + r.int(5));
  }
  return text + r.pick(["\r\n", "\r\n", "\r\n", "\n", "\r", ""]);
}

describe("FTP mode: command loop fuzz", () => {
  let dir: string;
  let ftp: Ftp;
  const sink = createServer((s) => s.destroy());
  let sinkPort = 0;
  before(async () => {
    dir = await tempDir("framefi-ftp-fuzz-");
    await mkdir(join(dir, "card"));
    ftp = await startFtp(join(dir, "card"));
    await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
    sinkPort = (sink.address() as { port: number }).port;
  });
  after(async () => {
    sink.close();
    await ftp?.stop();
    await removeDir(dir);
  });

  it("cases the fuzzer found answer with a clear code", async () => {
    const c = await ftpConnection(ftp.port, "127.2.0.1");
    await c.command(`USER ${USER}`);
    await c.command(`PASS ${PASSWORD}`);
    // FUZZ_SEED=7 FUZZ_CASES=600: a name over 255 bytes was "451 Local error".
    assert.equal(await c.command(`MKD ${"a".repeat(300)}`), "553 File name not allowed: a name is longer than 255 bytes or the path too long.");
    c.socket.destroy();
  });

  it("random and mutated command lines never crash the device or grow its memory", async () => {
    const seed = fuzzSeed(0x46545031);
    const cases = fuzzCases(60);
    const r = seeded(seed);
    let maxRss = 0;
    const runCase = async (n: number, r: Random): Promise<void> => {
      // Each case from its own loopback address, so failed logins of one do not slow the next.
      const c = await ftpConnection(ftp.port, `127.1.${(n >> 8) & 255}.${n & 255 || 1}`);
      if (r.int(2) === 0) {
        await c.command(`USER ${USER}`, 5_000);
        await c.command(`PASS ${PASSWORD}`, 5_000);
      }
      const lines = Array.from({ length: 1 + r.int(30) }, () => line(r, sinkPort)).join("");
      c.socket.write(Buffer.from(lines, "latin1"));
      c.socket.write("\r\nQUIT\r\n");
      // The server answers or closes; a data command may wait for a data connection that never comes.
      await within(c.closed, 1_500, undefined);
      c.socket.destroy();
    };
    for (let n = 0; n < cases; n += 4) {
      const batch = Array.from({ length: Math.min(4, cases - n) }, () => seeded(r.int(2 ** 32)));
      await Promise.all(batch.map((cr, i) => runCase(n + i, cr)));
      maxRss = Math.max(maxRss, Math.round(rssMiB(ftp.device.program.child.pid!)));
      assert.equal(ftp.device.program.child.exitCode, null, `seed ${seed}: the device exited`);
    }
    const unexpected = ftp.device.program
      .stdout()
      .split("\n")
      .filter((l) => /ftp \S+: \S+ failed: /.test(l));
    assert.deepEqual(unexpected, [], `seed ${seed}: commands that failed with an unexpected error (451)`);
    console.log(`ftp fuzz: seed ${seed}, ${cases} connections, device RSS at most ${maxRss} MB`);
    assert.ok(maxRss < 200, `seed ${seed}: device RSS ${maxRss} MB`);
    const list = await curl(["-l", `${ftp.url}/`]);
    assert.equal(list.code, 0, `seed ${seed}: the device still serves FTP: ${list.stderr}`);
    const status = await fetch(`${ftp.device.url}/`);
    assert.equal(status.status, 200, `seed ${seed}: the web API still answers`);
  });
});
