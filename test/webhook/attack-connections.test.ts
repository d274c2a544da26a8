// Connection floods. 500 connections from one address each send a request line and a 1 MB header
// block and never finish: beyond -max-connections-per-ip they are answered 503 at once, one address
// holds at most half of -max-request-memory, the server stays under 200 MB and a client from another
// address is served meanwhile. Then the caps one by one, with small values: the answer beyond them,
// the other addresses, a connection freed, keep-alive untouched.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, statusOf, writeHooks, type Server } from "./fixtures/harness.js";
import { rssMiB, watchRss } from "../fixtures/memory.js";

const FLOOD = 500;
const ATTACKER = "127.0.0.2";

let dir = "";
let hooks = "";

before(async () => {
  dir = await tempDir("webhook-connections-");
  hooks = await writeHooks(dir, [{ id: "sink", "execute-command": "/bin/true", "response-message": "taken" }]);
});

after(async () => {
  await removeDir(dir);
});

interface Client {
  socket: Socket;
  answer: string;
  closed: boolean;
}

/** A connection from `from` that sends `data` (a string or a request head in pieces) and records what comes back. */
function client(port: number, from: string, data: string | Buffer[] = []): { c: Client; sent: Promise<void> } {
  const socket = connect({ port, host: "127.0.0.1", localAddress: from });
  const c: Client = { socket, answer: "", closed: false };
  socket.on("data", (d: Buffer) => (c.answer += d.toString("latin1")));
  socket.on("error", () => undefined);
  const sent = new Promise<void>((resolve) => {
    socket.once("close", () => {
      c.closed = true;
      resolve();
    });
    socket.once("connect", async () => {
      const pieces = typeof data === "string" ? [Buffer.from(data)] : data;
      for (const p of pieces) {
        if (socket.destroyed || c.answer !== "") break;
        if (!socket.write(p)) await new Promise((r) => (socket.once("drain", r), socket.once("close", r)));
      }
      resolve();
    });
  });
  return { c, sent };
}

/**
 * A connection from `from` that the server has taken in: it answers a request on it, and the connection stays open
 * (keep-alive). One turned away (503) is tried again: the connection of startServer's readiness check counts until
 * the server has seen it close, which under load can come after the client has its answer.
 */
