// With -jobs every triggered execution is a job — its id in the answer's
// X-Job-Id, GET /jobs/<id> and GET /jobs?hook=ID as JSON, retention by count and age, a history
// file that survives a restart (and a corrupt one that does not stop the start), access by bearer
// token or basic auth — and async-response answers 202 with the job's Location. Real HTTP to
// bin/webhook, real commands; waits are for observable states, never fixed sleeps.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { readJobsFile } from "./fixtures/jobs-file.js";

interface JobJson {
  id: string;
  hook: string;
  state: string;
  created: string;
  started?: string;
  ended?: string;
  durationMs?: number;
  attempts: { number: number; started: string; ended?: string; exitCode?: number | null; signal?: string; error?: string; timedOut?: boolean }[];
  exitCode?: number | null;
  signal?: string;
  error?: string;
  reason?: string;
  output?: string;
  outputCut?: number;
}

let dir = "";
before(async () => {
  dir = await tempDir("webhook-jobs-");
});
after(async () => {
  await removeDir(dir);
});

async function job(s: Server, id: string, headers: Record<string, string> = {}): Promise<JobJson> {
  const r = await send(`${s.base}/jobs/${id}`, { method: "GET", headers });
  assert.equal(r.status, 200, `GET /jobs/${id}: ${r.status} ${r.text}`);
  assert.equal(r.headers["content-type"], "application/json");
  return JSON.parse(r.text) as JobJson;
}

/** The job once it reached `state` (or any final state when none is given). */
async function settled(s: Server, id: string, state?: string): Promise<JobJson> {
  return eventually<JobJson | undefined>(async () => {
    const j = await job(s, id);
    const final = ["succeeded", "failed", "timed-out", "dropped"].includes(j.state);
    return (state === undefined ? final : j.state === state) ? j : undefined;
  }, 15_000) as Promise<JobJson>;
}

const mixed = fixture("mixed.sh");
const fail = fixture("fail.sh");
const slow = fixture("slow.sh");

describe("without -jobs", () => {
  test("no job header and no /jobs route: the answers are the reference's; retry and async-response still work", async () => {
    const count = join(dir, "plain-retry.count");
    const hooks = await writeHooks(
      dir,
      [
        { id: "plain", "execute-command": mixed, "include-command-output-in-response": true },
        {
          id: "retried",
          "execute-command": fixture("flaky.sh"),
          "pass-arguments-to-command": [
            { source: "string", name: count },
            { source: "string", name: "1" },
            { source: "string", name: "3" },
          ],
          "include-command-output-in-response": true,
          retry: { attempts: 2, delay: "10ms" },
        },
        { id: "later", "execute-command": mixed, "async-response": true },
      ],
      "plain.json",
    );
    const s = await startServer(["-hooks", hooks]);
    try {
      const r = await send(`${s.base}/hooks/plain`);
      assert.equal(r.status, 200);
      assert.equal(r.headers["x-job-id"], undefined);
      const jobs = await send(`${s.base}/jobs`, { method: "GET" });
      assert.equal(jobs.status, 404);
      assert.equal(jobs.text, "404 page not found\n");
      const retried = await send(`${s.base}/hooks/retried`);
      assert.equal(retried.status, 200);
      assert.equal(retried.text, "attempt 2\n");
      assert.equal(retried.headers["x-job-id"], undefined);
      const later = await send(`${s.base}/hooks/later`);
      assert.equal(later.status, 202);
      assert.equal(later.headers.location, undefined);
    } finally {
      await s.stop();
    }
  });
});

