// Huge X-Request-Id values (issue 38 item 6) against the real bin/webhook with -x-request-id and
// no -x-request-id-limit: as job ids they are cut, so 1 MB ids neither fill memory nor the jobs
// file nor X-Job-Id, and a 5 000-byte id does not make nats-server drop the instance.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks } from "./fixtures/harness.js";
import { startNats } from "./fixtures/nats.js";

/** A process's peak resident memory in MB (VmHWM). */
function peakRssMb(pid: number): number {
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  return kb / 1024;
}

/** An id of `n` bytes, different for each `i` only at its end (so cut ids collide). */
const longId = (n: number, i: number): string => "r".repeat(n - 8) + String(i).padStart(8, "0");

describe("X-Request-Id as a job id is bounded, whatever -x-request-id-limit says", () => {
  test("-jobs -jobs-file: 150 requests with 1 MB ids keep RSS under 200 MB, X-Job-Id and the file small; ids cut alike stay apart", async () => {
    const dir = await tempDir("webhook-ids-");
    const file = join(dir, "jobs.json");
    const hooks = await writeHooks(dir, [{ id: "t", "execute-command": "/bin/true" }]);
    const s = await startServer(["-hooks", hooks, "-x-request-id", "-jobs", "-jobs-file", file]);
    try {
      const ids = new Set<string>();
      for (let i = 0; i < 150; i++) {
        const r = await send(`${s.base}/hooks/t`, { headers: { "X-Request-Id": longId(1_000_000, i) } });
        assert.equal(r.status, 200);
        const id = String(r.headers["x-job-id"]);
        assert.ok(id.length <= 140, `X-Job-Id of ${id.length} bytes`);
        assert.ok(id.startsWith("rrrr"), "the id is the request id's beginning");
        ids.add(id);
      }
      assert.equal(ids.size, 150);
      await eventually(async () => (await readFile(file, "utf8").catch(() => "")).includes(`"id":"${[...ids].at(-1)}"`), 5_000);
      assert.ok(statSync(file).size < 200_000, `jobs file of ${statSync(file).size} bytes`);
      const rss = peakRssMb(s.proc.child.pid!);
      assert.ok(rss < 200, `peak RSS ${rss.toFixed(0)} MB`);
    } finally {
      await s.stop();
      await removeDir(dir);
    }
  });

  test("-queue: 5 000-byte ids are queued and run; the NATS connection holds, so the requests around them get 200", async () => {
    const dir = await tempDir("webhook-ids-queue-");
    const nats = await startNats();
    const log = join(dir, "ran");
    const hooks = join(dir, "hooks.json");
    await writeFile(
      hooks,
      JSON.stringify([
        {
          id: "t",
          "execute-command": "/bin/sh",
          "pass-arguments-to-command": [
            { source: "string", name: "-c" },
            { source: "string", name: 'echo ran >> "$1"' },
            { source: "string", name: "sh" },
            { source: "string", name: log },
          ],
        },
        {
          id: "once",
          "execute-command": "/bin/sh",
          "pass-arguments-to-command": [
            { source: "string", name: "-c" },
            { source: "string", name: 'echo once >> "$1"' },
            { source: "string", name: "sh" },
            { source: "string", name: log },
          ],
          deduplicate: { id: { source: "header", name: "X-Delivery" } },
        },
      ]),
    );
    const s = await startServer(["-hooks", hooks, "-x-request-id", "-queue", nats.url]);
    try {
      for (let i = 0; i < 10; i++) {
        const headers: Record<string, string> = i % 2 === 0 ? { "X-Request-Id": longId(5_000, i) } : {};
        const r = await send(`${s.base}/hooks/t`, { headers });
        assert.equal(r.status, 200, `request ${i}: ${r.status} ${r.text}`);
        assert.ok(String(r.headers["x-job-id"]).length <= 140);
      }
      const delivery = { "X-Delivery": longId(5_000, 0) };
      const first = await send(`${s.base}/hooks/once`, { headers: delivery });
      assert.equal(first.status, 200, `a 5 000-byte delivery id: ${first.status} ${first.text}`);
      assert.equal(
        (await send(`${s.base}/hooks/once`, { headers: delivery })).headers["x-job-id"],
        first.headers["x-job-id"],
        "the same delivery is the same job",
      );
      assert.equal((await send(`${s.base}/hooks/t`)).status, 200);
      await eventually(async () => (await readFile(log, "utf8").catch(() => "")).split("\n").length > 12, 20_000);
      assert.doesNotMatch(s.logs(), /lost the NATS server/);
    } finally {
      await s.stop();
      await nats.close();
      await removeDir(dir);
    }
  });
});
