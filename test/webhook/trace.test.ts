// Traces of the real bin/webhook, exported to a real OTLP/HTTP receiver (the protocol's JSON form,
// written here: the OpenTelemetry Collector is not in our registries). One trace per request,
// receive → rules → dispatch → command, under the caller's traceparent; the command gets its span
// as TRACEPARENT. With -queue, the job's NATS message carries the traceparent, and the instance
// that pulls it continues the same trace. Without the variables, nothing is sent and no
// TRACEPARENT is set; a pulled job's notify target hears from the instance that ran it. The example of docs/webhook/traces.md runs as written.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { docBlocks } from "../fixtures/docs.js";
import { eventually, removeDir, run, tempDir } from "../helpers.js";
import { send, shHook, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";
import { startReceiver, type Receiver } from "./fixtures/receiver.js";

interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
}

/** OTLP's span kinds. */
const KIND = { internal: 1, server: 2, producer: 4, consumer: 5 };

/** Every span the receiver got (OTLP JSON: ids in hex). */
function spansOf(rx: Receiver): Span[] {
  const out: Span[] = [];
  for (const r of rx.received.filter((x) => x.path === "/v1/traces")) {
    const body = JSON.parse(r.body) as {
      resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: Omit<Span, "service">[] }[] }[];
    };
    for (const rs of body.resourceSpans) {
      const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "";
      for (const ss of rs.scopeSpans) for (const s of ss.spans) out.push({ ...s, parentSpanId: s.parentSpanId ?? "", service });
    }
  }
  return out;
}

/** The spans of trace `traceId`, once those named are all there, by name. */
async function trace(rx: Receiver, traceId: string, names: string[]): Promise<Record<string, Span>> {
  return eventually(() => {
    const byName = Object.fromEntries(
      spansOf(rx)
        .filter((s) => s.traceId === traceId)
        .map((s) => [s.name, s]),
    );
    return names.every((n) => byName[n]) && byName;
  }, 15_000);
}

const otel = (rx: Receiver, service: string, instance: string): NodeJS.ProcessEnv => ({
  ...process.env,
  OTEL_EXPORTER_OTLP_ENDPOINT: rx.base,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_BSP_SCHEDULE_DELAY: "50",
  OTEL_SERVICE_NAME: service,
  INSTANCE: instance,
});

const hex = (bytes: number): string => randomBytes(bytes).toString("hex");
const traceparent = (): { header: string; traceId: string; spanId: string } => {
  const traceId = hex(16);
  const spanId = hex(8);
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
};

/** The hook: prints where it ran and its TRACEPARENT, in the answer; its rule wants X-Ok: yes. */
const hook = shHook("traced", `echo "$INSTANCE $\{TRACEPARENT-unset}"`, {
  "trigger-rule": { match: { type: "value", value: "yes", parameter: { source: "header", name: "X-Ok" } } },
});

let dir: string;
let rx: Receiver;

before(async () => {
  dir = await tempDir("webhook-trace-");
  rx = await startReceiver();
});

after(async () => {
  await rx.close();
  await removeDir(dir);
});

describe("traces", () => {
  test("one trace per request under the caller's traceparent: receive, rules, dispatch, command; TRACEPARENT for the command", async () => {
    const server = await startServer(["-hooks", await writeHooks(dir, [hook])], { env: otel(rx, "webhook-a", "a") });
    try {
      const caller = traceparent();
      const r = await send(`${server.base}/hooks/traced`, { headers: { traceparent: caller.header, "X-Ok": "yes" } });
      assert.equal(r.status, 200);
      const [, given] = r.text.trim().split(" ");
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(given ?? "");
      assert.ok(m, `TRACEPARENT: ${r.text}`);
      assert.equal(m[1], caller.traceId);
      const s = await trace(rx, caller.traceId, ["receive", "rules", "dispatch", "command"]);
      assert.equal(s["receive"]!.parentSpanId, caller.spanId);
      assert.equal(s["receive"]!.kind, KIND.server);
      assert.equal(s["receive"]!.service, "webhook-a");
      assert.equal(s["rules"]!.parentSpanId, s["receive"]!.spanId);
      assert.equal(s["dispatch"]!.parentSpanId, s["receive"]!.spanId);
      assert.equal(s["command"]!.parentSpanId, s["dispatch"]!.spanId);
      assert.equal(s["command"]!.spanId, m[2], "the command's TRACEPARENT is its span");

      // No traceparent (or a broken one): a trace of its own.
      const own = await send(`${server.base}/hooks/traced`, { headers: { traceparent: "00-zz-broken", "X-Ok": "yes" } });
      const ownId = /^a 00-([0-9a-f]{32})-/.exec(own.text)?.[1];
      assert.ok(ownId && !/^0+$/.test(ownId), own.text);
      const o = await trace(rx, ownId, ["receive", "command"]);
      assert.equal(o["receive"]!.parentSpanId, "");
    } finally {
      await server.stop();
    }
  });

  test("off without OTEL_EXPORTER_OTLP_ENDPOINT: no TRACEPARENT, nothing sent", async () => {
    const before = rx.received.length;
    const server = await startServer(["-hooks", await writeHooks(dir, [hook], "off.json")], { env: { ...process.env, INSTANCE: "off" } });
    try {
      const r = await send(`${server.base}/hooks/traced`, { headers: { traceparent: traceparent().header, "X-Ok": "yes" } });
      assert.equal(r.text, "off unset\n");
    } finally {
      await server.stop();
    }
    assert.equal(rx.received.length, before);
  });
});