describe("-jobs", () => {
  let s: Server;
  before(async () => {
    const hooks = await writeHooks(
      dir,
      [
        { id: "ok", "execute-command": mixed, "include-command-output-in-response": true },
        { id: "fails", "execute-command": fail, "include-command-output-in-response": true },
        {
          id: "stuck",
          "execute-command": slow,
          "pass-arguments-to-command": [
            { source: "string", name: join(dir, "never") },
            { source: "string", name: join(dir, "x") },
          ],
          "command-timeout": "100ms",
          "include-command-output-in-response": true,
        },
        {
          id: "one-at-a-time",
          "execute-command": slow,
          "pass-arguments-to-command": [
            { source: "payload", name: "wait" },
            { source: "payload", name: "done" },
          ],
          "max-concurrency": 1,
        },
        { id: "later", "execute-command": mixed, "async-response": true, "response-message": "accepted" },
        {
          id: "chatty",
          "execute-command": "/bin/sh",
          "pass-arguments-to-command": [
            { source: "string", name: "-c" },
            { source: "string", name: "printf 'a%.0s' $(seq 100); echo END" },
          ],
          "include-command-output-in-response": true,
        },
      ],
      "jobs.json",
    );
    s = await startServer(["-hooks", hooks, "-jobs", "-jobs-output", "16"]);
  });
  after(async () => {
    await s?.stop();
  });

  test("without -jobs-token or -jobs-auth the start-up log warns that /jobs answers anyone", async () => {
    await eventually(() => /warning: \/jobs answers anyone who can reach this server.*set -jobs-token or -jobs-auth/.test(s.logs()));
  });

  test("a captured hook's answer names its job; the job tells hook, state, attempt, exit status, times and output", async () => {
    const r = await send(`${s.base}/hooks/ok`);
    assert.equal(r.status, 200);
    const id = r.headers["x-job-id"] as string;
    assert.match(id, /^[0-9a-f]{12}$/);
    const j = await settled(s, id);
    assert.equal(j.id, id);
    assert.equal(j.hook, "ok");
    assert.equal(j.state, "succeeded");
    assert.equal(j.exitCode, 0);
    assert.equal(j.attempts.length, 1);
    assert.equal(j.attempts[0]!.exitCode, 0);
    assert.ok(Date.parse(j.created) <= Date.parse(j.started!) && Date.parse(j.started!) <= Date.parse(j.ended!));
    assert.equal(typeof j.durationMs, "number");
    assert.equal(j.output, "out one\nerr one\nout two\n".slice(-16));
    assert.equal(j.outputCut, 24);
  });

  test("a failing command: state failed, with Go's error and the exit code", async () => {
    const r = await send(`${s.base}/hooks/fails`);
    assert.equal(r.status, 500);
    const j = await settled(s, r.headers["x-job-id"] as string);
    assert.equal(j.state, "failed");
    assert.equal(j.exitCode, 3);
    assert.equal(j.error, "exit status 3");
  });

  test("a command stopped by its command-timeout: state timed-out, with the signal", async () => {
    const r = await send(`${s.base}/hooks/stuck`);
    assert.equal(r.status, 504);
    const j = await settled(s, r.headers["x-job-id"] as string);
    assert.equal(j.state, "timed-out");
    assert.equal(j.exitCode, null);
    assert.equal(j.signal, "SIGTERM");
    assert.equal(j.attempts[0]!.timedOut, true);
  });

  test("the output kept is the tail, -jobs-output bytes", async () => {
    const r = await send(`${s.base}/hooks/chatty`);
    const j = await settled(s, r.headers["x-job-id"] as string);
    assert.equal(j.output, "aaaaaaaaaaaaEND\n");
    assert.equal(j.outputCut, 104);
  });

  test("queued while its hook's max-concurrency is taken, then running, then succeeded", async () => {
    const [gate1, gate2] = [join(dir, "gate1"), join(dir, "gate2")];
    const body = (wait: string, done: string) => ({ body: JSON.stringify({ wait, done }), headers: { "Content-Type": "application/json" } });
    const first = await send(`${s.base}/hooks/one-at-a-time`, body(gate1, join(dir, "done1")));
    const second = await send(`${s.base}/hooks/one-at-a-time`, body(gate2, join(dir, "done2")));
    const [a, b] = [first.headers["x-job-id"] as string, second.headers["x-job-id"] as string];
    await settled(s, a, "running");
    assert.equal((await job(s, b)).state, "queued");
    await writeFile(gate1, "");
    await settled(s, a, "succeeded");
    await settled(s, b, "running");
    await writeFile(gate2, "");
    const done = await settled(s, b, "succeeded");
    assert.ok(existsSync(join(dir, "done2")));
    assert.equal(done.attempts.length, 1);
  });

  test("GET /jobs?hook=ID lists that hook's jobs, newest first, without their output", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await send(`${s.base}/hooks/ok`)).headers["x-job-id"] as string);
    await send(`${s.base}/hooks/fails`);
    const r = await send(`${s.base}/jobs?hook=ok`, { method: "GET" });
    assert.equal(r.status, 200);
    const list = (JSON.parse(r.text) as { jobs: JobJson[] }).jobs;
    assert.ok(list.every((j) => j.hook === "ok" && j.output === undefined));
    assert.deepEqual(
      list.slice(0, 3).map((j) => j.id),
      ids.reverse(),
    );
    const failed = (JSON.parse((await send(`${s.base}/jobs?state=failed`, { method: "GET" })).text) as { jobs: JobJson[] }).jobs;
    assert.ok(failed.length >= 1 && failed.every((j) => j.state === "failed"));
  });

  test("an unknown job is a JSON 404; other methods get 405", async () => {
    const r = await send(`${s.base}/jobs/nope`, { method: "GET" });
    assert.equal(r.status, 404);
    assert.match((JSON.parse(r.text) as { error: string }).error, /no job nope/);
    const post = await send(`${s.base}/jobs`, { method: "POST" });
    assert.equal(post.status, 405);
  });

  test("async-response: 202 Accepted at once with the job's Location; the job runs to its end", async () => {
    const r = await send(`${s.base}/hooks/later`);
    assert.equal(r.status, 202);
    assert.equal(r.text, "accepted");
    const id = r.headers["x-job-id"] as string;
    assert.equal(r.headers.location, `/jobs/${id}`);
    const j = await settled(s, id);
    assert.equal(j.state, "succeeded");
    assert.equal(j.output, "out one\nerr one\nout two\n".slice(-16));
  });
});

