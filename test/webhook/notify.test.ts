// Notifications (the hook field notify) sent by the real bin/webhook to real targets: a JSON POST,
// an ntfy-style POST (plain text, Title/Priority/Tags), a template's text, an MQTT publish; on
// failed, retried, succeeded and timed-out; a dead target retried and logged without its URL or
// credentials; a target that never answers cannot pile up memory (the oldest waiting is dropped);
// and -validate refuses a bad notify field. The example of docs/webhook/notify.md runs as written.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { join } from "node:path";
import mqtt from "mqtt";
import { docBlocks } from "../fixtures/docs.js";
import { bin, eventually, freePort, removeDir, run, tempDir } from "../helpers.js";
import { sharedBroker, type Broker } from "../mqtt/fixtures/broker.js";
import { send, shHook, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { startReceiver, type Receiver, type Received } from "./fixtures/receiver.js";

const PASSWORD = "pa55word-notify-9c1";
const TOKEN = "tok-secret-notify-44d";
const SECRET_PATH = "secret-path-notify-71e";

let dir: string;
let rx: Receiver;
let hang: Receiver;
let broker: Broker;
/** A TCP server that takes connections and never says a word: an MQTT broker that hangs. */
let mute: NetServer;
const muteSockets = new Set<Socket>();
let server: Server;
const topic = `webhook-notify-test/${process.pid}`;

/** The requests `rx` got on `path`, once there are `n`. */
const at = (path: string, n = 1): Promise<Received[]> =>
  eventually(() => {
    const got = rx.received.filter((r) => r.path === path);
    return got.length >= n && got;
  }, 10_000);

before(async () => {
  dir = await tempDir("webhook-notify-");
  rx = await startReceiver();
  hang = await startReceiver(() => "hang");
  broker = await sharedBroker();
  const rxUrl = new URL(rx.base);
  const dead = await freePort();
  mute = createServer((s) => muteSockets.add(s));
  await new Promise<void>((resolve) => mute.listen(0, "127.0.0.1", resolve));
  const mutePort = (mute.address() as { port: number }).port;
  const hooks = await writeHooks(dir, [
    shHook("fail", "echo boom-output; exit 3", {
      retry: { attempts: 2, delay: "10ms" },
      notify: [
        { url: `${rx.base}/json`, on: ["retried", "failed"] },
        { ntfy: `http://user:${PASSWORD}@${rxUrl.host}/alerts`, headers: [{ name: "X-Token", value: TOKEN }] },
      ],
    }),
    shHook("ok", "echo fine", {
      notify: [
        { url: `${rx.base}/tpl`, on: ["succeeded"], template: "{{.Hook}} {{.State}} exit={{.ExitCode}} attempt={{.Attempt}} {{.Output}}" },
        { mqtt: broker.url, topic, on: ["succeeded"] },
      ],
    }),
    shHook("slow", "sleep 10", { "command-timeout": "100ms", notify: [{ ntfy: `${rx.base}/slow`, title: "{{.Hook}} ran out of time", tags: ["warning"] }] }),
    shHook("dead", "true", { notify: [{ url: `http://127.0.0.1:${dead}/${SECRET_PATH}?k=${TOKEN}`, on: ["succeeded"], retries: 1, timeout: "2s" }] }),
    shHook("mute", "true", { notify: [{ mqtt: `mqtt://127.0.0.1:${mutePort}`, topic: "t", on: ["succeeded"], retries: 0, timeout: "300ms" }] }),
    shHook("flood", "true", { notify: [{ url: `${hang.base}/hang`, on: ["succeeded"], retries: 0, timeout: "1m" }] }),
  ]);
  server = await startServer(["-hooks", hooks, "-verbose"]);
});

after(async () => {
  // The hanging target goes first: its notifications then fail at once and the server stops without waiting for them.
  await hang.close();
  await server.stop();
  await rx.close();
  for (const s of muteSockets) s.destroy();
  mute.close();
  await broker.stop();
  await removeDir(dir);
});

describe("notify", () => {
  test("failed after a retry: JSON to a URL on retried and failed; ntfy text with Title, Priority, Tags and credentials", async () => {
    const r = await send(`${server.base}/hooks/fail`);
    assert.equal(r.status, 500);
    // Sent one after the other, but each on its own: they may arrive in either order.
    const json = (await at("/json", 2)).map((x) => JSON.parse(x.body) as Record<string, unknown>).sort((x, y) => Number(x["attempt"]) - Number(y["attempt"]));
    assert.deepEqual(
      json.map((j) => [j["hook"], j["state"], j["attempt"], j["exitCode"]]),
      [
        ["fail", "retried", 1, 3],
        ["fail", "failed", 2, 3],
      ],
    );
    assert.equal(json[1]!["output"], "boom-output\n");
    assert.equal(typeof json[1]!["durationMs"], "number");
    assert.equal(json[0]!["job"], json[1]!["job"]);
    const [ntfy] = await at("/alerts");
    assert.equal(ntfy!.headers["title"], "fail failed");
    assert.equal(ntfy!.headers["priority"], "high");
    assert.equal(ntfy!.headers["tags"], "x");
    assert.equal(ntfy!.headers["x-token"], TOKEN);
    assert.equal(ntfy!.headers["authorization"], `Basic ${Buffer.from(`user:${PASSWORD}`).toString("base64")}`);
    assert.match(ntfy!.headers["content-type"] ?? "", /^text\/plain/);
    assert.match(ntfy!.body, /^fail failed with exit code 3 after \d+\.\ds \(job \w+, attempt 2\)\nboom-output\n$/);
    await server.proc.waitFor(/notify: sent the failed notification of fail to ntfy http:\/\/127\.0\.0\.1:\d+/);
  });

  test("succeeded: a template's text to a URL, and JSON published to an MQTT topic", async () => {
    const client = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 });
    const messages: string[] = [];
    client.on("message", (_t, m) => messages.push(m.toString()));
    await client.subscribeAsync(topic, { qos: 1 });
    try {
      assert.equal((await send(`${server.base}/hooks/ok`)).status, 200);
      const [tpl] = await at("/tpl");
      assert.equal(tpl!.body, "ok succeeded exit=0 attempt=1 fine\n");
      const published = await eventually(() => messages[0], 10_000);
      assert.deepEqual(
        { ...(JSON.parse(published) as object), job: "", durationMs: 0 },
        {
          hook: "ok",
          job: "",
          state: "succeeded",
          attempt: 1,
          exitCode: 0,
          durationMs: 0,
          output: "fine\n",
        },
      );
    } finally {
      await client.endAsync();
    }
  });

  test("timed-out: ntfy with the title template and tags", async () => {
    await send(`${server.base}/hooks/slow`);
    const [n] = await at("/slow");
    assert.equal(n!.headers["title"], "slow ran out of time");
    assert.equal(n!.headers["tags"], "warning");
    assert.match(n!.body, /^slow timed-out after/);
  });

  test("a dead target: retried, then one line in the log without its URL, path or credentials", async () => {
    assert.equal((await send(`${server.base}/hooks/dead`)).status, 200);
    await server.proc.waitFor(/notify: could not send the succeeded notification of dead to POST http:\/\/127\.0\.0\.1:\d+ \(2 tries\): .+/);
    const logs = server.logs();
    for (const secret of [PASSWORD, TOKEN, SECRET_PATH]) assert.ok(!logs.includes(secret), `the log does not show ${secret}`);
  });

  test("an MQTT broker that never answers: the try ends at its timeout, and the log says so", async () => {
    assert.equal((await send(`${server.base}/hooks/mute`)).status, 200);
    await server.proc.waitFor(
      /notify: could not send the succeeded notification of mute to mqtt mqtt:\/\/127\.0\.0\.1:\d+ topic t \(1 try\): it did not answer within the timeout/,
    );
  });

  test("a target that never answers: the run goes on, and beyond 256 waiting the oldest is dropped with a log line", async () => {
    // 8 under way (hanging) + 256 waiting: the next ones push the oldest out.
    for (let i = 0; i < 270; i++) assert.equal((await send(`${server.base}/hooks/flood`)).status, 200);
    await server.proc.waitFor(/notify: dropped the succeeded notification of flood to POST http:\/\/127\.0\.0\.1:\d+: 256 notifications were waiting/);
    await eventually(() => hang.received.length >= 8);
    assert.equal(hang.received.length, 8, "8 at a time are under way");
  });
});

