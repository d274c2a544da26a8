// A command's output is never held whole. Captured output keeps only its last
// -max-output bytes after a line saying what was cut (four commands printing 300 MB at once stay
// under 200 MB); a streamed answer to a client that does not read pauses the command instead of
// queueing its output.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, shHook, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { rssMiB, watchRss } from "../fixtures/memory.js";

const MiB = 1024 * 1024;
let dir = "";
let server: Server;

before(async () => {
  dir = await tempDir("webhook-output-");
  const hooks = await writeHooks(dir, [
    shHook("print-300mb", "head -c 300000000 /dev/zero | tr '\\0' x; printf 'THE-END\\n'"),
    shHook("print-small", "printf 'all of it\\n'"),
    // 300 MiB in 1 MiB steps, counting the steps in a file: how far the command got.
    {
      id: "stream-300mib",
      "execute-command": "/bin/sh",
      "stream-command-output": true,
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: `i=0; while [ $i -lt 300 ]; do head -c ${MiB} /dev/zero; i=$((i+1)); echo $i > "$0"; done; printf '\\nDONE\\n'` },
        { source: "string", name: join(dir, "progress") },
      ],
    },
  ]);
  server = await startServer(["-hooks", hooks]);
});

after(async () => {
  await server?.stop();
  await removeDir(dir);
});

describe("captured output", () => {
  test("four commands printing 300 MB at once: each answer is the last 1 MiB after the cut marker; RSS stays under 200 MB", async () => {
    const pid = server.proc.child.pid!;
    const rss = watchRss(pid);
    const replies = await Promise.all(Array.from({ length: 4 }, () => send(`${server.base}/hooks/print-300mb`, { timeoutMs: 120_000 })));
    const peak = rss.stop();
    console.log(`# 4 × 300 MB captured output: peak RSS ${peak.toFixed(0)} MiB`);
    for (const r of replies) {
      assert.equal(r.status, 200);
      const marker = `[webhook: output cut: the first ${300_000_008 - MiB} bytes were dropped, the last ${MiB} follow (-max-output)]\n`;
      assert.equal(r.text.slice(0, marker.length), marker);
      assert.equal(r.body.length, marker.length + MiB);
      assert.match(r.text.slice(marker.length), /^x+THE-END\n$/);
    }
    assert.ok(peak < 200, `peak RSS ${peak.toFixed(0)} MiB`);
  });

  test("output within -max-output is answered whole, without a marker", async () => {
    const r = await send(`${server.base}/hooks/print-small`);
    assert.equal(r.text, "all of it\n");
  });
});

describe("streamed output", () => {
  test("a client that stops reading pauses the command; it finishes once the client reads; RSS stays under 200 MB", async () => {
    const pid = server.proc.child.pid!;
    const rss = watchRss(pid);
    const progress = (): number => {
      try {
        return Number(readFileSync(join(dir, "progress"), "utf8"));
      } catch {
        return 0;
      }
    };
    const socket = connect({ port: server.port, host: "127.0.0.1" });
    let received = 0;
    let tail = "";
    const ended = new Promise<void>((resolve) => socket.once("end", resolve));
    socket.on("data", (d: Buffer) => {
      received += d.length;
      tail = (tail + d.toString("latin1")).slice(-64);
    });
    socket.write(`POST /hooks/stream-300mib HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    socket.pause();
    try {
      // The command gets going, then stops: it writes nothing while nobody reads.
      await eventually(() => progress() >= 2, 30_000);
      let last = -1;
      await eventually(
        () => {
          const now = progress();
          const still = now === last;
          last = now;
          return still;
        },
        30_000,
        1000,
      );
      const held = progress();
      assert.ok(held < 100, `the command wrote ${held} MiB to a client that reads nothing`);
      console.log(`# streamed to a client that does not read: the command stopped after ${held} MiB, server RSS ${rssMiB(pid).toFixed(0)} MiB`);
      socket.resume();
      await ended;
    } finally {
      socket.destroy();
    }
    const peak = rss.stop();
    console.log(`# streamed 300 MiB to a slow client: peak RSS ${peak.toFixed(0)} MiB`);
    assert.equal(progress(), 300);
    assert.ok(received > 300 * MiB, `received ${received} bytes`);
    assert.ok(tail.endsWith("\nDONE\n\r\n0\r\n\r\n"), JSON.stringify(tail));
    assert.ok(peak < 200, `peak RSS ${peak.toFixed(0)} MiB`);
  });
});