describe("retention and the history file", () => {
  test("-jobs-keep: the oldest finished jobs go first", async () => {
    const hooks = await writeHooks(dir, [{ id: "ok", "execute-command": mixed, "include-command-output-in-response": true }], "keep.json");
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-keep", "2"]);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await send(`${s.base}/hooks/ok`)).headers["x-job-id"] as string);
      assert.equal((await send(`${s.base}/jobs/${ids[0]}`, { method: "GET" })).status, 404);
      assert.equal((await send(`${s.base}/jobs/${ids[2]}`, { method: "GET" })).status, 200);
      const list = JSON.parse((await send(`${s.base}/jobs`, { method: "GET" })).text) as { jobs: JobJson[] };
      assert.deepEqual(
        list.jobs.map((j) => j.id),
        [ids[2], ids[1]],
      );
    } finally {
      await s.stop();
    }
  });

  test("-jobs-max-age: a finished job is forgotten once older", async () => {
    const hooks = await writeHooks(dir, [{ id: "ok", "execute-command": mixed, "include-command-output-in-response": true }], "age.json");
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-max-age", "300ms"]);
    try {
      const id = (await send(`${s.base}/hooks/ok`)).headers["x-job-id"] as string;
      await eventually(async () => (await send(`${s.base}/jobs/${id}`, { method: "GET" })).status === 404);
    } finally {
      await s.stop();
    }
  });

  test("-jobs-file: the history survives a restart; a corrupt file is set aside and the server starts", async () => {
    const hooks = await writeHooks(dir, [{ id: "ok", "execute-command": mixed, "include-command-output-in-response": true }], "file.json");
    const file = join(dir, "jobs-history.json");
    let s = await startServer(["-hooks", hooks, "-jobs", "-jobs-file", file]);
    const id = (await send(`${s.base}/hooks/ok`)).headers["x-job-id"] as string;
    await s.stop();
    const saved = await readJobsFile(file);
    assert.equal(saved[0]!.id, id);
    s = await startServer(["-hooks", hooks, "-jobs", "-jobs-file", file]);
    try {
      const j = await job(s, id);
      assert.equal(j.state, "succeeded");
      assert.equal(j.output, "out one\nerr one\nout two\n");
    } finally {
      await s.stop();
    }
    await writeFile(file, '{"version": 1, "jobs": [{"id": "x"');
    s = await startServer(["-hooks", hooks, "-jobs", "-jobs-file", file, "-verbose"]);
    try {
      assert.match(s.logs(), /is not a job history .* moved to .*jobs-history\.json\.corrupt/);
      const list = JSON.parse((await send(`${s.base}/jobs`, { method: "GET" })).text) as { jobs: JobJson[] };
      assert.deepEqual(list.jobs, []);
      const again = (await send(`${s.base}/hooks/ok`)).headers["x-job-id"] as string;
      assert.equal((await settled(s, again)).state, "succeeded");
    } finally {
      await s.stop();
    }
    assert.ok(existsSync(`${file}.corrupt`));
    assert.equal((await readJobsFile(file)).length, 1);
  });
});

