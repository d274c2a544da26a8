// Attacks on the shared queue's state outside the signed job messages (issue 38.3), with a real nats-server,
// two real bin/webhook instances sharing -queue-key-file, and a raw NATS client that may publish and write
// the buckets but has no key: an unsigned message on a debounced hook's subject does not drop its trigger;
// a forged rate-limit window does not make the instances answer 429; a forged delivery claim, or a message
// sent first with the delivery's id, does not make a real delivery a duplicate that runs nothing.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, StorageType, type NatsConnection } from "nats";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

describe("-queue-key-file: the queue's state outside the job messages", () => {
  let dir = "";
  let nats: Nats;
  const servers: Server[] = [];
  let nc: NatsConnection;
  const ranLog = (hook: string): string => join(dir, `${hook}.ran`);
  const ran = async (hook: string): Promise<string[]> => (existsSync(ranLog(hook)) ? (await readFile(ranLog(hook), "utf8")).split("\n").filter(Boolean) : []);
  const record = (hook: string, extra: Record<string, unknown>): Record<string, unknown> => ({
    id: hook,
    "execute-command": "/bin/sh",
    "pass-arguments-to-command": [
      { source: "string", name: "-c" },
      { source: "string", name: 'echo "$1" >> "$0"' },
      { source: "string", name: ranLog(hook) },
      { source: "header", name: "X-Id" },
    ],
    ...extra,
  });

  before(async () => {
    dir = await tempDir("webhook-queue-state-");
    nats = await startNats();
    const hooks = [
      record("debounced", { debounce: "1s", "async-response": true }),
      record("rated", { "rate-limit": { requests: 2, period: "1h" } }),
      record("dedup", { deduplicate: { id: { source: "header", name: "X-Delivery" }, window: "10m" } }),
    ];
    const file = join(dir, "hooks.json");
    await writeFile(file, JSON.stringify(hooks));
    const keyFile = join(dir, "queue.key");
    await writeFile(keyFile, "c2hhcmVkLXF1ZXVlLWtleS1mb3ItdGVzdHM=\n", { mode: 0o600 });
    for (let i = 0; i < 2; i++) servers.push(await startServer(["-hooks", file, "-queue", nats.url, "-queue-key-file", keyFile, "-jobs", "-verbose"]));
    nc = await connect({ servers: `127.0.0.1:${nats.port}` });
  });

  after(async () => {
    await nc?.close();
    for (const s of servers) await s.stop();
    await nats?.close();
    await removeDir(dir);
  });

  const logs = (): string => servers.map((s) => s.logs()).join("");

  test("an unsigned message on a debounced hook's subject is not a later trigger: the trigger still runs", async () => {
    const r = await send(`${servers[0]!.base}/hooks/debounced`, { headers: { "X-Id": "real" } });
    assert.equal(r.status, 202);
    const id = String(r.headers["x-job-id"]);
    // Within the quiet period, one junk message: before, the trigger was dropped as superseded by it.
    await nc.jetstream().publish("webhook.jobs.debounced", Buffer.from("junk"));
    await eventually(async () => (await ran("debounced")).includes("real"), 20_000);
    const job = await eventually(async () => {
      const j = await send(`${servers[1]!.base}/jobs/${id}`, { method: "GET" });
      return j.status === 200 && (JSON.parse(j.text) as { state: string }).state === "succeeded" ? j : undefined;
    }, 20_000);
    assert.ok(job);
    assert.match(logs(), /refused a job message with no signature \(stream WEBHOOK_debounced/);
    assert.doesNotMatch(logs(), /debounced's trigger does not run/);
  });

  test("a rate-limit window written by a client without the key does not make the instances answer 429; the limit still holds", async () => {
    const kv = await nc.jetstream().views.kv("webhook_rates", { history: 1, storage: StorageType.File });
    await kv.put("rated", JSON.stringify({ opened: Date.now(), count: 1_000_000 }));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(`${servers[i % 2]!.base}/hooks/rated`, { headers: { "X-Id": `r${i}` } })).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.match(logs(), /ignored a rate-limit window on \$KV\.webhook_rates\.rated with no signature \(-queue-key-file\)/);
    await eventually(async () => (await ran("rated")).length === 2, 20_000);
    assert.deepEqual((await ran("rated")).sort(), ["r0", "r1"]);
  });

  test("a delivery claimed by a client without the key, or a message sent first with the delivery's id: the real delivery runs", async () => {
    const kv = await nc.jetstream().views.kv("webhook_deliveries", { history: 1, ttl: 24 * 3600_000, storage: StorageType.File });
    await kv.put("dedup.d1", JSON.stringify({ job: "attackerjob", at: Date.now() }));
    await kv.put("dedup.d2", "attackerjob");
    // The stream's de-duplication: a message with the delivery's id, sent before the delivery, made the real one a duplicate.
    await nc.jetstream().publish("webhook.jobs.dedup", Buffer.from("junk"), { msgID: "d3" });
    for (const [i, delivery] of ["d1", "d2", "d3"].entries()) {
      const r = await send(`${servers[i % 2]!.base}/hooks/dedup`, { headers: { "X-Id": delivery, "X-Delivery": delivery } });
      assert.equal(r.status, 200);
      assert.notEqual(r.headers["x-job-id"], "attackerjob");
    }
    await eventually(async () => (await ran("dedup")).length === 3, 20_000);
    assert.deepEqual((await ran("dedup")).sort(), ["d1", "d2", "d3"]);
    assert.match(logs(), /ignored a delivery claim on \$KV\.webhook_deliveries\.dedup\.d1 with no signature/);
    // De-duplication still holds: the same deliveries again run nothing and answer the first jobs' ids.
    const first = await send(`${servers[1]!.base}/hooks/dedup`, { headers: { "X-Id": "again", "X-Delivery": "d1" } });
    assert.equal(first.status, 200);
    assert.match(servers[1]!.logs(), /delivery "d1" was already accepted as job/);
  });
});

describe("-queue instances with and without -queue-key-file", () => {
  let dir = "";
  let nats: Nats;
  let keyed: Server;
  let plain: Server;

  before(async () => {
    dir = await tempDir("webhook-queue-mismatch-");
    nats = await startNats();
    const hooks = [
      {
        id: "echo",
        "execute-command": "/bin/echo",
        "pass-arguments-to-command": [{ source: "header", name: "X-Id" }],
        "include-command-output-in-response": true,
      },
    ];
    const file = join(dir, "hooks.json");
    await writeFile(file, JSON.stringify(hooks));
    const keyFile = join(dir, "queue.key");
    await writeFile(keyFile, "c2hhcmVkLXF1ZXVlLWtleS1mb3ItdGVzdHM=\n", { mode: 0o600 });
    keyed = await startServer(["-hooks", file, "-queue", nats.url, "-queue-key-file", keyFile]);
    plain = await startServer(["-hooks", file, "-queue", nats.url]);
  });

  after(async () => {
    await keyed?.stop();
    await plain?.stop();
    await nats?.close();
    await removeDir(dir);
  });

  test("the instance started second says at start that the first signs its jobs otherwise", () => {
    assert.match(
      plain.logs(),
      /NATS queue: the -queue instance started before this one signs its jobs with a key, this one without a key: while both run, jobs sent between them fail; give every -queue instance the same -queue-key-file/,
    );
    assert.doesNotMatch(keyed.logs(), /the -queue instance started before this one/);
  });

  test("a request to the keyed instance is answered by its command: the instance without the key leaves signed jobs alone, and says so", async () => {
    // Before, the instance without the key ran the job and the keyed one, refusing its unsigned record, waited forever.
    // Both instances pull: send until the one without the key has pulled one.
    const left =
      /a job message signed with a -queue-key-file \(stream WEBHOOK_echo, sequence \d+\) is left to the instances that have the key: give this instance the same -queue-key-file/;
    for (let i = 0; i < 40 && !left.test(plain.logs()); i++) {
      const r = await send(`${keyed.base}/hooks/echo`, { headers: { "X-Id": `k${i}` }, timeoutMs: 30_000 });
      assert.deepEqual([r.status, r.text], [200, `k${i}\n`]);
    }
    assert.match(plain.logs(), left);
  });

  test("a request to the instance without the key whose job the keyed one refuses is answered with an error within seconds, and both say why", async () => {
    // Before, it waited forever. Its job runs here, or is refused there: send until one was refused.
    const answered = await eventually(async () => {
      const t0 = performance.now();
      const r = await send(`${plain.base}/hooks/echo`, { headers: { "X-Id": "p" }, timeoutMs: 30_000 });
      if (r.status !== 200) return { status: r.status, text: r.text, ms: performance.now() - t0 };
      assert.equal(r.text, "p\n");
      return undefined;
    }, 120_000);
    assert.equal(answered.status, 500);
    assert.equal(answered.text, "Error occurred while executing the hook's command. Please check your logs for more details.");
    assert.ok(answered.ms < 15_000, `answered after ${answered.ms.toFixed(0)} ms`);
    assert.match(keyed.logs(), /refused a job message with no signature .* nothing runs; if another -queue instance sent it, give it this -queue-key-file/);
    assert.match(
      plain.logs(),
      /the job left the queue without ending: an instance refused it \(is -queue-key-file the same on every -queue instance\?\); answering with an error/,
    );
  });
});
