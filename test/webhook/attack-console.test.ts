// Attacks on the run console and replay through the real bin/webhook: what an attacker tried and
// the server now refuses.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks } from "./fixtures/harness.js";

let dir = "";
let hooks = "";
before(async () => {
  dir = await tempDir("webhook-attack-console-");
  hooks = await writeHooks(dir, [
    { id: "hi", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "string", name: "secret-out" }] },
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
});