describe("shutdown", () => {
  test("SIGTERM: a job still waiting for its turn is dropped, a running one finishes, and the file tells both", async () => {
    const gate = join(dir, "shutdown-gate");
    const hooks = await writeHooks(
      dir,
      [
        {
          id: "one",
          "execute-command": slow,
          "pass-arguments-to-command": [
            { source: "string", name: gate },
            { source: "string", name: join(dir, "shutdown-done") },
          ],
          "max-concurrency": 1,
        },
      ],
      "shutdown.json",
    );
    const file = join(dir, "shutdown-history.json");
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-file", file, "-verbose"]);
    const first = (await send(`${s.base}/hooks/one`)).headers["x-job-id"] as string;
    const second = (await send(`${s.base}/hooks/one`)).headers["x-job-id"] as string;
    await settled(s, first, "running");
    assert.equal((await job(s, second)).state, "queued");
    const stopped = s.proc.stop(30_000);
    // The queued one is dropped as the shutdown begins; only then may the running one finish.
    await eventually(() => s.logs().includes("dropped 1 command(s) still waiting for their turn"), 10_000);
    await writeFile(gate, "");
    assert.equal(await stopped, 0);
    const saved = await readJobsFile(file);
    const byId = new Map(saved.map((j) => [j.id, j]));
    assert.equal(byId.get(first)!.state, "succeeded");
    assert.equal(byId.get(second)!.state, "dropped");
    assert.match(byId.get(second)!.reason!, /shut down before the command's turn came/);
  });
});

describe("access to /jobs", () => {
  test("-jobs-token: a bearer token, compared in constant time, never logged", async () => {
    const hooks = await writeHooks(dir, [{ id: "ok", "execute-command": mixed, "include-command-output-in-response": true }], "auth.json");
    const token = "jobs-token-8f2c1e";
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-token", token, "-debug"]);
    try {
      const id = (await send(`${s.base}/hooks/ok?t=${token}`)).headers["x-job-id"] as string;
      const none = await send(`${s.base}/jobs/${id}`, { method: "GET" });
      assert.equal(none.status, 401);
      assert.equal(none.headers["www-authenticate"], 'Bearer realm="jobs"');
      assert.equal((await send(`${s.base}/jobs/${id}`, { method: "GET", headers: { Authorization: "Bearer wrong" } })).status, 401);
      assert.equal((await send(`${s.base}/jobs/${id}`, { method: "GET", headers: { Authorization: `Bearer ${token}x` } })).status, 401);
      assert.equal((await job(s, id, { Authorization: `Bearer ${token}` })).hook, "ok");
      assert.equal(s.logs().includes(token), false, "the token is not in the log");
    } finally {
      await s.stop();
    }
  });

  test("-jobs-auth user:password: basic auth", async () => {
    const hooks = await writeHooks(dir, [{ id: "ok", "execute-command": mixed, "include-command-output-in-response": true }], "basic.json");
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-auth", "ops:p4ss:word"]);
    try {
      const id = (await send(`${s.base}/hooks/ok`)).headers["x-job-id"] as string;
      const basic = (cred: string) => ({ Authorization: `Basic ${Buffer.from(cred).toString("base64")}` });
      const denied = await send(`${s.base}/jobs/${id}`, { method: "GET", headers: basic("ops:wrong") });
      assert.equal(denied.status, 401);
      assert.match(denied.headers["www-authenticate"] as string, /^Basic realm="jobs"/);
      assert.equal((await job(s, id, basic("ops:p4ss:word"))).state, "succeeded");
    } finally {
      await s.stop();
    }
  });
});
