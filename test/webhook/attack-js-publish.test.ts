// Attacks on the JetStream publishes of js-publish.ts (one reply subscription _INBOX.<nuid>.*, an
// id per publish) with a real nats-server, real bin/webhook instances and a hostile NATS client on
// the same server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, type NatsConnection } from "nats";
import { eventually, removeDir, tempDir, within } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

describe("-queue js-publish attacks", () => {
  let dir = "";
  let nats: Nats;
  let server: Server;
  let peer: NatsConnection;
  let hooksFile = "";

  before(async () => {
    dir = await tempDir("webhook-jspub-attack-");
    nats = await startNats();
    const hooks = [
      {
        id: "echo",
        "execute-command": "/bin/echo",
        "pass-arguments-to-command": [{ source: "header", name: "X-Arg" }],
        "include-command-output-in-response": true,
      },
      {
        id: "gated",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'while [ ! -e "$0" ]; do sleep 0.05; done; echo gated-done' },
          { source: "url", name: "gate" },
        ],
        "include-command-output-in-response": true,
      },
      {
        id: "held",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'while [ ! -e "$0" ]; do sleep 0.05; done' },
          { source: "url", name: "gate" },
        ],
        "max-concurrency": 1,
        "max-queue": 0,
      },
    ];
    const file = join(dir, "hooks.json");
    hooksFile = file;
    await writeFile(file, JSON.stringify(hooks));
    server = await startServer(["-hooks", file, "-queue", nats.url, "-x-request-id", "-verbose"]);
    peer = await connect({ servers: `127.0.0.1:${nats.port}` });
    await eventually(async () => (await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": "ready" } })).status === 200, 20_000);
  });

  after(async () => {
    await peer?.close();
    await server?.stop();
    await nats?.close();
    await removeDir(dir);
  });

  test("a reply of JSON null on the instance's reply inbox does not leave a job's request unanswered nor the instance deaf", async () => {
    const kv = await peer.jetstream().views.kv("webhook_jobs");
    // A deaf instance keeps the jobs its pull requests got: it is stopped after this test whatever happens.
    try {
      // The race with JetStream's own answer is won often, not always: a few rounds.
      for (let round = 0; round < 8; round++) {
        // The hostile peer learns the instance's inbox and its counter from the job message it sees.
        // (nats.js's own requests use a random token: then the peer can only answer what it sees.)
        let inbox: { prefix: string; id: number } | undefined;
        const sub = peer.subscribe("webhook.jobs.>", {
          callback: (_e, m) => {
            const r = /^(_INBOX\.[^.]+)\.(\S+)$/.exec(m.reply ?? "");
            if (r) inbox = { prefix: r[1]!, id: /^\d+$/.test(r[2]!) ? Number(r[2]) : NaN };
          },
        });
        await peer.flush();
        const gate = join(dir, `gate-null-${round}`);
        const answer = send(`${server.base}/hooks/gated?gate=${encodeURIComponent(gate)}`, { method: "POST", timeoutMs: 120_000 }).then(
          (r) => r,
          (e: Error) => e,
        );
        const seen = await eventually(() => inbox, 10_000);
        sub.unsubscribe();
        // The writes of its record from now on (its final one) are answered by the peer too, as it sees them.
        const records = peer.subscribe("$KV.webhook_jobs.>", { callback: (_e, m) => m.reply && peer.publish(m.reply, Buffer.from("null")) });
        await peer.flush();
        const id = await eventually(
          () =>
            /queued as job (\S+)/.exec(
              server
                .logs()
                .split("\n")
                .filter((l) => l.includes("gated hook triggered"))
                .at(-1) ?? "",
            )?.[1],
          10_000,
        );
        // The job's final record is the instance's next publish awaiting an ack (job message: n, final record: n+1):
        // the peer answers it with `null` before JetStream can.
        let spraying = true;
        const spray = (async () => {
          const nul = Buffer.from("null");
          while (spraying && !Number.isNaN(seen.id)) {
            for (let i = 0; i < 2000; i++) peer.publish(`${seen.prefix}.${seen.id + 1}`, nul);
            await peer.flush();
          }
        })();
        await writeFile(gate, "");
        // The command has ended: its final record is in the bucket (the publish itself reached JetStream).
        await eventually(async () => /"state":"(succeeded|failed)"/.test((await kv.get(id))?.string() ?? ""), 20_000, 50);
        spraying = false;
        await spray;
        records.unsubscribe();
        // The record is final in the bucket: the request must be answered well within a client's patience
        // (three times the instance's own 5 s write timeout), and the instance must go on taking jobs.
        const r = await within(answer, 15_000, "unanswered" as const);
        const next = await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": `after${round}` }, timeoutMs: 20_000 }).then(
          (x) => `${x.status} ${x.text.trim()}`,
          (e: Error) => e.message,
        );
        const logs = server.logs();
        assert.ok(
          r !== "unanswered",
          `round ${round}: the request of job ${id} was not answered within 15 s of its final record being stored (NATS client reader closed: ${/reader closed/.test(logs)}); logs:\n${logs.slice(-2500)}`,
        );
        assert.ok(!(r instanceof Error), `round ${round}: the request failed: ${(r as Error).message}`);
        assert.equal(r.status, 200, r.text);
        assert.equal(next, `200 after${round}`, `round ${round}: the instance took no further job; logs:\n${logs.slice(-2500)}`);
        assert.doesNotMatch(logs, /reader closed/, "the NATS client stopped reading its connection");
      }
    } finally {
      await server.stop();
    }
  });

  test("concurrent requests reusing an X-Request-Id whose record was deleted (a refused job) get distinct job ids", async () => {
    const kv = await peer.jetstream().views.kv("webhook_jobs");
    // An instance of its own (the attack above may have left the first one deaf).
    const server = await startServer(["-hooks", hooksFile, "-queue", nats.url, "-x-request-id", "-verbose"]);
    try {
      // A job refused (429: its hook's stream is full) has its record deleted: a deletion marker under its id.
      const gate = join(dir, "gate-held");
      const holder = send(`${server.base}/hooks/held?gate=${encodeURIComponent(gate)}`, { method: "POST" });
      await eventually(async () => (await kv.get("holder-of-the-slot"))?.operation === "PUT" || /held hook triggered/.test(server.logs()), 10_000);
      await eventually(
        async () => (await send(`${server.base}/hooks/held?gate=x`, { method: "POST", headers: { "X-Request-Id": "reused" } })).status === 429,
        10_000,
      );
      await eventually(async () => (await kv.get("reused"))?.operation === "DEL", 10_000);
      await writeFile(gate, "");
      assert.equal((await holder).status, 200);
      // Several requests at once reuse the id: each must be its own job, under its own id, answered with its own output.
      const n = 6;
      const answers = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Request-Id": "reused", "X-Arg": `arg${i}` }, timeoutMs: 30_000 }),
        ),
      );
      const ids = answers.map((a) => String(a.headers["x-job-id"]));
      const got = answers.map((a, i) => `request ${i} (X-Arg arg${i}): ${a.status} job ${ids[i]} output ${JSON.stringify(a.text.trim())}`).join("\n");
      assert.equal(new Set(ids).size, n, `two requests were given the same job id:\n${got}`);
      for (const [i, a] of answers.entries()) assert.equal(`${a.status} ${a.text.trim()}`, `200 arg${i}`, got);
    } finally {
      await server.stop();
    }
  });

  test("the reply ids are guessable: a peer that saw one job's inbox answers the next request's publishes blind, and neither that request nor SIGTERM may hang", async () => {
    const server = await startServer(["-hooks", hooksFile, "-queue", nats.url]);
    let exited = false;
    try {
      let inbox: { prefix: string; id: number } | undefined;
      const sub = peer.subscribe("webhook.jobs.>", {
        callback: (_e, m) => {
          const r = /^(_INBOX\.[^.]+)\.(\S+)$/.exec(m.reply ?? "");
          if (r) inbox = { prefix: r[1]!, id: /^\d+$/.test(r[2]!) ? Number(r[2]) : NaN };
        },
      });
      await peer.flush();
      assert.equal((await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": "seen" } })).status, 200);
      const seen = await eventually(() => inbox, 10_000);
      sub.unsubscribe();
      // From now on the peer sees nothing: it answers the next few ids of the counter with `null`.
      let spraying = true;
      const spray = (async () => {
        const nul = Buffer.from("null");
        while (spraying && !Number.isNaN(seen.id)) {
          for (let i = 0; i < 1000; i++) for (let k = 1; k <= 6; k++) peer.publish(`${seen.prefix}.${seen.id + k}`, nul);
          await peer.flush();
        }
      })();
      const r = await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": "victim" }, timeoutMs: 15_000 }).then(
        (x) => `${x.status} ${x.text.trim()}`,
        (e: Error) => e.message,
      );
      spraying = false;
      await spray;
      // A refusal (503) would do; no answer at all is what must not happen.
      assert.match(r, /^(200 victim|503 )/, `the request got: ${r} (NATS client reader closed: ${/reader closed/.test(server.logs())})`);
    } finally {
      // Shutdown must not wait forever on a publish that will never settle.
      server.proc.child.kill("SIGTERM");
      const code = await within(server.proc.exited, 15_000, "running" as const);
      exited = code !== "running";
      await server.proc.stop(1000);
    }
    assert.ok(exited, "the instance did not exit within 15 s of SIGTERM");
  });
});
