// Attacks on the -queue path (issue 16) with a real nats-server and real bin/webhook instances:
// a job message injected by another NATS client, and output that floods the reply subject.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect, type NatsConnection } from "nats";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

describe("-queue attacks", () => {
  let dir = "";
  let nats: Nats;
  let server: Server;
  let nc: NatsConnection;

  before(async () => {
    dir = await tempDir("webhook-queue-attack-");
    nats = await startNats();
    const hooks = [
      { id: "echo", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "header", name: "X-Arg" }], "include-command-output-in-response": true },
      { id: "slow", "execute-command": "/bin/sh", "pass-arguments-to-command": [{ source: "string", name: "-c" }, { source: "string", name: "sleep 1; echo done" }], "include-command-output-in-response": true },
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
    for (const body of ['{"id":"x","hook":"echo","req":{}}', '{"id":"y","hook":"echo"}', '{"id":"z","hook":"echo","req":{"headers":5,"query":null}}', "null", "[]", '"s"']) {
      await js.publish("webhook.jobs.echo", Buffer.from(body));
    }
    await eventually(() => (server.logs().match(/dropped an unreadable job message/g) ?? []).length >= 4);
    const r = await send(`${server.base}/hooks/echo`, { method: "POST", headers: { "X-Arg": "still-alive" } });
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), "still-alive\n");
  });

  test("an unreadable end message published on a job's reply subject is ignored: the answer is the command's", async () => {
    // Any client may subscribe to the job subjects and learn the reply subject of a job.
    const sub = nc.subscribe("webhook.jobs.slow", { max: 1 });
    const forged = (async () => {
      for await (const m of sub) {
        const reply = (JSON.parse(Buffer.from(m.data).toString()) as { reply: string }).reply;
        nc.publish(`${reply}.e`, Buffer.from("not json"));
        nc.publish(`${reply}.e`, Buffer.from('{"error":5}'));
      }
    })();
    const r = await send(`${server.base}/hooks/slow`, { method: "POST" });
    await forged;
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), "done\n");
    assert.match(server.logs(), /ignored an unreadable end message/);
  });
});