describe("traces with -queue", () => {
  let nats: Nats;
  let a: Server;
  let b: Server;

  before(async () => {
    nats = await startNats();
    // notify too: the instance that ran a job sends its outcome, once.
    const hooks = await writeHooks(dir, [{ ...(hook as object), notify: [{ url: `${rx.base}/notify`, on: ["succeeded"] }] }], "queue.json");
    a = await startServer(["-hooks", hooks, "-queue", nats.url], { env: otel(rx, "webhook-a", "a") });
    b = await startServer(["-hooks", hooks, "-queue", nats.url], { env: otel(rx, "webhook-b", "b") });
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await nats?.close();
  });

  test("the instance that pulls the job continues the trace from the message's traceparent header", async () => {
    // Both instances pull: send to a until one job ran on b.
    let ran: { caller: ReturnType<typeof traceparent>; text: string } | undefined;
    let sent = 0;
    for (let i = 0; i < 40 && !ran; i++, sent++) {
      const caller = traceparent();
      const r = await send(`${a.base}/hooks/traced`, { headers: { traceparent: caller.header, "X-Ok": "yes" } });
      assert.equal(r.status, 200, r.text);
      if (r.text.startsWith("b ")) ran = { caller, text: r.text };
    }
    assert.ok(ran, "one of 40 jobs ran on b");
    const given = ran.text.trim().split(" ")[1]!;
    assert.ok(given.startsWith(`00-${ran.caller.traceId}-`), given);
    const s = await trace(rx, ran.caller.traceId, ["receive", "dispatch", "publish", "pull", "command"]);
    assert.deepEqual(
      ["receive", "dispatch", "publish", "pull", "command"].map((n) => s[n]!.service),
      ["webhook-a", "webhook-a", "webhook-a", "webhook-b", "webhook-b"],
    );
    assert.equal(s["publish"]!.kind, KIND.producer);
    assert.equal(s["publish"]!.parentSpanId, s["dispatch"]!.spanId);
    assert.equal(s["pull"]!.kind, KIND.consumer);
    assert.equal(s["pull"]!.parentSpanId, s["publish"]!.spanId, "the pull continues the message's traceparent");
    assert.equal(s["command"]!.parentSpanId, s["pull"]!.spanId);
    assert.equal(given, `00-${ran.caller.traceId}-${s["command"]!.spanId}-01`);
    const notified = await eventually(() => {
      const n = rx.received.filter((r) => r.path === "/notify").map((r) => JSON.parse(r.body) as { job: string; output: string });
      return n.length >= sent && n;
    }, 15_000);
    assert.equal(new Set(notified.map((n) => n.job)).size, sent, "one notification per job");
    assert.ok(
      notified.some((n) => n.output === ran!.text),
      "b's job was notified by b, with its output",
    );
  });
});

describe("traces: the example of docs/webhook/traces.md, as written", () => {
  test("its hooks file and start line; its curl prints a TRACEPARENT of the caller's trace, and the receiver gets that trace", async () => {
    const [hooksJson, sh] = docBlocks("docs/webhook/traces.md", { heading: "An example" });
    assert.equal(sh?.lang, "sh");
    await writeFile(join(dir, "hooks.json"), hooksJson!.body);
    const [start, curl, shown] = sh!.body.trim().split("\n");
    const words = start!.replace(/ &$/, "").split(" ");
    const env: NodeJS.ProcessEnv = { ...process.env, OTEL_BSP_SCHEDULE_DELAY: "50" };
    while (/^[A-Z_]+=/.test(words[0]!)) {
      const [name, value] = words.shift()!.split("=");
      env[name!] = value!.replace("http://localhost:4318", rx.base);
    }
    assert.equal(words.shift(), "webhook");
    const s = await startServer(words, { cwd: dir, env });
    try {
      const r = await run("bash", ["-c", curl!.replace("localhost:9000", `127.0.0.1:${s.port}`)]);
      assert.equal(r.code, 0, r.stderr);
      const expected = shown!.replace(/^# /, "").replace("<the command's span id>", "([0-9a-f]{16})");
      const m = new RegExp(`^${expected}$`).exec(r.stdout.trim());
      assert.ok(m, `${r.stdout} is ${shown}`);
      const traceId = /00-([0-9a-f]{32})-/.exec(curl!)![1]!;
      const spans = await trace(rx, traceId, ["receive", "dispatch", "command"]);
      assert.equal(spans["command"]!.spanId, m[1]);
      assert.equal(spans["receive"]!.service, env["OTEL_SERVICE_NAME"]);
    } finally {
      await s.stop();
    }
  });
});
