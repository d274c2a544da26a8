// Unfinished request bodies. 60 connections each send 10 MB minus one byte of a
// 10 MB body and stop: the server holds at most -max-request-memory of them (the others are answered
// 503), stays under 200 MB, answers a normal request meanwhile, and drops each stalled body with
// 408 once it has sent nothing for -max-body-idle.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, statusOf, writeHooks, type Server } from "./fixtures/harness.js";
import { rssMiB, watchRss } from "../fixtures/memory.js";

const CONNECTIONS = 60;
const BODY = 10 * 1024 * 1024;

let dir = "";
let server: Server;

before(async () => {
  dir = await tempDir("webhook-bodies-");
  const hooks = await writeHooks(dir, [
    { id: "sink", "execute-command": "/bin/true", "response-message": "taken" },
    // Answers at once; its command (which could read the body) runs for a while after.
    { id: "slow", "execute-command": "/bin/sleep", "pass-arguments-to-command": [{ source: "string", name: "2" }], "response-message": "taken" },
  ]);
  server = await startServer(["-hooks", hooks, "-max-body-idle", "3s"]);
});

after(async () => {
  await server?.stop();
  await removeDir(dir);
});

interface Flood {
  socket: Socket;
  answer: string;
  /** Every byte this client meant to send was handed to the kernel (or the server cut it off). */
  sent: Promise<void>;
}

/** One connection sending a body of BODY bytes but only BODY - 1 of them, then nothing. */
function unfinished(port: number, chunk: Buffer): Flood {
  const socket = connect({ port, host: "127.0.0.1" });
  const flood: Flood = { socket, answer: "", sent: Promise.resolve() };
  socket.on("data", (d: Buffer) => (flood.answer += d.toString("latin1")));
  socket.on("error", () => undefined);
  flood.sent = new Promise((resolve) => {
    socket.once("close", () => resolve());
    socket.once("connect", async () => {
      socket.write(`POST /hooks/sink HTTP/1.1\r\nHost: x\r\nContent-Length: ${BODY}\r\n\r\n`);
      let left = BODY - 1;
      while (left > 0 && !socket.destroyed && flood.answer === "") {
        const piece = chunk.subarray(0, Math.min(chunk.length, left));
        left -= piece.length;
        if (!socket.write(piece)) await new Promise((r) => (socket.once("drain", r), socket.once("close", r)));
      }
      resolve();
    });
  });
  return flood;
}

describe("unfinished request bodies", () => {
  test(`${CONNECTIONS} × 10 MB unfinished bodies: bounded memory, 503 beyond the budget, a normal request still answered, stalled ones dropped`, async () => {
    const pid = server.proc.child.pid!;
    const before = rssMiB(pid);
    const rss = watchRss(pid);
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    const floods = Array.from({ length: CONNECTIONS }, () => unfinished(server.port, chunk));
    try {
      await attack(floods, before, rss);
    } finally {
      for (const f of floods) f.socket.destroy();
    }
    const again = await send(`${server.base}/hooks/sink`, { body: "x".repeat(BODY) });
    assert.equal(again.status, 200, "a full 10 MB body is taken once the stalled ones are gone");
  });
});

async function attack(floods: Flood[], before: number, rss: { stop(): number }): Promise<void> {
  await Promise.all(floods.map((f) => f.sent));
  // Meanwhile: the server answers.
  const normal = await send(`${server.base}/hooks/sink`, { body: "small" });
  assert.equal(normal.status, 200);
  assert.equal(normal.text, "taken");
  const refused = floods.filter((f) => statusOf(f.answer) === 503);
  assert.ok(refused.length > 0, "no body was refused for the budget");
  assert.match(refused[0]!.answer, /Retry-After: 1/);
  const held = floods.filter((f) => statusOf(f.answer) !== 503);
  assert.ok(held.length > 0 && held.length <= 7, `${held.length} bodies held`);
  // The stalled bodies are dropped with 408 after -max-body-idle, and their memory is free again.
  await eventually(() => held.every((f) => statusOf(f.answer) === 408), 20_000, 100);
  const peak = rss.stop();
  console.log(`# RSS before ${before.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB; ${refused.length} answered 503, ${held.length} held then 408`);
  assert.ok(peak < 200, `peak RSS ${peak.toFixed(0)} MiB`);
}

describe("bodies of requests whose commands still run", () => {
  test("30 complete 10 MB bodies to a hook that answers at once: the bodies count until their commands are done; bounded memory", async () => {
    const pid = server.proc.child.pid!;
    const rss = watchRss(pid);
    const body = Buffer.alloc(BODY, 0x62);
    const replies = await Promise.all(Array.from({ length: 30 }, () => send(`${server.base}/hooks/slow`, { body, timeoutMs: 60_000 })));
    const statuses = replies.map((r) => r.status);
    const taken = statuses.filter((s) => s === 200).length;
    assert.equal(taken + statuses.filter((s) => s === 503).length, 30, statuses.join(" "));
    assert.ok(taken >= 1 && taken <= 7, `${taken} bodies taken`);
    // Once those commands are done, their memory is free for the next bodies.
    await eventually(async () => (await send(`${server.base}/hooks/sink`, { body })).status === 200, 30_000, 250);
    const peak = rss.stop();
    console.log(`# 30 × 10 MB bodies for commands that run after the answer: ${taken} taken, the rest 503, peak RSS ${peak.toFixed(0)} MiB`);
    assert.ok(peak < 200, `peak RSS ${peak.toFixed(0)} MiB`);
  });
});
