// Attack: a few connections pipeline thousands of small POSTs to a hook that answers with its command's output and never read
// their answers. The same flood of GET / stays near 70 MB; to a hook, the server's memory grows past
// 300 MB within seconds (over 600 MB with 400 batches, still ~250 MB after the clients left) (the standard is under 200 MB) while it keeps accepting more.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

let dir = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-attack-transport2-");
  const hooks = await writeHooks(dir, [
    {
      id: "echo",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "entire-payload" }],
    },
  ]);
  s = await startServer(["-hooks", hooks]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

const rssMB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

test("pipelined POSTs to a captured-output hook from clients that never read their answers keep the server under 200 MB", async () => {
  const one = "POST /hooks/echo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  const chunk = Buffer.from(one.repeat(2000));
  const socks: Socket[] = [];
  for (let k = 0; k < 8; k++) {
    const sock = connect(s.port, "127.0.0.1");
    sock.on("error", () => undefined);
    sock.pause(); // never reads an answer
    socks.push(sock);
    let n = 0;
    const write = (): void => {
      while (n < 400) {
        n++;
        if (!sock.write(chunk)) {
          sock.once("drain", write);
          return;
        }
      }
    };
    write();
  }
  const pid = s.proc.child.pid!;
  let max = 0;
  const t0 = Date.now();
  try {
    while (Date.now() - t0 < 8_000) {
      max = Math.max(max, rssMB(pid));
      if (max > 300) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    for (const sock of socks) sock.destroy();
  }
  const r = await send(`${s.base}/`, { timeoutMs: 10_000 });
  assert.equal(r.status, 200);
  assert.ok(max < 200, `server RSS reached ${max.toFixed(0)} MB`);
});
