// The sync's own FTP client (src/client/ftp.ts, ftp-control.ts): against bin/framefi-device in FTP mode, and
// against a scripted peer for what a well-behaved device never does (replies split or bundled, refusals, a
// server that drops the connection mid-transfer, no EPSV). The client is what is tested; the peer plays a server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { FtpPool, waitForFtp, type FtpConnection, type FtpTarget } from "../../src/client/ftp.js";
import { FtpLoginError } from "../../src/client/sync-errors.js";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";
import { startPeer, type Peer } from "./fixtures/ftp-peer.js";

const login = { user: "user", password: "password" };

async function connectTo(port: number, extra: Partial<FtpTarget> = {}): Promise<FtpConnection> {
  return (await waitForFtp({ host: "127.0.0.1", ports: [port], ...login, ...extra }, 5_000)).connection;
}

/** The rejection of `p` (fails when it resolves). */
async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  assert.fail("expected a failure");
}

describe("the sync's FTP client against bin/framefi-device", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice();
    await fetch(`${dev.url}/mode/ftp`, { method: "POST" });
    await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode !== "USB MSC");
  });
  after(async () => dev?.stop());

  for (const pipeline of [false, true]) {
    test(`store, set times and list, ${pipeline ? "MFMT pipelined with the next EPSV" : "one command at a time"}`, async () => {
      const target: FtpTarget = { host: "127.0.0.1", ports: [dev.ftpPort], ...login, pipeline };
      const { connection, port } = await waitForFtp(target, 15_000);
      const pool = await FtpPool.open(connection, target, port, 2);
      try {
        assert.equal(pool.canSetTimes, true, "the device's FEAT (a multi-line reply) lists MFMT");
        const dir = `/p${pipeline ? 1 : 0}`;
        await connection.ensureDir(`${dir}/sub`);
        const names = Array.from({ length: 6 }, (_, i) => `f${i}.jpg`);
        const when = Date.UTC(2024, 0, 2, 3, 4, 5);
        await pool.each(names, async (conn, name) => {
          await conn.store(Buffer.alloc(100_000 + names.indexOf(name), name), `${dir}/sub/${name}`);
          assert.equal(await conn.setMtime(`${dir}/sub/${name}`, when), true);
        });
        const listed = await connection.list(`${dir}/sub`);
        assert.deepEqual([...listed.keys()].sort(), names);
        for (const [i, name] of names.entries()) {
          assert.deepEqual(listed.get(name), { type: "file", size: 100_000 + i, mtimeMs: when });
          assert.deepEqual(await readFile(join(dev.card, dir, "sub", name)), Buffer.alloc(100_000 + i, name));
        }
        assert.equal((await connection.list(dir)).get("sub")?.type, "dir");
      } finally {
        pool.close();
      }
    });
  }

  test("a STOR the server refuses (no such folder) fails alone: the same connection stores the next file", async () => {
    const conn = await connectTo(dev.ftpPort, { pipeline: true });
    try {
      const e = await rejection(conn.store(Buffer.from("x"), "/no/such/folder/a.jpg"));
      assert.equal(e.name, "FtpReplyError");
      assert.match(e.message, /^5\d\d /);
      await conn.store(Buffer.from("after"), "/after.jpg");
      assert.equal(conn.closed, false);
      assert.equal((await stat(join(dev.card, "after.jpg"))).size, 5);
    } finally {
      conn.close();
    }
  });

  test("a wrong password: the login error that tells to pass --ftp-user", async () => {
    const e = await rejection(waitForFtp({ host: "127.0.0.1", ports: [dev.ftpPort], user: "user", password: "wrong" }, 5_000));
    assert.ok(e instanceof FtpLoginError);
    assert.match(e.message, /refused user "user" \(530\)\. Pass the device's FTP user and password with --ftp-user USER:PASSWORD\.$/);
  });
});

