// Fire-and-forget hooks have a default limit. A flood of pipelined requests to
// a hook that answers at once runs at most -max-background (8) of its commands at once, queues
// -max-queue (100) more, answers the rest 429, stays under 200 MB, and has no command left
// running long after the flood.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { watchRss } from "../fixtures/memory.js";

const CONNECTIONS = 16;
const PER_CONNECTION = 1000;

let dir = "";
let server: Server;

before(async () => {
  dir = await tempDir("webhook-background-");
  const hooks = await writeHooks(dir, [
    { id: "later", "execute-command": "/bin/sleep", "pass-arguments-to-command": [{ source: "string", name: "0.2" }], "response-message": "queued" },
  ]);
  server = await startServer(["-hooks", hooks, "-metrics"]);
});

after(async () => {
  await server?.stop();
  await removeDir(dir);
});

/** Sends `n` pipelined requests on one connection; resolves with the status of each answer. */
function pipelined(port: number, n: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1" });
    const statuses: number[] = [];
    let text = "";
    socket.on("error", reject);
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      for (let m = /HTTP\/1\.1 (\d{3}) /.exec(text); m; m = /HTTP\/1\.1 (\d{3}) /.exec(text)) {
        statuses.push(Number(m[1]));
        text = text.slice(m.index + m[0].length);
      }
      if (statuses.length === n) {
        socket.destroy();
        resolve(statuses);
      }
    });
    socket.write("POST /hooks/later HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".repeat(n));
  });
}

/** The metric's value for hook "later" (0 when absent). */
async function metric(name: string): Promise<number> {
  const text = (await send(`${server.base}/metrics`, { method: "GET" })).text;
  const m = new RegExp(`^${name}\\{hook="later"[^}]*\\} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

describe("fire-and-forget flood", () => {
  test(`${CONNECTIONS * PER_CONNECTION} requests at once: at most 8 commands run, 100 wait, the rest get 429; memory bounded; all done soon after`, async () => {
    const rss = watchRss(server.proc.child.pid!);
    let maxRunning = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) maxRunning = Math.max(maxRunning, await metric("webhook_running_commands"));
    })();
    const statuses = (await Promise.all(Array.from({ length: CONNECTIONS }, () => pipelined(server.port, PER_CONNECTION)))).flat();
    const accepted = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 429).length;
    assert.equal(accepted + refused, statuses.length, `other statuses: ${[...new Set(statuses)].join(", ")}`);
    assert.ok(refused > 0, "nothing was refused");
    // Every accepted request runs its command exactly once, and all of them finish.
    await eventually(async () => (await metric("webhook_executions_total")) === accepted, 60_000, 200);
    sampling = false;
    await sampler;
    const peak = rss.stop();
    console.log(
      `# ${statuses.length} fire-and-forget requests: ${accepted} accepted, ${refused} answered 429, at most ${maxRunning} commands at once, peak RSS ${peak.toFixed(0)} MiB`,
    );
    assert.ok(maxRunning <= 8, `${maxRunning} commands ran at once`);
    assert.equal(await metric("webhook_running_commands"), 0);
    assert.ok(peak < 200, `peak RSS ${peak.toFixed(0)} MiB`);
  });
});