function admitted(port: number, from: string): Promise<Client> {
  return eventually(
    async () => {
      const { c } = client(port, from, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      await eventually(() => c.closed || /\r\n\r\nOK$/.test(c.answer), 10_000);
      if (!c.closed && statusOf(c.answer) === 200) return c;
      c.socket.destroy();
      return undefined;
    },
    10_000,
    50,
  );
}

describe("a flood of connections with 1 MB request heads, from one address", () => {
  let server: Server;
  before(async () => {
    server = await startServer(["-hooks", hooks]);
  });
  after(async () => {
    await server?.stop();
  });

  test(`${FLOOD} connections × 1 MB heads: 503 beyond 256, at most half the request memory held, bounded RSS, another client served`, async () => {
    const pid = server.proc.child.pid!;
    const before = rssMiB(pid);
    const rss = watchRss(pid);
    const line = Buffer.from(`X-Pad: ${"a".repeat(1000)}\r\n`);
    const block = Array.from({ length: 16 }, () => Buffer.concat(Array.from({ length: 64 }, () => line)));
    const head = Buffer.from("GET /hooks/sink HTTP/1.1\r\nHost: x\r\n");
    const floods = Array.from({ length: FLOOD }, () => client(server.port, ATTACKER, [head, ...block]));
    try {
      await Promise.all(floods.map((f) => f.sent));
      // Meanwhile a client from another address is served, a body included.
      const normal = await send(`${server.base}/hooks/sink`, { body: "small" });
      assert.equal(normal.status, 200);
      assert.equal(normal.text, "taken");

      const answers = floods.map((f) => f.c.answer);
      const turnedAway = answers.filter((a) => statusOf(a) === 503 && a.includes("too many open connections from your address"));
      const overMemory = answers.filter((a) => statusOf(a) === 503 && a.includes("too many unfinished requests"));
      const held = answers.filter((a) => a === "");
      assert.equal(turnedAway.length, FLOOD - 256, "connections beyond -max-connections-per-ip are answered 503 at once");
      assert.match(turnedAway[0]!, /\r\nRetry-After: 1\r\n/);
      assert.match(turnedAway[0]!, /\r\nConnection: close\r\n/);
      assert.equal(turnedAway.length + overMemory.length + held.length, FLOOD, "no other answer");
      // One address holds at most half of the 64 MiB of unfinished requests: about 21 heads of 1 MB, in storage that grows by half.
      assert.ok(held.length >= 1 && held.length <= 32, `${held.length} heads held`);
      const peak = rss.stop();
      console.log(
        `# RSS before ${before.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB; ${turnedAway.length} turned away at accept, ${overMemory.length} 503 for memory, ${held.length} heads held`,
      );
      assert.ok(peak < 200, `peak RSS ${peak.toFixed(0)} MiB`);
    } finally {
      rss.stop();
      for (const f of floods) f.c.socket.destroy();
    }
    // The flood gone, its address is served again.
    await eventually(
      async () => {
        const { c, sent } = client(server.port, ATTACKER, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        await sent;
        await eventually(() => c.closed, 5000);
        return statusOf(c.answer) === 200;
      },
      10_000,
      100,
    );
  });
});

describe("the caps, small", () => {
  test("-max-connections-per-ip 2: a third connection from the address gets 503 and is closed; other addresses and a freed slot are served", async () => {
    const server = await startServer(["-hooks", hooks, "-max-connections-per-ip", "2"]);
    const open: Client[] = [];
    try {
      for (let i = 0; i < 2; i++) open.push(await admitted(server.port, ATTACKER));
      const third = client(server.port, ATTACKER, "POST /hooks/sink HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx");
      await third.sent;
      await eventually(() => third.c.closed, 5000);
      assert.equal(statusOf(third.c.answer), 503);
      assert.match(third.c.answer, /\r\nRetry-After: 1\r\n/);
      assert.match(third.c.answer, /too many open connections from your address; close one or try again later$/);

      // Another address is not concerned.
      const other = await send(`${server.base}/hooks/sink`, { body: "x" });
      assert.equal(other.status, 200);

      // An open connection still works, and keeps working over many requests (keep-alive).
      const kept = open[0]!;
      const served = kept.answer.length;
      for (let i = 0; i < 50; i++) {
        const before = kept.answer.length;
        kept.socket.write("POST /hooks/sink HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx");
        await eventually(() => kept.answer.slice(before).endsWith("taken"), 5000);
      }
      assert.equal(kept.answer.slice(served).match(/HTTP\/1\.1 200 OK/g)?.length, 50);

      // One closed, the address may open one again.
      open[1]!.socket.destroy();
      await eventually(
        async () => {
          const { c, sent } = client(server.port, ATTACKER, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
          await sent;
          await eventually(() => c.closed, 5000);
          return statusOf(c.answer) === 200;
        },
        10_000,
        50,
      );
    } finally {
      for (const c of open) c.socket.destroy();
      await server.stop();
    }
  });

  test("-max-connections 3: a fourth connection, from any address, gets 503 and is closed", async () => {
    const server = await startServer(["-hooks", hooks, "-max-connections", "3"]);
    const open: Client[] = [];
    try {
      for (const from of [ATTACKER, ATTACKER, "127.0.0.3"]) open.push(await admitted(server.port, from));
      const fourth = client(server.port, "127.0.0.1", "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      await fourth.sent;
      await eventually(() => fourth.c.closed, 5000);
      assert.equal(statusOf(fourth.c.answer), 503);
      assert.match(fourth.c.answer, /too many open connections; close one or try again later$/);
      open.pop()!.socket.destroy();
      await eventually(async () => (await send(`${server.base}/`, { method: "GET" }).catch(() => undefined))?.status === 200, 10_000, 50);
    } finally {
      for (const c of open) c.socket.destroy();
      await server.stop();
    }
  });

  test("a flag value that is not a count is refused at start", async () => {
    await assert.rejects(
      startServer(["-hooks", hooks, "-max-connections-per-ip", "-1"]),
      /invalid value "-1" for flag -max-connections-per-ip: must be 0 or more/,
    );
  });
});