describe("notify: -validate", () => {
  test("a bad target is refused with what to fix", async () => {
    const hooks = await writeHooks(
      dir,
      [
        { id: "two", "execute-command": "/bin/true", notify: [{ url: "http://a/", ntfy: "http://b/" }] },
        { id: "state", "execute-command": "/bin/true", notify: [{ url: "http://a/", on: ["exploded"] }] },
        { id: "tpl", "execute-command": "/bin/true", notify: [{ url: "http://a/", template: "{{.Hook" }] },
        { id: "topic", "execute-command": "/bin/true", notify: [{ mqtt: "mqtt://a" }] },
      ],
      "bad.json",
    );
    const r = await run(bin("webhook"), ["-validate", "-hooks", hooks]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const out = r.stdout + r.stderr;
    assert.match(out, /"notify\[0\]" needs exactly one of "url", "ntfy" and "mqtt", not 2/);
    assert.match(out, /"notify\[0\].on": "exploded" is not one of failed, succeeded, timed-out, retried/);
    assert.match(out, /"notify\[0\].template": template: notify\[0\].template:1: /);
    assert.match(out, /"notify\[0\].topic": mqtt needs a topic/);
  });
});

describe("notify: the example of docs/webhook/notify.md, as written", () => {
  test("its hooks file, its curl line, and what each target gets", async () => {
    const page = "docs/webhook/notify.md";
    const blocks = docBlocks(page, { heading: "An example" });
    const [hooksJson, sh, ntfyHttp, outcomeJson, chatJson] = blocks;
    assert.deepEqual(
      blocks.map((b) => b.lang),
      ["json", "sh", "http", "json", "json"],
    );
    const target = await startReceiver();
    const docDir = await tempDir("webhook-notify-doc-");
    const host = new URL(target.base).host;
    await writeFile(join(docDir, "hooks.json"), hooksJson!.body.replace(/localhost:80[89]0/g, host));
    const [start, curl] = sh!.body.trim().split("\n");
    const args = start!
      .replace(/^webhook /, "")
      .replace(/ &$/, "")
      .split(" ");
    const s = await startServer(args, { cwd: docDir });
    try {
      const r = await run("bash", ["-c", curl!.replace("localhost:9000", `127.0.0.1:${s.port}`)]);
      assert.equal(r.code, 0, r.stderr);
      const got = await eventually(() => target.received.length >= 3 && target.received, 10_000);
      const at = (path: string): Received => got.find((x) => x.path === path)!;
      // The job id and the time vary.
      const vary = (t: string): string => t.replace(/job \w+/, "job J").replace(/after [\d.]+s/, "after Ts");
      const [head, text] = ntfyHttp!.body.split("\n\n");
      const [requestLine, ...headerLines] = head!.split("\n");
      assert.equal(`${at("/deploys").method} ${at("/deploys").path}`, requestLine);
      for (const l of headerLines) {
        const [name, value] = l.split(": ");
        assert.equal(at("/deploys").headers[name!.toLowerCase()], value, name);
      }
      assert.equal(vary(at("/deploys").body), vary(text!));
      const outcome = JSON.parse(at("/outcomes").body) as Record<string, unknown>;
      assert.deepEqual({ ...outcome, job: "J", durationMs: 0 }, { ...(JSON.parse(outcomeJson!.body) as object), job: "J", durationMs: 0 });
      assert.equal(at("/chat").body, chatJson!.body.trim());
    } finally {
      await s.stop();
      await target.close();
      await removeDir(docDir);
    }
  });
});
