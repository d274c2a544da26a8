// Signed shared-queue messages and job records (-queue-key-file), with a real nats-server and two
// real bin/webhook instances sharing a key: their jobs run and their output comes back; job messages
// published by another NATS client without the signature, with a wrong one or altered are refused
// (nothing runs, one log line, the instance keeps serving), and so are forged output chunks and job
// records put into the bucket: a forged final record neither ends the request waiting for its job nor
// shows in /jobs. The key never shows.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, headers as natsHeaders, type NatsConnection } from "nats";
import { eventually, removeDir, run, bin, tempDir } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

const KEY = "c2hhcmVkLXF1ZXVlLWtleS1mb3ItdGVzdHM=";

describe("-queue-key-file", () => {
  let dir = "";
  let nats: Nats;
  const servers: Server[] = [];
  let nc: NatsConnection;
  let ran = "";

  before(async () => {
    dir = await tempDir("webhook-queue-signing-");
    ran = join(dir, "ran.log");
    nats = await startNats();
    const hooks = [
      {
        id: "echo",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'echo "$1" >> "$0"; echo "ran $1"' },
          { source: "string", name: ran },
          { source: "header", name: "X-Arg" },
        ],
        "include-command-output-in-response": true,
      },
      {
        id: "slow",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: "sleep 1; echo done" },
        ],
        "include-command-output-in-response": true,
      },
      {
        id: "gate",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'while [ ! -e "$0" ]; do sleep 0.05; done; echo "real end"' },
          { source: "url", name: "gate" },
        ],
        "include-command-output-in-response": true,
      },
    ];
    const file = join(dir, "hooks.json");
    await writeFile(file, JSON.stringify(hooks));
    const keyFile = join(dir, "queue.key");
    await writeFile(keyFile, KEY + "\n", { mode: 0o600 });
    for (let i = 0; i < 2; i++) servers.push(await startServer(["-hooks", file, "-queue", nats.url, "-queue-key-file", keyFile, "-jobs", "-verbose"]));
    nc = await connect({ servers: `127.0.0.1:${nats.port}` });
    await eventually(async () => (await send(`${servers[0]!.base}/hooks/echo`, { headers: { "X-Arg": "ready" } })).status === 200, 20_000);
  });

  after(async () => {
    await nc?.close();
    for (const s of servers) await s.stop();
    await nats?.close();
    await removeDir(dir);
  });

  const ranLines = async (): Promise<string[]> => (existsSync(ran) ? (await readFile(ran, "utf8")).split("\n").filter(Boolean) : []);

  test("signed jobs run, on either instance, and their output comes back", async () => {
    for (let i = 0; i < 6; i++) {
      const r = await send(`${servers[i % 2]!.base}/hooks/echo`, { headers: { "X-Arg": `signed-${i}` } });
      assert.equal(r.status, 200);
      assert.equal(r.text, `ran signed-${i}\n`);
    }
    assert.ok(servers.every((s) => /messages signed with the key in -queue-key-file/.test(s.logs())));
  });

  test("job messages without the signature, with a wrong one, or altered are refused: nothing runs, the instances keep serving", async () => {
    // A real job message, as an instance published it, read by a client that may subscribe to the job subjects.
    const sub = nc.subscribe("webhook.jobs.echo", { max: 1 });
    const captured = (async () => {
      for await (const m of sub) return { data: Buffer.from(m.data), signature: m.headers?.get("Webhook-Signature") ?? "" };
      throw new Error("no job message seen");
    })();
    const r = await send(`${servers[0]!.base}/hooks/echo`, { headers: { "X-Arg": "original" } });
    assert.equal(r.status, 200);
    const { data, signature } = await captured;
    assert.match(signature, /^[0-9a-f]{64}$/);
    const before = await ranLines();
    const refusedBefore = servers.map((s) => (s.logs().match(/refused a job message/g) ?? []).length);

    const js = nc.jetstream();
    const altered = Buffer.from(data.toString().replace("original", "forged-1"));
    const wrong = natsHeaders();
    wrong.set("Webhook-Signature", "0".repeat(64));
    const kept = natsHeaders();
    kept.set("Webhook-Signature", signature);
    const otherKey = natsHeaders();
    otherKey.set("Webhook-Signature", createHmac("sha256", "not-the-key-but-long-enough").update("webhook.jobs.echo\n").update(altered).digest("hex"));
    await js.publish("webhook.jobs.echo", Buffer.from(data.toString().replace("original", "forged-0")));
    await js.publish("webhook.jobs.echo", altered, { headers: wrong });
    await js.publish("webhook.jobs.echo", Buffer.from(data.toString().replace("original", "forged-2")), { headers: kept });
    await js.publish("webhook.jobs.echo", altered, { headers: otherKey });

    await eventually(() => {
      const refused = servers.reduce((n, s, i) => n + (s.logs().match(/refused a job message/g) ?? []).length - refusedBefore[i]!, 0);
      return refused >= 4;
    }, 20_000);
    const logs = servers.map((s) => s.logs()).join("");
    assert.match(logs, /NATS queue: refused a job message with no signature \(stream WEBHOOK_echo, sequence \d+; -queue-key-file\): nothing runs/);
    assert.match(logs, /refused a job message with a wrong signature/);
    // The instances keep serving, and signed jobs still run.
    for (const s of servers) {
      const ok = await send(`${s.base}/hooks/echo`, { headers: { "X-Arg": "after" } });
      assert.equal(ok.status, 200);
      assert.equal(ok.text, "ran after\n");
    }
    const lines = await ranLines();
    assert.deepEqual(lines.slice(before.length), ["after", "after"], "no forged job ran");
    assert.ok(!lines.some((l) => l.startsWith("forged")));
  });

  test("a forged output chunk on a job's reply subject is ignored: the answer is the command's", async () => {
    const sub = nc.subscribe("webhook.jobs.slow", { max: 1 });
    const forged = (async () => {
      for await (const m of sub) {
        const reply = (JSON.parse(Buffer.from(m.data).toString()) as { reply: string }).reply;
        nc.publish(`${reply}.o`, Buffer.from("forged output\n"));
      }
    })();
    const r = await send(`${servers[0]!.base}/hooks/slow`);
    await forged;
    assert.equal(r.status, 200);
    assert.equal(r.text, "done\n");
    assert.match(servers[0]!.logs(), /NATS queue: ignored a message on webhook\.out\.[0-9a-f-]+\.o with no signature \(-queue-key-file\)/);
  });

  test("forged job records put into the bucket neither end the waiting request nor show in /jobs; the real end still arrives", async () => {
    const kv = await nc.jetstream().views.kv("webhook_jobs");
    const stored = async (key: string): Promise<{ signature: string; record: Record<string, unknown> }> => {
      const e = await kv.get(key);
      assert.ok(e, `no record under ${key}`);
      const value = Buffer.from(e.value).toString();
      assert.match(value, /^[0-9a-f]{64}\n\{/, "a record is stored signed");
      return { signature: value.slice(0, 64), record: JSON.parse(value.slice(65)) as Record<string, unknown> };
    };
    // A real, signed final record of another job, to be copied under the waiting job's key.
    const other = await send(`${servers[1]!.base}/hooks/echo`, { headers: { "X-Arg": "other" } });
    const otherId = String(other.headers["x-job-id"]);
    const otherValue = (await kv.get(otherId))!.value;

    const gate = join(dir, "gate");
    const sub = nc.subscribe("webhook.jobs.gate", { max: 1 });
    const published = (async () => {
      for await (const m of sub) return (JSON.parse(Buffer.from(m.data).toString()) as { id: string }).id;
      throw new Error("no job message seen");
    })();
    let answered = false;
    const answer = send(`${servers[0]!.base}/hooks/gate?gate=${encodeURIComponent(gate)}`, { timeoutMs: 120_000 }).finally(() => (answered = true));
    const id = await published;
    await eventually(async () => (await stored(id)).record.state === "running", 20_000);
    const { signature, record } = await stored(id);

    const final = JSON.stringify({ ...record, state: "succeeded", ended: new Date().toISOString(), exitCode: 0, output: "forged\n" });
    const ignored = (why: string): number =>
      servers.reduce((n, s) => n + (s.logs().split(`ignored a job record on $KV.webhook_jobs.${id} with ${why} (-queue-key-file)`).length - 1), 0);
    const forgeries: [string, Uint8Array, string][] = [
      ["unsigned", Buffer.from(final), "no signature"],
      ["a wrong signature", Buffer.from(`${"0".repeat(64)}\n${final}`), "a wrong signature"],
      ["the real record's signature over altered bytes", Buffer.from(`${signature}\n${final}`), "a wrong signature"],
      [
        "another key",
        Buffer.from(`${createHmac("sha256", "not-the-key-but-long-enough").update(`$KV.webhook_jobs.${id}\n`).update(final).digest("hex")}\n${final}`),
        "a wrong signature",
      ],
      ["another job's real record", otherValue, "a wrong signature"],
    ];
    for (const [what, value, why] of forgeries) {
      const before = ignored(why);
      await kv.put(id, value);
      // The waiting instance gets every put on the record's subject: it logs the record and ignores it.
      await eventually(() => ignored(why) > before, 20_000);
      for (const s of servers) {
        const shown = await send(`${s.base}/jobs/${id}`, { method: "GET" });
        assert.equal(shown.status, 404, `${what}: /jobs shows ${shown.text}`);
        const list = await send(`${s.base}/jobs?hook=gate`, { method: "GET" });
        assert.equal(list.status, 200);
        assert.ok(!list.text.includes(id), `${what}: the list shows ${list.text}`);
      }
      assert.equal(answered, false, `${what}: the waiting request was answered`);
    }

    await writeFile(gate, "");
    const r = await answer;
    assert.equal(r.status, 200);
    assert.equal(r.text, "real end\n");
    for (const s of servers) {
      const shown = await send(`${s.base}/jobs/${id}`, { method: "GET" });
      assert.equal(shown.status, 200);
      const job = JSON.parse(shown.text) as { state: string; output: string };
      assert.equal(job.state, "succeeded");
      assert.equal(job.output, "real end\n");
      assert.equal((await send(`${s.base}/healthz`, { method: "GET" })).status, 200);
    }
    assert.equal((await stored(id)).record.output, "real end\n");
  });

  test("the key never shows in the log or on the command line", () => {
    for (const s of servers) {
      assert.ok(!s.logs().includes(KEY), "the key is in the log");
      assert.ok(!s.proc.child.spawnargs.join(" ").includes(KEY));
    }
  });
});

