// A large XML body is decoded on a thread of its own: the server answers other requests meanwhile (decoding
// megabytes of XML takes seconds here), and the hook gets the same payload as when it is decoded inline.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

let dir = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-xml-thread-");
  const hooks = await writeHooks(dir, [
    {
      id: "xml",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "feed.entry.3.-n" },
        { source: "payload", name: "feed.title" },
      ],
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
