// -jobs-replay: a job keeps the request that triggered it (bounded by -jobs-request-max, the
// headers of -jobs-redact-header left out, signature headers kept and listed), and
// POST /jobs/<id>/replay runs the hook again with it as a new job ("replayOf"), its trigger rule
// skipped, said in the log; refused without credentials, from another site, when off, when the
// body was not kept. Real HTTP to bin/webhook, real commands.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { docBlocks } from "../fixtures/docs.js";
import { eventually, removeDir, run, tempDir } from "../helpers.js";
import { request } from "node:http";
import { fixture, postJSON, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { startNats } from "./fixtures/nats.js";
import { connect } from "nats";

const SECRET = "replay-secret";
const AUTH = `Basic ${Buffer.from("ops:pw").toString("base64")}`;

interface KeptJson {
  method: string;
  url: string;
  headers: [string, string][];
  body?: string;
  bodyCut?: number;
  redacted?: string[];
  signatureHeaders?: string[];
}
interface JobJson {
  id: string;
  hook: string;
  replayOf?: string;
  triggerRule?: string;
  state: string;
  attempts: { number: number; exitCode?: number | null }[];
  output: string;
  request?: KeptJson;
}

let dir = "";
let hooks = "";
before(async () => {
  dir = await tempDir("webhook-replay-");
  hooks = await writeHooks(dir, [
    {
      id: "deploy",
      "execute-command": fixture("echo.sh"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "ref" },
        { source: "header", name: "X-Note" },
      ],
      "trigger-rule": { match: { type: "payload-hmac-sha256", secret: SECRET, parameter: { source: "header", name: "X-Hub-Signature-256" } } },
    },
    {
      // Prints a line, waits (at most 20 s) for the file named in the payload, prints another.
      id: "step",
      "execute-command": "/bin/sh",
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: 'echo "step one"; n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; echo "step two"' },
        { source: "string", name: "sh" },
        { source: "payload", name: "go" },
      ],
    },
    { id: "limited", "execute-command": "/bin/true", "rate-limit": { requests: 2, period: "1h" } },
    {
      id: "flaky",
      "execute-command": "/bin/sh",
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: "echo trying; exit 1" },
      ],
      retry: { attempts: 3, delay: "10ms" },
    },
  ]);
});
after(() => removeDir(dir));

