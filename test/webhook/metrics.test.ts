// -metrics (Prometheus text at GET /metrics) and GET /healthz, with the real
// bin/webhook over real HTTP.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, shHook as sh, startServer, writeHooks } from "./fixtures/harness.js";

let dir = "";
before(async () => {
  dir = await tempDir("webhook-metrics-");
});
after(() => removeDir(dir));

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the exposition text, checking every line's syntax and that each sample's family was declared. */
function parse(text: string): Sample[] {
  assert.ok(text.endsWith("\n"), "the text ends with a newline");
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.slice(0, -1).split("\n")) {
    const type = /^# TYPE (\w+) (counter|gauge|histogram)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (/^# HELP \w+ .+$/.test(line)) continue;
    const m = /^(\w+)\{((?:\w+="(?:[^"\\\n]|\\[\\"n])*",?)*)\} (\S+)$/.exec(line);
    assert.ok(m, `not a valid sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of m[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const name = m[1]!;
    const family = name.replace(/_(bucket|sum|count)$/, "");
    assert.ok(types.has(name) || types.get(family) === "histogram", `${name} has no # TYPE line before it`);
    const value = Number(m[3]);
    assert.ok(!Number.isNaN(value), `bad value in ${line}`);
    samples.push({ name, labels, value });
  }
  for (const t of [
    "webhook_requests_total",
    "webhook_executions_total",
    "webhook_execution_duration_seconds",
    "webhook_running_commands",
    "webhook_queue_depth",
  ]) {
    assert.ok(types.has(t), `# TYPE ${t} missing`);
  }
  return samples;
}

function value(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  return samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === Object.keys(labels).length,
  )?.value;
}

describe("-metrics", () => {
  test("counts requests, executions and durations after a mix of requests", async (t) => {
    const gate = join(dir, "go");
    const hooks = await writeHooks(dir, [
      sh("ok", "echo hi"),
      sh("ruled", "echo ruled", {
        "trigger-rule": { match: { type: "value", value: "yes", parameter: { source: "header", name: "X-Token" } } },
        "trigger-rule-mismatch-http-response-code": 400,
      }),
      sh("fails", "echo bad; exit 3"),
      { id: "missing", "execute-command": join(dir, "no-such-command"), "include-command-output-in-response": true },
      sh("postonly", "true", { "http-methods": ["POST"] }),
      sh("slow", `while [ ! -e ${gate} ]; do sleep 0.05; done`, { "include-command-output-in-response": false }),
    ]);
    const s = await startServer(["-metrics", "-hooks", hooks]);
    t.after(() => s.stop());
    const hook = (id: string, headers: Record<string, string> = {}): Promise<number> =>
      send(`${s.base}/hooks/${id}`, { method: "POST", headers }).then((r) => r.status);

    assert.equal(await hook("ok"), 200);
    assert.equal(await hook("ok"), 200);
    assert.equal(await hook("ruled", { "X-Token": "yes" }), 200);
    assert.equal(await hook("ruled", { "X-Token": "no" }), 400);
    assert.equal(await hook("fails"), 500);
    assert.equal(await hook("missing"), 500);
    assert.equal(await hook("nope"), 404);
    assert.equal((await send(`${s.base}/hooks/postonly`, { method: "GET" })).status, 405);
    assert.equal(await hook("slow"), 200);

    const r = await send(`${s.base}/metrics`, { method: "GET" });
    assert.equal(r.status, 200);
    assert.equal(r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    const m = parse(r.text);
    const req = (hook: string, status: string): number | undefined => value(m, "webhook_requests_total", { hook, status });
    assert.equal(req("ok", "200"), 2);
    assert.equal(req("ruled", "200"), 1);
    assert.equal(req("ruled", "400"), 1);
    assert.equal(req("fails", "500"), 1);
    assert.equal(req("missing", "500"), 1);
    assert.equal(req("", "404"), 1, 'an unknown hook id counts under hook=""');
    assert.equal(req("postonly", "405"), 1);
    assert.equal(req("slow", "200"), 1);
    assert.equal(
      m.filter((x) => x.name === "webhook_requests_total").reduce((a, x) => a + x.value, 0),
      9,
    );

    const exe = (hook: string, outcome: string): number | undefined => value(m, "webhook_executions_total", { hook, outcome });
    assert.equal(exe("ok", "success"), 2);
    assert.equal(exe("ruled", "success"), 1);
    assert.equal(value(m, "webhook_executions_total", { hook: "ruled", outcome: "failure" }), undefined, "a mismatched rule runs nothing");
    assert.equal(exe("fails", "failure"), 1);
    assert.equal(exe("missing", "error"), 1);
    assert.equal(value(m, "webhook_running_commands", { hook: "slow" }), 1);

    // The histogram of "ok": cumulative buckets with increasing bounds, +Inf equal to the count.
    const buckets = m.filter((x) => x.name === "webhook_execution_duration_seconds_bucket" && x.labels["hook"] === "ok");
    assert.ok(buckets.length > 2);
    assert.equal(buckets.at(-1)!.labels["le"], "+Inf");
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, "buckets are cumulative");
      if (i < buckets.length - 1) assert.ok(Number(buckets[i]!.labels["le"]) > Number(buckets[i - 1]!.labels["le"]));
    }
    assert.equal(buckets.at(-1)!.value, 2);
    assert.equal(value(m, "webhook_execution_duration_seconds_count", { hook: "ok" }), 2);
    assert.ok(value(m, "webhook_execution_duration_seconds_sum", { hook: "ok" })! > 0);
    assert.equal(value(m, "webhook_execution_duration_seconds_count", { hook: "missing" }), undefined, "a command that never started has no duration");

    // The running gauge drops when the command ends; its run is then counted.
    await writeFile(gate, "");
    await eventually(async () => {
      const after = parse((await send(`${s.base}/metrics`, { method: "GET" })).text);
      assert.equal(value(after, "webhook_running_commands", { hook: "slow" }), undefined);
      assert.equal(value(after, "webhook_executions_total", { hook: "slow", outcome: "success" }), 1);
      return true;
    }, 10_000);
  });

  test("without -metrics, /metrics is 404; /healthz answers OK either way", async (t) => {
    const hooks = await writeHooks(dir, [sh("ok", "echo hi")], "plain.json");
    const s = await startServer(["-hooks", hooks]);
    t.after(() => s.stop());
    assert.equal((await send(`${s.base}/metrics`, { method: "GET" })).status, 404);
    const h = await send(`${s.base}/healthz`, { method: "GET" });
    assert.equal(h.status, 200);
    assert.equal(h.text, "OK");
  });

  test('the endpoints never shadow a hook: with -urlprefix "" a hook named metrics is served', async (t) => {
    const hooks = await writeHooks(dir, [sh("metrics", "echo the-hook"), sh("healthz", "echo the-health-hook")], "shadow.json");
    const s = await startServer(["-metrics", "-urlprefix", "", "-hooks", hooks]);
    t.after(() => s.stop());
    assert.equal((await send(`${s.base}/metrics`, { method: "GET" })).text, "the-hook\n");
    assert.equal((await send(`${s.base}/healthz`, { method: "GET" })).text, "the-health-hook\n");
  });
});