describe("-queue-key-file refused at start", () => {
  let dir = "";
  before(async () => {
    dir = await tempDir("webhook-queue-key-");
    await writeFile(join(dir, "hooks.json"), "[]");
    await writeFile(join(dir, "short.key"), "tooshort\n");
  });
  after(async () => {
    await removeDir(dir);
  });

  test("a missing file, a short key, or no -queue: one line, exit 1, no key quoted", async () => {
    const hooks = join(dir, "hooks.json");
    const missing = await run(bin("webhook"), ["-hooks", hooks, "-nopanic", "-queue", "nats://127.0.0.1:1", "-queue-key-file", join(dir, "none.key")]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read the queue key file .*none\.key \(-queue-key-file\): ENOENT\n$/);
    const short = await run(bin("webhook"), ["-hooks", hooks, "-nopanic", "-queue", "nats://127.0.0.1:1", "-queue-key-file", join(dir, "short.key")]);
    assert.equal(short.code, 1);
    assert.match(short.stderr, /holds 8 bytes; it needs at least 16: make one with {2}head -c 32 \/dev\/urandom \| base64 > /);
    assert.ok(!short.stderr.includes("tooshort"));
    const alone = await run(bin("webhook"), ["-hooks", hooks, "-nopanic", "-queue-key-file", join(dir, "short.key")]);
    assert.equal(alone.code, 1);
    assert.match(alone.stderr, /-queue-key-file signs the messages of the shared queue: give -queue too, or drop -queue-key-file\n$/);
  });
});
