// Attacks on the run console, replay, traces and notify (issue 34) through the real bin/webhook: what
// an attacker (or a damaged file, or a dead target) tried and the server now refuses or rides out.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, shHook, startServer, writeHooks } from "./fixtures/harness.js";
import { startReceiver, type Receiver } from "./fixtures/receiver.js";

let dir = "";
let hooks = "";
before(async () => {
  dir = await tempDir("webhook-attack-console-");
  hooks = await writeHooks(dir, [
    { id: "hi", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "string", name: "secret-out" }] },
    // Echoes a header: a kept request's header values reach the command.
    { id: "note", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "header", name: "X-Note" }] },
    // A pattern that is the token itself, compared with a url parameter.
    {
      id: "guarded",
      "execute-command": "/bin/true",
      "trigger-rule": {
        and: [
          { match: { type: "regex", regex: "^tok-8d1f3a$", parameter: { source: "url", name: "token" } } },
          { match: { type: "regex", regex: "^refs/heads/main$", parameter: { source: "payload", name: "ref" } } },
        ],
      },
    },
  ]);
});
after(() => removeDir(dir));

describe("webhook console attacks", () => {
  test("-console-insecure: a rebound name (DNS rebinding, same-origin to itself) reads no runs and replays nothing", async () => {
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-replay", "-console", "-console-insecure"]);
    try {
      const id = String((await send(`${s.base}/hooks/hi`)).headers["x-job-id"]);
      const port = new URL(s.base).port;
      const evil = { Host: `evil.example:${port}`, Origin: `http://evil.example:${port}`, "Sec-Fetch-Site": "same-origin" };
      const runs = await send(`${s.base}/console/api/runs`, { method: "GET", headers: evil });
      assert.equal(runs.status, 403);
      assert.match(runs.text, /loopback Host/);
      assert.doesNotMatch(runs.text, /secret-out/);
      assert.equal((await send(`${s.base}/console/api/runs/${id}/events`, { method: "GET", headers: evil })).status, 403);
      assert.equal((await send(`${s.base}/jobs/${id}/replay`, { method: "POST", headers: evil })).status, 403);
      // By a loopback name it still works.
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
        const ok = await send(`${s.base}/console/api/runs`, { method: "GET", headers: { Host: host, "Sec-Fetch-Site": "same-origin" } });
        assert.equal(ok.status, 200, host);
      }
    } finally {
      await s.stop();
    }
  });

  test("the hooks view shows no pattern compared with a token (the pattern may be the token)", async () => {
    const s = await startServer(["-hooks", hooks, "-jobs", "-console", "-console-insecure"]);
    try {
      const view = await send(`${s.base}/console/api/hooks`, { method: "GET" });
      assert.equal(view.status, 200);
      assert.doesNotMatch(view.text, /tok-8d1f3a/);
      assert.match(view.text, /url token matches a pattern set in the hooks file/);
      assert.match(view.text, /refs\/heads\/main/, "a pattern on the payload is shown");
    } finally {
      await s.stop();
    }
  });

  test("-jobs-file: a damaged kept request read back after a restart is refused by replay with a 409 saying so; the server stays up", async () => {
    const file = join(dir, "damaged.jsonl");
    const good = { method: "POST", url: "/hooks/note", remoteAddr: "127.0.0.1:5000", headers: [["X-Note", "fine"]], body: "" };
    const damaged: Record<string, unknown> = {
      "no-slash": { ...good, url: "hooks/note" },
      "url-number": { ...good, url: 7 },
      "method-number": { ...good, method: 7 },
      "no-remote": { ...good, remoteAddr: undefined },
      "headers-string": { ...good, headers: "X-Note: x" },
      "header-number": { ...good, headers: [["X-Note", 5]] },
      "header-single": { ...good, headers: [["X-Note"]] },
      "header-triple": { ...good, headers: [["X-Note", "a", "b"]] },
      "header-object": { ...good, headers: [{ name: "X-Note", value: "x" }] },
      "body-number": { ...good, body: 42 },
      "body-cut-object": { ...good, body: undefined, bodyCut: { bytes: 1 } },
      "request-string": "POST /hooks/note",
      "request-array": [],
      "request-number": 5,
    };
    const created = new Date().toISOString();
    const job = (id: string, request: unknown): string =>
      JSON.stringify({ id, hook: "note", state: "succeeded", created, attempts: [{ number: 1, started: created, exitCode: 0 }], output: "", request });
    const lines = ['{"version":2}', job("good", good), job("none", null), ...Object.entries(damaged).map(([id, r]) => job(id, r))];
    await writeFile(file, `${lines.join("\n")}\n`, { mode: 0o600 });
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-replay", "-console", "-console-insecure", "-jobs-file", file]);
    try {
      const replay = (id: string): Promise<{ status: number; text: string }> => send(`${s.base}/jobs/${id}/replay`);
      for (const id of Object.keys(damaged)) {
        const r = await replay(id);
        assert.equal(r.status, 409, `${id}: ${r.text}`);
        assert.equal(JSON.parse(r.text).error, `job ${id} cannot be replayed: its kept request is not well-formed (a damaged record)`, id);
        // Its record still reads, and so does its page's stream.
        assert.equal((await send(`${s.base}/jobs/${id}`, { method: "GET" })).status, 200, id);
        const events = await send(`${s.base}/console/api/runs/${id}/events`, { method: "GET" });
        assert.equal(events.status, 200, id);
        assert.match(events.text, /^event: job\n/, id);
      }
      const none = await replay("none");
      assert.equal(none.status, 409);
      assert.match(none.text, /it kept no request/);
      // The good one next to them replays, and the server stays up.
      const ok = await replay("good");
      assert.equal(ok.status, 202, ok.text);
      const id = String(JSON.parse(ok.text).id);
      const done = await eventually(async () => {
        const j = JSON.parse((await send(`${s.base}/jobs/${id}`, { method: "GET" })).text) as { state: string; output: string };
        return j.state === "succeeded" && j;
      }, 10_000);
      assert.equal(done.output, "fine\n");
      assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
      assert.doesNotMatch(s.logs(), /TypeError|RangeError|at .*\.js:\d+/);
    } finally {
      await s.stop();
    }
  });

  test("traces: oversized and forged traceparent headers are served as usual, and start a trace of their own", async () => {
    const rx = await startReceiver();
    const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.base, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "50" };
    const file = await writeHooks(dir, [shHook("traced", 'echo "$TRACEPARENT"')], "traced.json");
    const s = await startServer(["-hooks", file], { env });
    try {
      const hex = (n: number): string => randomBytes(n).toString("hex");
      const forged: Record<string, { header: string | string[]; traceIds: string[] }> = {};
      const add = (name: string, make: (t: string, p: string) => string | string[], more = 0): void => {
        const traceIds = [hex(16), ...Array.from({ length: more }, () => hex(16))];
        const p = hex(8);
        const made = make(traceIds[0]!, p);
        forged[name] = { header: Array.isArray(made) ? made.map((h, i) => h.replace(traceIds[0]!, traceIds[i]!)) : made, traceIds };
      };
      add("version 00 with 256 KiB after it", (t, p) => `00-${t}-${p}-01-${"a".repeat(256 * 1024)}`);
      add("256 KiB of the same traceparent, comma-joined", (t, p) => Array(4800).fill(`00-${t}-${p}-01`).join(","));
      add("two traceparent fields (W3C: ambiguous, a new trace)", (t, p) => [`00-${t}-${p}-01`, `00-${t}-${p}-01`], 1);
      add("an all-zero trace id", (_t, p) => `00-${"0".repeat(32)}-${p}-01`);
      add("an all-zero parent id", (t) => `00-${t}-${"0".repeat(16)}-01`);
      add("version ff", (t, p) => `ff-${t}-${p}-01`);
      add("upper-case hex", (t, p) => `00-${t.toUpperCase()}-${p}-01`);
      add("a short parent id", (t, p) => `00-${t}-${p.slice(1)}-01`);
      add("latin-1 bytes in the flags", (t, p) => `00-${t}-${p}-0\xe9`);
      add("a header of 256 KiB of junk", () => "z".repeat(256 * 1024));
      for (const [name, f] of Object.entries(forged)) {
        const r = await send(`${s.base}/hooks/traced`, { headers: { traceparent: f.header } });
        assert.equal(r.status, 200, `${name}: ${r.text.slice(0, 200)}`);
        const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01\n$/.exec(r.text);
        assert.ok(m, `${name}: TRACEPARENT ${r.text.slice(0, 200)}`);
        const traceId = m[1]!;
        assert.ok(!f.traceIds.includes(traceId) && !/^0+$/.test(traceId), `${name}: a trace of its own, not ${f.traceIds.join(", ")}`);
        const receive = await eventually(() => spansOf(rx).find((x) => x.traceId === traceId && x.name === "receive"), 15_000);
        assert.equal(receive.parentSpanId, "", `${name}: the receive span has no parent`);
      }
      assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
      assert.doesNotMatch(s.logs(), /TypeError|RangeError|traces: /);
    } finally {
      await s.stop();
      await rx.close();
    }
  });

  test("notify: a target that takes the connection and never answers does not hold the run back; the log names the timeout", async () => {
    const sockets = new Set<Socket>();
    const mute = createServer((c) => sockets.add(c));
    await new Promise<void>((resolve) => mute.listen(0, "127.0.0.1", resolve));
    const port = (mute.address() as { port: number }).port;
    const file = await writeHooks(
      dir,
      [
        shHook("told", "echo ran", {
          notify: [
            { url: `http://127.0.0.1:${port}/hook`, on: ["succeeded"], timeout: "300ms", retries: 0 },
            { ntfy: `http://127.0.0.1:${port}/topic`, on: ["succeeded"], timeout: "300ms", retries: 1 },
          ],
        }),
      ],
      "told.json",
    );
    const s = await startServer(["-hooks", file, "-jobs"]);
    try {
      const started = Date.now();
      const r = await send(`${s.base}/hooks/told`, { timeoutMs: 5_000 });
      assert.equal(r.status, 200);
      assert.equal(r.text, "ran\n");
      const id = String(r.headers["x-job-id"]);
      const job = JSON.parse((await send(`${s.base}/jobs/${id}`, { method: "GET" })).text) as { state: string };
      assert.equal(job.state, "succeeded", "the run is over while its notifications still wait");
      await s.proc.waitFor(
        new RegExp(
          `\\[${id}\\] notify: could not send the succeeded notification of told to POST http://127\\.0\\.0\\.1:${port} \\(1 try\\): it did not answer within the timeout`,
        ),
        10_000,
      );
      await s.proc.waitFor(
        new RegExp(
          `\\[${id}\\] notify: could not send the succeeded notification of told to ntfy http://127\\.0\\.0\\.1:${port} \\(2 tries\\): it did not answer within the timeout`,
        ),
        10_000,
      );
      assert.ok(sockets.size >= 3, `the target took ${sockets.size} connections`);
      // Another run is served as soon as the first: nothing waits on the dead target.
      const again = await send(`${s.base}/hooks/told`, { timeoutMs: 5_000 });
      assert.equal(again.text, "ran\n");
      assert.ok(Date.now() - started < 10_000);
    } finally {
      await s.stop();
      for (const c of sockets) c.destroy();
      mute.close();
    }
  });
});

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
}

/** Every span the receiver got (OTLP JSON). */
function spansOf(rx: Receiver): Span[] {
  const out: Span[] = [];
  for (const r of rx.received.filter((x) => x.path === "/v1/traces")) {
    const body = JSON.parse(r.body) as { resourceSpans: { scopeSpans: { spans: Span[] }[] }[] };
    for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) for (const x of ss.spans) out.push({ ...x, parentSpanId: x.parentSpanId ?? "" });
  }
  return out;
}
