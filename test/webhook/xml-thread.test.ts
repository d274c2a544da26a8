// A large XML body is decoded on a thread of its own: the server answers other requests meanwhile (decoding
// megabytes of XML takes seconds here), and the hook gets the same payload as when it is decoded inline. It is
// decoded only when the hook reads the payload: a flood of large bodies that fail a header rule costs no decoding.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

let dir = "";
let hooks = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-xml-thread-");
  hooks = await writeHooks(dir, [
    {
      id: "xml",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "feed.entry.3.-n" },
        { source: "payload", name: "feed.title" },
      ],
    },
    {
      id: "token",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "payload", name: "feed.title" }],
      "trigger-rule": {
        and: [
          { match: { type: "value", value: "right-token", parameter: { source: "header", name: "X-Token" } } },
          { match: { type: "value", value: "big", parameter: { source: "payload", name: "feed.title" } } },
        ],
      },
    },
    {
      id: "whole",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "entire-payload" }],
    },
    {
      id: "paths",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "r.a.b" },
        { source: "payload", name: "r.e.1" },
        { source: "payload", name: "r.e.7.-k" },
        { source: "payload", name: "r.missing" },
      ],
      "parse-parameters-as-json": [{ source: "payload", name: "r.j" }],
      "trigger-rule": { match: { type: "value", value: "2", parameter: { source: "payload", name: "r.j.n" } } },
    },
  ]);
  s = await startServer(["-hooks", hooks, "-verbose"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

test("a 6 MB XML body: other requests are answered while it is decoded, and its payload is whole", async () => {
  const entries = Array.from({ length: 150_000 }, (_, i) => `<entry n="${i}"><v>x</v></entry>`).join("");
  const body = `<?xml version="1.0"?><feed><title>big</title>${entries}</feed>`;
  let pending = true;
  const started = performance.now();
  const big = send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "application/xml" }, body, timeoutMs: 120_000 }).finally(() => (pending = false));
  // Decoded inline, the body held every other request for most of its own time: the longest wait of a GET /
  // sent meanwhile is compared with the big request's whole time, which a slower machine stretches alike.
  let longest = 0;
  while (pending) {
    const t0 = performance.now();
    const r = await send(`${s.base}/`, { method: "GET" });
    assert.equal(r.text, "OK");
    longest = Math.max(longest, performance.now() - t0);
  }
  const r = await big;
  const whole = performance.now() - started;
  assert.equal(r.status, 200);
  assert.equal(r.text, "3 big\n");
  assert.ok(longest < whole / 2, `a GET / waited ${longest.toFixed(0)} ms of the XML request's ${whole.toFixed(0)} ms`);
});

test("a large body that is not XML after all: the reference's log line, an empty payload, the hook still runs", async () => {
  const body = `<feed>${"<e>x</e>".repeat(20_000)}`; // never closed
  const r = await send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "application/xml" }, body });
  assert.equal(r.status, 200);
  assert.equal(r.text, " \n");
  await s.proc.waitFor(/error parsing XML payload/);
});

test("hostile XML is answered at the pace of the body's size, not its square", async () => {
  // Each of these once took minutes: a doctype search from every "<!" to the body's end, an array copied for every
  // repeated element. The client's 30 s are a hundred times what each takes now.
  const bodies = ["<!a>".repeat(2_000_000), `<r>${"<!a>".repeat(1_000_000)}</r>`, `<r>${"<b/>".repeat(250_000)}</r>`];
  for (const body of bodies) {
    const r = await send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "application/xml" }, body, timeoutMs: 30_000 });
    assert.equal(r.status, 200);
  }
  assert.equal((await send(`${s.base}/`, { method: "GET" })).text, "OK");
});

/** POSTs an XML body from `local` (a loopback address); resolves with the status, the answer and how long it took. */
function postFrom(server: Server, local: string, path: string, body: string, token: string): Promise<{ status: number; text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      `${server.base}${path}`,
      {
        method: "POST",
        localAddress: local,
        agent: false,
        headers: { "Content-Type": "application/xml", "X-Token": token, "Content-Length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), ms: performance.now() - t0 }));
      },
    );
    req.setTimeout(120_000, () => req.destroy(new Error("no answer within 120 s")));
    req.on("error", reject);
    req.end(body);
  });
}

