// Status-from-exit-code, retry (each attempt visible in
// the job), debounce (a burst runs once) and rate-limit (429 + Retry-After), counted in /metrics.
// Real HTTP, real commands; the tests assert on what ran, never on how long it took.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

interface JobJson {
  id: string;
  hook: string;
  state: string;
  reason?: string;
  attempts: { number: number; exitCode?: number | null; error?: string }[];
  output?: string;
  stderr?: string;
}

let dir = "";
let s: Server;
const flaky = fixture("flaky.sh");
const exit = fixture("exit.sh");
const append = fixture("append.sh");

const json = (value: unknown) => ({ body: JSON.stringify(value), headers: { "Content-Type": "application/json" } });
const lines = async (file: string): Promise<string[]> => (await readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean);

async function job(id: string): Promise<JobJson> {
  const r = await send(`${s.base}/jobs/${id}`, { method: "GET" });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text) as JobJson;
}
const settled = (id: string): Promise<JobJson> =>
  eventually<JobJson | undefined>(async () => {
    const j = await job(id);
    return ["succeeded", "failed", "timed-out", "dropped"].includes(j.state) ? j : undefined;
  }, 15_000) as Promise<JobJson>;

before(async () => {
  dir = await tempDir("webhook-policies-");
  const flakyArgs = (file: string, failures: number, code: number) => [
    { source: "string", name: join(dir, file) },
    { source: "string", name: String(failures) },
    { source: "string", name: String(code) },
  ];
  const hooks = await writeHooks(dir, [
    {
      id: "status",
      "execute-command": exit,
      "pass-arguments-to-command": [{ source: "url", name: "code" }],
      "include-command-output-in-response": true,
      "include-command-output-in-response-on-error": true,
      "status-from-exit-code": true,
    },
    {
      id: "no-stderr",
      "execute-command": exit,
      "pass-arguments-to-command": [{ source: "url", name: "code" }],
      "include-command-output-in-response": true,
      "include-command-output-in-response-on-error": true,
      "exclude-stderr-from-response": true,
    },
    {
      id: "retried",
      "execute-command": flaky,
      "pass-arguments-to-command": flakyArgs("retried.count", 2, 1),
      "include-command-output-in-response": true,
      retry: { attempts: 3, delay: "10ms" },
    },
    {
      id: "gives-up",
      "execute-command": flaky,
      "pass-arguments-to-command": flakyArgs("gives-up.count", 5, 1),
      "include-command-output-in-response": true,
      retry: { attempts: 3, delay: "10ms" },
    },
    {
      id: "only-75",
      "execute-command": flaky,
      "pass-arguments-to-command": flakyArgs("only-75.count", 5, 1),
      "include-command-output-in-response": true,
      retry: { attempts: 3, delay: "10ms", "exit-codes": [75] },
    },
    {
      id: "background-retry",
      "execute-command": flaky,
      "pass-arguments-to-command": flakyArgs("background.count", 1, 75),
      retry: { attempts: 2, delay: "10ms", "exit-codes": [75] },
    },
    {
      id: "sync",
      "execute-command": append,
      "pass-arguments-to-command": [
        { source: "payload", name: "n" },
        { source: "string", name: join(dir, "sync.log") },
      ],
      "response-message": "sync scheduled",
      debounce: "3s",
    },
    {
      id: "limited",
      "execute-command": append,
      "pass-arguments-to-command": [
        { source: "payload", name: "n" },
        { source: "string", name: join(dir, "limited.log") },
      ],
      "include-command-output-in-response": true,
      "rate-limit": { requests: 2, period: "1h" },
    },
    {
      id: "async-plain",
      "execute-command": append,
      "pass-arguments-to-command": [
        { source: "string", name: "ran" },
        { source: "string", name: join(dir, "async.log") },
      ],
      "async-response": true,
    },
  ]);
  s = await startServer(["-hooks", hooks, "-jobs", "-metrics"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

describe("status-from-exit-code", () => {
  test("0 is the success code; 100–255 are HTTP statuses less 300; other failures 500", async () => {
    for (const [code, status] of [
      [0, 200],
      [1, 500],
      [104, 404],
      [109, 409],
      [122, 422],
      [203, 503],
      [99, 500],
      [255, 500],
    ] as const) {
      const r = await send(`${s.base}/hooks/status?code=${code}`);
      assert.equal(r.status, status, `exit ${code}`);
      assert.equal(r.text, `out: exiting ${code}\nerr: exiting ${code}\n`);
    }
  });

  test("exclude-stderr-from-response: the answer holds stdout only", async () => {
    const r = await send(`${s.base}/hooks/no-stderr?code=0`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "out: exiting 0\n");
    const j = await settled(r.headers["x-job-id"] as string);
    assert.equal(j.output, "out: exiting 0\n");
    assert.equal(j.stderr, "err: exiting 0\n", "the job keeps stderr apart");
    const failed = await send(`${s.base}/hooks/no-stderr?code=2`);
    assert.equal(failed.status, 500);
    assert.equal(failed.text, "out: exiting 2\n");
  });
});

describe("retry", () => {
  test("a command failing twice succeeds on its third attempt; the answer is the last attempt's, the job shows all three", async () => {
    const r = await send(`${s.base}/hooks/retried`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "attempt 3\n");
    const j = await settled(r.headers["x-job-id"] as string);
    assert.equal(j.state, "succeeded");
    assert.deepEqual(
      j.attempts.map((a) => [a.number, a.exitCode, a.error]),
      [
        [1, 1, "exit status 1"],
        [2, 1, "exit status 1"],
        [3, 0, undefined],
      ],
    );
  });

  test("after the last attempt the job has failed; exit codes not listed do not retry", async () => {
    const r = await send(`${s.base}/hooks/gives-up`);
    assert.equal(r.status, 500);
    const j = await settled(r.headers["x-job-id"] as string);
    assert.equal(j.state, "failed");
    assert.equal(j.attempts.length, 3);
    assert.deepEqual(await lines(join(dir, "gives-up.count")), ["run", "run", "run"]);
    const once = await send(`${s.base}/hooks/only-75`);
    assert.equal((await settled(once.headers["x-job-id"] as string)).attempts.length, 1);
    assert.deepEqual(await lines(join(dir, "only-75.count")), ["run"]);
  });

  test("a hook that answers at once retries in the background", async () => {
    const r = await send(`${s.base}/hooks/background-retry`);
    assert.equal(r.status, 200);
    const j = await settled(r.headers["x-job-id"] as string);
    assert.equal(j.state, "succeeded");
    assert.deepEqual(
      j.attempts.map((a) => a.exitCode),
      [75, 0],
    );
  });
});

describe("debounce", () => {
  test("a burst of five triggers runs once, with the last trigger's values; the others are dropped as superseded", async () => {
    const replies = await Promise.all([1, 2, 3, 4, 5].map((n) => send(`${s.base}/hooks/sync`, json({ n: String(n) }))));
    for (const r of replies) {
      assert.equal(r.status, 200);
      assert.equal(r.text, "sync scheduled");
    }
    const jobs = await Promise.all(replies.map((r) => settled(r.headers["x-job-id"] as string)));
    const ran = jobs.filter((j) => j.state === "succeeded");
    assert.equal(ran.length, 1, JSON.stringify(jobs));
    const dropped = jobs.filter((j) => j.state === "dropped");
    assert.equal(dropped.length, 4);
    for (const d of dropped) assert.match(d.reason!, /^debounced: superseded by [0-9a-f]{12}$/);
    // What ran is the trigger that came last, and only it.
    const last = replies.findIndex((r) => r.headers["x-job-id"] === ran[0]!.id) + 1;
    assert.deepEqual(await lines(join(dir, "sync.log")), [String(last)]);
  });
});

describe("rate-limit", () => {
  test("beyond 2 per hour: 429 with Retry-After, and the command does not run", async () => {
    const a = await send(`${s.base}/hooks/limited`, json({ n: "a" }));
    const b = await send(`${s.base}/hooks/limited`, json({ n: "b" }));
    const c = await send(`${s.base}/hooks/limited`, json({ n: "c" }));
    assert.deepEqual([a.status, b.status, c.status], [200, 200, 429]);
    const retryAfter = Number(c.headers["retry-after"]);
    assert.ok(retryAfter > 3000 && retryAfter <= 3600, String(retryAfter));
    assert.match(c.text, /rate-limit/);
    assert.equal(c.headers["x-job-id"], undefined);
    assert.deepEqual(await lines(join(dir, "limited.log")), ["a", "b"]);
  });
});

describe("async-response", () => {
  test("202 Accepted with Location, then the command runs", async () => {
    const r = await send(`${s.base}/hooks/async-plain`);
    assert.equal(r.status, 202);
    assert.equal(r.headers.location, `/jobs/${r.headers["x-job-id"] as string}`);
    await eventually(async () => (await lines(join(dir, "async.log"))).length === 1);
  });
});

describe("metrics", () => {
  test("jobs by state, retries, debounced and rate-limited triggers are counted", async () => {
    const text = (await send(`${s.base}/metrics`, { method: "GET" })).text;
    const value = (name: string): number => {
      const m = new RegExp(`^${name.replace(/[{}"=]/g, (c) => `\\${c}`)} (\\d+)$`, "m").exec(text);
      return m ? Number(m[1]) : 0;
    };
    assert.ok(value('webhook_jobs_total{hook="retried",state="succeeded"}') >= 1, text);
    assert.ok(value('webhook_jobs_total{hook="gives-up",state="failed"}') >= 1, text);
    assert.ok(value('webhook_job_retries_total{hook="retried"}') >= 2, text);
    assert.ok(value('webhook_debounced_total{hook="sync"}') >= 4, text);
    assert.ok(value('webhook_rate_limited_total{hook="limited"}') >= 1, text);
  });
});