const sign = (body: string): string => `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;

async function job(s: Server, id: string): Promise<JobJson> {
  const r = await send(`${s.base}/jobs/${id}`, { method: "GET", headers: { Authorization: AUTH } });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text) as JobJson;
}

const finished = (s: Server, id: string): Promise<JobJson> =>
  eventually(async () => {
    const j = await job(s, id);
    return j.state === "succeeded" || j.state === "failed" ? j : undefined;
  }, 15_000);

describe("-jobs-replay", () => {
  let s: Server;
  before(async () => {
    s = await startServer([
      "-hooks",
      hooks,
      "-jobs",
      "-jobs-auth",
      "ops:pw",
      "-jobs-replay",
      "-jobs-request-max",
      "64",
      "-jobs-redact-header",
      "Cookie,X-Private",
    ]);
  });
  after(() => s.stop());

  test("a job keeps its request and is replayed as a new job with the same values, its rule skipped", async () => {
    const body = JSON.stringify({ ref: "main" });
    const headers = { "Content-Type": "application/json", "X-Hub-Signature-256": sign(body), "X-Note": "first", Cookie: "session=abc", "X-Private": "p" };
    const first = await send(`${s.base}/hooks/deploy?via=test`, { body, headers });
    assert.equal(first.status, 200, first.text);
    const id = String(first.headers["x-job-id"]);
    const original = await finished(s, id);
    const kept = original.request!;
    assert.equal(kept.method, "POST");
    assert.equal(kept.url, "/hooks/deploy?via=test");
    assert.equal(Buffer.from(kept.body!, "base64").toString(), body);
    assert.deepEqual(kept.redacted, ["Cookie", "X-Private"]);
    assert.deepEqual(kept.signatureHeaders, ["X-Hub-Signature-256"]);
    assert.ok(!kept.headers.some(([n]) => n === "Cookie" || n === "X-Private"), JSON.stringify(kept.headers));
    assert.ok(kept.headers.some(([n, v]) => n === "X-Note" && v === "first"));
    // Lists leave the request out.
    const list = JSON.parse((await send(`${s.base}/jobs?hook=deploy`, { method: "GET", headers: { Authorization: AUTH } })).text) as { jobs: JobJson[] };
    assert.equal(list.jobs[0]!.request, undefined);

    const r = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(r.status, 202, r.text);
    const newId = String(r.headers["x-job-id"]);
    assert.notEqual(newId, id);
    assert.equal(r.headers.location, `/jobs/${newId}`);
    assert.deepEqual(JSON.parse(r.text), { id: newId, replayOf: id });
    const replayed = await finished(s, newId);
    assert.equal(replayed.replayOf, id);
    assert.equal(replayed.triggerRule, "skipped", "the record says the rule was skipped");
    assert.equal(original.triggerRule, undefined, "a request's record has no triggerRule: its rule was evaluated");
    assert.equal(replayed.state, "succeeded");
    assert.equal(replayed.output, original.output);
    assert.match(replayed.output, /arg1=main\narg2=first/);
    assert.match(s.logs(), new RegExp(`deploy: replay of job ${id} asked by the operator \\(POST /jobs/${id}/replay\\): the trigger rule is skipped`));
  });

  test("refused: no credentials (401), a page of another site (403), an unknown job (404), a body over -jobs-request-max (409)", async () => {
    const body = JSON.stringify({ ref: "x".repeat(100) });
    const big = await send(`${s.base}/hooks/deploy`, { body, headers: { "Content-Type": "application/json", "X-Hub-Signature-256": sign(body) } });
    assert.equal(big.status, 200, big.text);
    const id = String(big.headers["x-job-id"]);
    const j = await finished(s, id);
    assert.equal(j.request!.body, undefined);
    assert.equal(j.request!.bodyCut, Buffer.byteLength(body));

    assert.equal((await send(`${s.base}/jobs/${id}/replay`, {})).status, 401);
    const foreign = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH, Origin: "https://evil.example" } });
    assert.equal(foreign.status, 403);
    assert.match(foreign.text, /another site \(https:\/\/evil\.example\)/);
    const site = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH, "Sec-Fetch-Site": "cross-site" } });
    assert.equal(site.status, 403);
    assert.equal((await send(`${s.base}/jobs/nope/replay`, { headers: { Authorization: AUTH } })).status, 404);
    const cut = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(cut.status, 409);
    assert.match(JSON.parse(cut.text).error, new RegExp(`request body of ${Buffer.byteLength(body)} bytes was not kept \\(larger than -jobs-request-max`));
  });

  test("a replay goes through the hook's rate-limit: once its window is full, 429 and no new job", async () => {
    const first = await send(`${s.base}/hooks/limited`);
    assert.equal(first.status, 200, first.text);
    const id = String(first.headers["x-job-id"]);
    await finished(s, id);
    const second = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(second.status, 202, second.text);
    await finished(s, String(second.headers["x-job-id"]));
    const third = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(third.status, 429, third.text);
    assert.match(third.text, /Too many requests for this hook: its rate-limit is reached/);
    assert.ok(Number(third.headers["retry-after"]) >= 1, String(third.headers["retry-after"]));
    assert.equal(third.headers["x-job-id"], undefined);
    const list = JSON.parse((await send(`${s.base}/jobs?hook=limited`, { method: "GET", headers: { Authorization: AUTH } })).text) as { jobs: JobJson[] };
    assert.deepEqual(
      list.jobs.map((j) => j.replayOf ?? "first"),
      [id, "first"],
    );
  });

  test("a replay of a hook with retry makes its retries: each attempt in the new record", async () => {
    const first = await send(`${s.base}/hooks/flaky`);
    const id = String(first.headers["x-job-id"]);
    assert.equal((await finished(s, id)).attempts.length, 3);
    const r = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(r.status, 202, r.text);
    const replayed = await finished(s, String(r.headers["x-job-id"]));
    assert.equal(replayed.replayOf, id);
    assert.equal(replayed.state, "failed");
    assert.deepEqual(
      replayed.attempts.map((a) => [a.number, a.exitCode]),
      [
        [1, 1],
        [2, 1],
        [3, 1],
      ],
    );
    assert.equal(replayed.output, "trying\n");
  });
});

test("without -jobs-replay no request is kept and replay answers 404; -jobs-replay open to anyone off loopback refuses to start", async () => {
  const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-token", "t"]);
  try {
    const body = JSON.stringify({ ref: "main" });
    const r = await send(`${s.base}/hooks/deploy`, { body, headers: { "Content-Type": "application/json", "X-Hub-Signature-256": sign(body) } });
    const id = String(r.headers["x-job-id"]);
    const j = JSON.parse((await send(`${s.base}/jobs/${id}`, { method: "GET", headers: { Authorization: "Bearer t" } })).text) as JobJson;
    assert.equal(j.request, undefined);
    const replay = await send(`${s.base}/jobs/${id}/replay`, { headers: { Authorization: "Bearer t" } });
    assert.equal(replay.status, 404);
    assert.match(replay.text, /start the server with -jobs-replay/);
    assert.equal((await send(`${s.base}/console/`, { method: "GET", headers: { Authorization: "Bearer t" } })).status, 404, "no console without -console");
  } finally {
    await s.stop();
  }
  await assert.rejects(startServer(["-hooks", hooks, "-jobs", "-jobs-replay", "-console-insecure"], { ip: "0.0.0.0" }), /-jobs-replay would let anyone/);
});

test("the replay example of docs/webhook/console.md runs as written", async () => {
  const [hooksFile, start, script] = docBlocks("docs/webhook/console.md", { heading: "Replay (`-jobs-replay`)" });
  assert.ok(hooksFile?.lang === "json" && start?.lang === "sh" && script?.lang === "sh", "a hooks file, the server's command line, the shell lines");
  await writeFile(join(dir, "greet.json"), hooksFile.body);
  const args = start.body
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((a) => (a === "hooks.json" ? join(dir, "greet.json") : a));
  const s = await startServer(args);
  try {
    const r = await run("bash", ["-e", "-c", script.body.replace(/localhost:9000/g, `127.0.0.1:${s.port}`)]);
    assert.equal(r.code, 0, r.stderr);
    const expected = script.body
      .split("\n")
      .filter((l) => l.startsWith("#  "))
      .map((l) => l.slice(2));
    const id = /replay of job (\S+) asked by the operator/.exec(s.logs())?.[1];
    assert.ok(id, s.logs());
    assert.deepEqual(
      r.stdout.trimEnd().split("\n"),
      expected.map((l) => l.replace("<id>", id)),
    );
  } finally {
    await s.stop();
  }
});

test("-queue: a job taken on one instance is listed by another's console and replayed there, its record read live to the end", async () => {
  const nats = await startNats();
  const args = ["-hooks", hooks, "-queue", nats.url, "-jobs", "-jobs-auth", "ops:pw", "-jobs-replay", "-console"];
  const a = await startServer(args);
  const b = await startServer(args);
  try {
    const body = JSON.stringify({ ref: "queued" });
    const first = await send(`${a.base}/hooks/deploy`, {
      body,
      headers: { "Content-Type": "application/json", "X-Hub-Signature-256": sign(body), "X-Note": "q" },
    });
    assert.equal(first.status, 200, first.text);
    const id = String(first.headers["x-job-id"]);
    const listed = await send(`${b.base}/console/api/runs?hook=deploy`, { method: "GET", headers: { Authorization: AUTH } });
    assert.deepEqual(
      (JSON.parse(listed.text) as { runs: JobJson[] }).runs.map((j) => j.id),
      [id],
    );
    const r = await send(`${b.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(r.status, 202, r.text);
    const newId = String(r.headers["x-job-id"]);
    // The stream ends once the run has: its last record says how.
    const events = await send(`${b.base}/console/api/runs/${newId}/events`, { method: "GET", headers: { Authorization: AUTH } });
    assert.equal(events.headers["content-type"], "text/event-stream");
    const records = [...events.text.matchAll(/^event: job\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as JobJson);
    const last = records[records.length - 1]!;
    assert.equal(last.state, "succeeded");
    assert.equal(last.replayOf, id);
    assert.equal(last.triggerRule, "skipped");
    assert.match(last.output, /arg1=queued\narg2=q/);
    const onA = await finished(a, newId);
    assert.equal(onA.replayOf, id);
    assert.equal(onA.triggerRule, "skipped", "the record in the shared bucket keeps it");

    // The record as stored carries the field; one whose triggerRule is anything else is not read as a record.
    const nc = await connect({ servers: nats.url });
    try {
      const kv = await nc.jetstream().views.kv("webhook_jobs", { bindOnly: true });
      const stored = JSON.parse(Buffer.from((await kv.get(newId))!.value).toString()) as JobJson;
      assert.equal(stored.triggerRule, "skipped");
      await kv.put(newId, JSON.stringify({ ...stored, triggerRule: { evaluated: false } }));
      for (const s of [a, b]) {
        const r = await send(`${s.base}/jobs/${newId}`, { method: "GET", headers: { Authorization: AUTH } });
        assert.equal(r.status, 404, r.text);
      }
    } finally {
      await nc.close();
    }

    // A run's output arrives live in both instances' consoles, whichever runs it.
    const go = join(dir, "go-queue");
    const running = String((await postJSON(`${a.base}/hooks/step`, { go })).headers["x-job-id"]);
    const streams = [a, b].map((s) => sse(`${s.base}/console/api/runs/${running}/events`));
    // A console on the other instance hears only what is printed after it listens (docs/webhook/console.md; the
    // record has the tail): so the second line is printed once both streams have begun.
    await Promise.all(streams.map((st) => eventually(() => st.text().includes("event: job\n"), 15_000)));
    await writeFile(go, "");
    await Promise.all(streams.map((st) => eventually(() => st.text().includes('event: output\ndata: "step two\\n"'), 15_000)));
    const ends = await Promise.all(streams.map((st) => st.ended));
    for (const text of ends) assert.match(text, /"state":"succeeded"/);
  } finally {
    await a.stop();
    await b.stop();
    await nats.close();
  }
});