const feed = (entries: number, title = "big"): string =>
  `<?xml version="1.0"?><feed><title>${title}</title>${Array.from({ length: entries }, (_, i) => `<entry n="${i}"><v>x</v></entry>`).join("")}</feed>`;

test("six 8 MB XML bodies failing a header rule, from two addresses: not decoded; memory, a legitimate request and GET / do not wait on them", async () => {
  // Decoded before the rules, one at a time, these took the server past 700 MB and a 96 KB request waited seconds behind them.
  const big = feed(250_000);
  const small = feed(3_000);
  // A server of its own: the peak of its memory is this flood's.
  const fresh = await startServer(["-hooks", hooks]);
  const hwm = (): number => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${fresh.proc.child.pid}/status`, "utf8"))![1]) / 1024;
  let flooding = true;
  let longest = 0;
  const pings = (async () => {
    while (flooding) {
      const t0 = performance.now();
      assert.equal((await send(`${fresh.base}/`, { method: "GET" })).text, "OK");
      longest = Math.max(longest, performance.now() - t0);
    }
  })();
  const flood = Array.from({ length: 6 }, (_, i) => postFrom(fresh, i % 2 ? "127.0.0.2" : "127.0.0.1", "/hooks/token", big, "wrong"));
  const legit = await postFrom(fresh, "127.0.0.3", "/hooks/token", small, "right-token");
  const answers = await Promise.all(flood);
  flooding = false;
  await pings;
  for (const a of answers) assert.deepEqual([a.status, a.text], [200, "Hook rules were not satisfied."]);
  assert.deepEqual([legit.status, legit.text], [200, "big\n"]);
  const peak = hwm();
  await fresh.stop();
  assert.ok(peak < 200, `the server's memory peaked at ${peak.toFixed(0)} MB`);
  assert.ok(legit.ms < 5_000, `the legitimate request waited ${legit.ms.toFixed(0)} ms`);
  assert.ok(longest < 1_000, `a GET / waited ${longest.toFixed(0)} ms`);
});

test("a large body the hook reads in part: the parts it names, a literal dotted key, array items, parse-parameters-as-json; entire-payload whole", async () => {
  const pad = `<pad>${"<p>x</p>".repeat(10_000)}</pad>`;
  const body = `<r><a.b>literal</a.b><a><b>nested</b></a><e>zero</e><e>one</e>${"<e k='v'>n</e>".repeat(10)}<j>{"n": 2}</j>${pad}</r>`;
  assert.ok(body.length > 64 * 1024);
  const r = await send(`${s.base}/hooks/paths`, { headers: { "Content-Type": "application/xml" }, body });
  assert.equal(r.status, 200);
  assert.equal(r.text, "literal one v \n");
  const whole = await send(`${s.base}/hooks/whole`, { headers: { "Content-Type": "application/xml" }, body: feed(3_000, "all") });
  assert.equal(whole.status, 200);
  const payload = JSON.parse(whole.text) as { feed: { title: string; entry: unknown[] } };
  assert.equal(payload.feed.title, "all");
  assert.equal(payload.feed.entry.length, 3_000);
  assert.deepEqual(payload.feed.entry[2_999], { "-n": "2999", v: "x" });
});

test("large bodies the hook reads take turns by client address and size: one client's flood delays another's small body by the decode under way", async () => {
  const body = feed(60_000);
  let done = 0;
  const flood = Array.from({ length: 5 }, () => postFrom(s, "127.0.0.1", "/hooks/xml", body, "").then((r) => (done++, r)));
  // The first answer comes once the other four bodies wait in line (they were sent together with it).
  await Promise.race(flood);
  const small = await postFrom(s, "127.0.0.3", "/hooks/xml", feed(3_000, "small"), "");
  const before = done;
  for (const r of await Promise.all(flood)) assert.deepEqual([r.status, r.text], [200, "3 big\n"]);
  assert.deepEqual([small.status, small.text], [200, "3 small\n"]);
  assert.ok(before <= 2, `${before} of the other client's 5 bodies were decoded before this one`);
});
