// Attacks on the run console and replay through the real bin/webhook: what an attacker tried and
// the server now refuses.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks } from "./fixtures/harness.js";

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
});