test("a job read back from the -jobs-file after a restart is replayed with its kept request; a replay's record keeps replayOf and triggerRule", async () => {
  const file = join(dir, "jobs.jsonl");
  const args = ["-hooks", hooks, "-jobs", "-jobs-auth", "ops:pw", "-jobs-replay", "-jobs-file", file];
  const earlier = await startServer(args);
  const body = JSON.stringify({ ref: "kept" });
  let id = "";
  let firstReplay = "";
  try {
    const r = await send(`${earlier.base}/hooks/deploy`, {
      body,
      headers: { "Content-Type": "application/json", "X-Hub-Signature-256": sign(body), "X-Note": "file" },
    });
    id = String(r.headers["x-job-id"]);
    await finished(earlier, id);
    const again = await send(`${earlier.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(again.status, 202, again.text);
    firstReplay = String(again.headers["x-job-id"]);
    await finished(earlier, firstReplay);
  } finally {
    await earlier.stop();
  }
  const later = await startServer(args);
  try {
    const kept = await job(later, firstReplay);
    assert.deepEqual([kept.replayOf, kept.triggerRule, kept.state], [id, "skipped", "succeeded"]);
    const r = await send(`${later.base}/jobs/${id}/replay`, { headers: { Authorization: AUTH } });
    assert.equal(r.status, 202, r.text);
    const replayed = await finished(later, String(r.headers["x-job-id"]));
    assert.match(replayed.output, /arg1=kept\narg2=file/);
  } finally {
    await later.stop();
  }

  // A history whose record says anything else for triggerRule is not a job history: set aside, the server starts empty.
  const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
  const forged = lines.map((l, i) =>
    i > 0 && (JSON.parse(l) as JobJson).id === firstReplay ? JSON.stringify({ ...JSON.parse(l), triggerRule: "evaluated" }) : l,
  );
  await writeFile(file, `${forged.join("\n")}\n`);
  const third = await startServer(args);
  try {
    await third.proc.waitFor(/the jobs file .* is not a job history \(line \d+ is not a job\); it was moved to .*\.corrupt/);
    assert.equal((await send(`${third.base}/jobs/${firstReplay}`, { method: "GET", headers: { Authorization: AUTH } })).status, 404);
  } finally {
    await third.stop();
  }
});

/** An event stream read as it comes (the jobs credentials sent). */
function sse(url: string): { text: () => string; ended: Promise<string> } {
  let text = "";
  const ended = new Promise<string>((resolve, reject) => {
    const req = request(url, { agent: false, headers: { Authorization: AUTH } }, (res) => {
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve(text));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
  // Awaited by the test when it gets that far; a stream cut when a failed test stops the servers is not what failed.
  ended.catch(() => undefined);
  return { text: () => text, ended };
}