describe("the sync's FTP client against a scripted peer", () => {
  let peer: Peer | undefined;
  after(async () => peer?.close());
  const use = async (p: Promise<Peer>): Promise<Peer> => {
    await peer?.close();
    peer = await p;
    return peer;
  };

  test("replies split into single bytes, a multi-line greeting and FEAT, several replies in one write", async () => {
    const p = await use(
      startPeer((verb, _arg, s) => {
        if (verb === "FEAT") {
          const text = "211-Features:\r\n MFMT\r\n211-still not the end\r\n MLST type*;size*;modify*;\r\n211 End\r\n";
          for (const ch of text) s.write(ch);
          return true;
        }
        if (verb === "USER") {
          for (const ch of "331 password please\r\n") s.write(ch);
          return true;
        }
        return false;
      }),
    );
    const conn = await connectTo(p.port);
    try {
      assert.deepEqual([...conn.features].sort(), ["MFMT", "MLST"]);
      await conn.store(Buffer.from("hello"), "/a.jpg");
      // The peer answers MLSD's 150 and 226 in one write.
      const listed = await conn.list("/");
      assert.deepEqual(listed.get("a.jpg"), { type: "file", size: 5, mtimeMs: Date.UTC(2024, 0, 2, 3, 4, 5) });
    } finally {
      conn.close();
    }
  });

  test("a server not known to be ours gets one command at a time; ours gets MFMT and the next EPSV together", async () => {
    for (const pipeline of [false, true]) {
      // With pipelining, the peer holds MFMT's answer until the next EPSV is there: only a pipelining client goes on.
      let heldMfmt: (() => void) | undefined;
      const p = await use(
        startPeer((verb, arg, s) => {
          if (verb === "MFMT" && pipeline) {
            heldMfmt = () => s.write(`213 Modify=${arg.slice(0, 14)}; ok\r\n`);
            return true;
          }
          if (verb === "EPSV" && heldMfmt) {
            heldMfmt();
            heldMfmt = undefined;
          }
          return false;
        }),
      );
      const conn = await connectTo(p.port, { pipeline });
      try {
        for (const name of ["a", "b", "c"]) {
          await conn.store(Buffer.from(name), `/${name}.jpg`);
          assert.equal(await conn.setMtime(`/${name}.jpg`, Date.UTC(2024, 0, 1)), true);
        }
      } finally {
        conn.close();
      }
      assert.equal(p.files.size, 3);
      const bundled = p.chunks.filter((lines) => lines.length > 1);
      if (pipeline) assert.ok(bundled.some((lines) => lines[0]!.startsWith("MFMT ") && lines[1] === "EPSV"), JSON.stringify(p.chunks));
      else assert.deepEqual(bundled, [], "no command sent before the previous one was answered");
    }
  });

  test("EPSV refused: PASV from then on", async () => {
    const p = await use(startPeer((verb, _arg, s) => (verb === "EPSV" ? (s.write("500 EPSV not understood\r\n"), true) : false)));
    const conn = await connectTo(p.port, { pipeline: true });
    try {
      for (const name of ["a", "b"]) await conn.store(Buffer.from(name), `/${name}.jpg`);
    } finally {
      conn.close();
    }
    assert.deepEqual([...p.files.keys()], ["/a.jpg", "/b.jpg"]);
    assert.deepEqual(p.commands.filter((c) => /^(EPSV|PASV)$/.test(c)), ["EPSV", "PASV", "PASV"]);
  });

  test("4xx before and after the transfer leaves the connection usable", async () => {
    let n = 0;
    const p = await use(
      startPeer(async (verb, _arg, s) => {
        if (verb !== "STOR") return false;
        n++;
        if (n === 1) return (s.write("553 not allowed\r\n"), true);
        if (n === 2) {
          s.write("150 go\r\n");
          const data = await s.data!;
          data.resume();
          await new Promise((r) => data.once("end", r));
          data.end();
          return (s.write("451 disk trouble\r\n"), true);
        }
        return false;
      }),
    );
    const conn = await connectTo(p.port);
    try {
      assert.equal((await rejection(conn.store(Buffer.from("1"), "/one.jpg"))).message, "553 not allowed");
      assert.equal((await rejection(conn.store(Buffer.alloc(300_000), "/two.jpg"))).message, "451 disk trouble");
      await conn.store(Buffer.from("3"), "/three.jpg");
    } finally {
      conn.close();
    }
    assert.deepEqual([...p.files.keys()], ["/three.jpg"]);
  });

  test("a server that drops the connection mid-transfer: a one-line error, and the connection is closed", async () => {
    const p = await use(
      startPeer(async (verb, _arg, s) => {
        if (verb !== "STOR") return false;
        s.write("150 go\r\n");
        const data = await s.data!;
        await new Promise((r) => data.once("data", r));
        data.resetAndDestroy();
        s.control.destroy();
        return true;
      }),
    );
    const conn = await connectTo(p.port);
    const e = await rejection(conn.store(Buffer.alloc(900_000), "/big.jpg"));
    assert.equal(e.name, "FtpConnectionError");
    assert.doesNotMatch(e.message, /\n/);
    assert.match(e.message, /127\.0\.0\.1:\d+/);
    assert.equal(conn.closed, true);
  });

  test("a server without MLSD: LIST, read as a Unix listing", async () => {
    const p = await use(
      startPeer(
        async (verb, _arg, s) => {
          if (verb !== "LIST") return false;
          s.write("150 listing\r\n");
          (await s.data!).end("drwxr-xr-x 1 ftp ftp 0 Jan 02 2024 album\r\n-rw-r--r-- 1 ftp ftp 12345 Jan 02 2024 a.jpg\r\n");
          s.write("226 done\r\n");
          return true;
        },
        ["EPSV", "MFMT"],
      ),
    );
    const conn = await connectTo(p.port);
    try {
      const listed = await conn.list("/");
      assert.deepEqual([...listed].map(([name, e]) => [name, e.type, e.size]), [["album", "dir", 0], ["a.jpg", "file", 12345]]);
    } finally {
      conn.close();
    }
    assert.ok(p.commands.includes("LIST /"), p.commands.join(", "));
  });

  test("a refused login", async () => {
    const p = await use(startPeer((verb, _arg, s) => (verb === "PASS" ? (s.write("530 Login incorrect.\r\n"), true) : false)));
    const e = await rejection(connectTo(p.port));
    assert.ok(e instanceof FtpLoginError);
    assert.match(e.message, /refused user "user" \(530\)/);
  });

  test("a server that is not FTP: a one-line error naming what it sent", async () => {
    const p = await use(startPeer());
    const { createServer } = await import("node:net");
    const http = createServer((s) => s.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    try {
      const port = (http.address() as { port: number }).port;
      const e = await rejection(waitForFtp({ host: "127.0.0.1", ports: [port], ...login }, 0));
      assert.match(e.message, /No FTP server answered at 127\.0\.0\.1 port \d+ within 0 s \(\d+: The FTP server sent "HTTP\/1\.1 400 Bad Request", which is not an FTP reply; check the FTP port\.\)/);
    } finally {
      http.close();
      await p.close();
    }
  });
});
