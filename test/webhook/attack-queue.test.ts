// Attacks on the -queue path (issue 16) with a real nats-server and real bin/webhook instances:
// a job message injected by another NATS client, and output that floods the reply subject.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { connect, type NatsConnection } from "nats";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";
import { rssMiB } from "../fixtures/memory.js";

/** Bytes the flooding hook writes. */
const FLOOD = 200_000_000;

describe("-queue attacks", () => {
  let dir = "";
  let nats: Nats;
  let server: Server;
  let nc: NatsConnection;

  before(async () => {
    dir = await tempDir("webhook-queue-attack-");
    nats = await startNats();
    const hooks = [
      {
        id: "echo",
        "execute-command": "/bin/echo",
        "pass-arguments-to-command": [{ source: "header", name: "X-Arg" }],
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
        id: "flood",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: `head -c ${FLOOD} /dev/zero; echo > "$0"` },
          { source: "url", name: "done" },
        ],
        "stream-command-output": true,
      },
      {
        id: "gated",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'echo "$1" >> "$0.ran"; while [ ! -e "$0" ]; do sleep 0.05; done' },
          { source: "url", name: "gate" },
          { source: "header", name: "X-Delivery" },
        ],
        "max-concurrency": 1,
        "max-queue": 0,
        deduplicate: { id: { source: "header", name: "X-Delivery" }, window: "10m" },
      },
    ];
    const file = join(dir, "hooks.json");
    await writeFile(file, JSON.stringify(hooks));
    server = await startServer(["-hooks", file, "-queue", nats.url, "-queue-ack-wait", "2s", "-verbose"]);
    nc = await connect({ servers: `127.0.0.1:${nats.port}` });
    // The instance has created the hook's stream once a trigger went through.
    await eventually(async () => (await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": "ready" } })).status === 200);
  });

  after(async () => {
    await nc?.close();
    await server?.stop();
    await nats?.close();
    await removeDir(dir);
  });

  test("a malformed job message published by another NATS client is dropped: the instance keeps serving", async () => {
    const js = nc.jetstream();
    for (const body of [
      '{"id":"x","hook":"echo","req":{}}',
      '{"id":"y","hook":"echo"}',
      '{"id":"z","hook":"echo","req":{"headers":5,"query":null}}',
      "null",
      "[]",
      '"s"',
    ]) {
      await js.publish("webhook.jobs.echo", Buffer.from(body));
    }
    await eventually(() => (server.logs().match(/dropped an unreadable job message/g) ?? []).length >= 4);
    const r = await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": "still-alive" } });
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), "still-alive\n");
  });

  test("an unreadable job record published on a job's record subject is ignored: the answer is the command's", async () => {
    // Any client may subscribe to the job subjects and learn a job's id, hence its record's subject.
    const sub = nc.subscribe("webhook.jobs.slow", { max: 1 });
    const forged = (async () => {
      for await (const m of sub) {
        const id = (JSON.parse(Buffer.from(m.data).toString()) as { id: string }).id;
        nc.publish(`$KV.webhook_jobs.${id}`, Buffer.from("not json"));
        nc.publish(`$KV.webhook_jobs.${id}`, Buffer.from('{"id":5,"state":"succeeded"}'));
      }
    })();
    const r = await send(`${server.base}/hooks/slow`, { method: "POST" });
    await forged;
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), "done\n");
    assert.match(server.logs(), /ignored an unreadable job record/);
  });

  test("a streamed hook whose output floods a client that does not read: memory stays bounded, the stream says what it dropped", async () => {
    const done = join(dir, "flood-done");
    const socket = createConnection({ host: "127.0.0.1", port: server.port });
    socket.pause();
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.write(`POST /hooks/flood?done=${encodeURIComponent(done)} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    await eventually(() => existsSync(done), 120_000, 100);
    const pid = server.proc.child.pid!;
    const held = rssMiB(pid) * 1024 * 1024;
    assert.ok(held < FLOOD, `the instance holds ${held} bytes after a ${FLOOD}-byte flood`);
    const ended = new Promise((r) => socket.on("end", r));
    socket.resume();
    await ended;
    const answer = Buffer.concat(chunks);
    assert.ok(answer.length < FLOOD / 2, `answer of ${answer.length} bytes`);
    // Told where the dropping ended: at the end, or before output that came once the client read again.
    const told = answer.indexOf(" bytes of output dropped: the client read more slowly than the command wrote]\n");
    assert.ok(told >= 0, "the stream says what it dropped");
    assert.match(answer.subarray(told - 30, told).toString("latin1"), /\n\[webhook: \d+$/);
  });

  test("deduplicate: a delivery refused (429, queue full) is not remembered, so its redelivery runs", async () => {
    const gate = join(dir, "gate");
    const url = `${server.base}/hooks/gated?gate=${encodeURIComponent(gate)}`;
    assert.equal((await send(url, { method: "POST", headers: { "X-Delivery": "first" } })).status, 200);
    await eventually(() => existsSync(`${gate}.ran`));
    const refused = await send(url, { method: "POST", headers: { "X-Delivery": "second" } });
    assert.equal(
      refused.status,
      429,
      server
        .logs()
        .split("\n")
        .filter((l) => l.includes("answering"))
        .join("\n"),
    );
    await writeFile(gate, "");
    const again = await eventually(async () => {
      const r = await send(url, { method: "POST", headers: { "X-Delivery": "second" } });
      return r.status === 200 ? r : undefined;
    });
    assert.notEqual(again!.headers["x-job-id"], refused.headers["x-job-id"]);
    await eventually(async () => (await readFile(`${gate}.ran`, "utf8")) === "first\nsecond\n");
  });
});