describe("/healthz during shutdown", () => {
  test("a request that completes after SIGTERM gets 503", async (t) => {
    const hooks = await writeHooks(dir, [sh("ok", "true")], "health.json");
    const s = await startServer(["-verbose", "-hooks", hooks]);
    t.after(() => s.stop());
    const socket = connect(s.port, "127.0.0.1");
    t.after(() => socket.destroy());
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    let reply = "";
    socket.on("data", (d: Buffer) => (reply += d.toString()));
    // Half a request: the server must wait for the rest before it can shut down.
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    // Wait until the server has read those bytes: a connection it has read nothing from is idle,
    // and idle connections are closed at once on shutdown (as Go's Shutdown does).
    await eventually(() => delivered(s.port, socket.localPort!), 10_000);
    s.proc.child.kill("SIGTERM");
    await s.proc.waitFor(/caught \w+ signal; exiting/, 10_000);
    socket.write("\r\n");
    await eventually(() => reply.endsWith("shutting down"), 10_000);
    assert.match(reply, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
    assert.match(reply, /Connection: close\r\n/);
  });
});

/**
 * Whether everything the client on `clientPort` sent to `serverPort` was read by the server: the
 * client's send queue and the server's receive queue are both empty (Linux's /proc/net/tcp).
 */
function delivered(serverPort: number, clientPort: number): boolean {
  const hex = (port: number): string => port.toString(16).toUpperCase().padStart(4, "0");
  let client: string | undefined;
  let server: string | undefined;
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const [, local, remote, , queues] = line.trim().split(/\s+/);
    if (local?.endsWith(`:${hex(clientPort)}`) && remote?.endsWith(`:${hex(serverPort)}`)) client = queues;
    if (local?.endsWith(`:${hex(serverPort)}`) && remote?.endsWith(`:${hex(clientPort)}`)) server = queues;
  }
  return client?.startsWith("00000000:") === true && server?.endsWith(":00000000") === true;
}
