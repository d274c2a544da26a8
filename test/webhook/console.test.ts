// The run console (-console) in a real headless Chromium against the real bin/webhook: the page
// lists the hooks (rules in words) and the runs, filters them, shows a running command's output as
// it arrives, and replays a run (-jobs-replay) into a new one. Over plain HTTP: its credentials, its
// Content-Security-Policy, a page of another site refused, the flags it needs.
// WEBHOOK_CONSOLE_SCREENSHOT=docs/webhook/console.png saves screenshots of the run list there and
// of a running run's page beside it (console-run.png).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { chromiumMissing, launchChromium, untilShown, type Browser } from "../panel/browser.js";
import type { ClientRequest, IncomingMessage } from "node:http";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";
import { postJSON, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const skip = chromiumMissing();
if (skip) console.log(`# ${skip}`);

const AUTH = `Basic ${Buffer.from("ops:pw").toString("base64")}`;
// Prints a line, waits (at most 20 s) for the file named in the payload, prints another.
const BUILD = 'echo "step one"; n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; echo "step two"';

let dir = "";
let hooks = "";
before(async () => {
  dir = await tempDir("webhook-console-");
  hooks = await writeHooks(dir, [
    {
      id: "build",
      "execute-command": "/bin/sh",
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: BUILD },
        { source: "string", name: "sh" },
        { source: "payload", name: "go" },
      ],
      "max-concurrency": 2,
    },
    {
      id: "flood",
      "execute-command": "/bin/sh",
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        // Waits (at most 20 s) for the file named in the payload, then writes 32 MiB and a last line.
        {
          source: "string",
          name: 'n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; head -c 33554432 /dev/zero | tr "\\0" x; echo; echo END',
        },
        { source: "string", name: "sh" },
        { source: "payload", name: "go" },
      ],
    },
    {
      id: "check",
      "execute-command": "/bin/sh",
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: "echo checking; exit 3" },
      ],
      "trigger-rule": { match: { type: "value", value: "s3cret", parameter: { source: "header", name: "X-Token" } } },
    },
  ]);
});
after(() => removeDir(dir));

const jobOf = async (s: Server, id: string): Promise<{ state: string; replayOf?: string; output: string }> =>
  JSON.parse((await send(`${s.base}/jobs/${id}`, { method: "GET", headers: { Authorization: AUTH } })).text);
const finished = (s: Server, id: string): Promise<unknown> => eventually(async () => !["queued", "running"].includes((await jobOf(s, id)).state), 15_000);

/** The run rows shown: [hook, job id, state]. */
const rows = (page: Page): Promise<string[][]> =>
  page.$$eval("#runs tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].slice(1, 4).map((td) => td.textContent ?? "")));

describe("the console in Chromium", { skip }, () => {
  let s: Server;
  let browser: Browser;
  let page: Page;
  const cspErrors: string[] = [];

  before(async () => {
    s = await startServer(["-hooks", hooks, "-jobs", "-jobs-auth", "ops:pw", "-jobs-replay", "-console"]);
    browser = await launchChromium();
    await browser.context.setExtraHTTPHeaders({ Authorization: AUTH });
    page = await browser.context.newPage();
    page.on("console", (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(m.text());
    });
  });
  after(async () => {
    await browser?.close();
    await s?.stop();
  });

  test("open, filter, watch a run's output arrive, replay it", async () => {
    const go = join(dir, "go-1");
    await writeFile(go, "");
    const failed = String((await send(`${s.base}/hooks/check`, { headers: { "X-Token": "s3cret" } })).headers["x-job-id"]);
    const built = String((await postJSON(`${s.base}/hooks/build`, { go })).headers["x-job-id"]);
    await finished(s, failed);
    await finished(s, built);

    await page.goto(`${s.base}/console/`);
    await untilShown(
      () => rows(page),
      (r) => r.length === 2,
      10_000,
    );
    const hooksText = await page.textContent("#hooks");
    assert.match(hooksText ?? "", /header X-Token equals the value set in the hooks file/);
    assert.match(hooksText ?? "", /max-concurrency 2/);
    assert.doesNotMatch(hooksText ?? "", /s3cret/);

    // Each filter alone shows the one run it matches; emptied, it shows all again.
    const filtered = async (field: string, value: string, expected: string[]): Promise<void> => {
      const set = (v: string): Promise<unknown> =>
        field === "state" ? page.selectOption(`#filters [name=${field}]`, v) : page.fill(`#filters [name=${field}]`, v);
      await set(value);
      assert.deepEqual(
        await untilShown(
          () => rows(page),
          (r) => r.length === 1,
          10_000,
        ),
        [expected],
        `${field}=${value}`,
      );
      await set("");
      // Both runs again before the next filter: else its wait could be met by this filter's list.
      await untilShown(
        () => rows(page),
        (r) => r.length === 2,
        10_000,
      );
    };
    await filtered("state", "failed", ["check", failed, "failed"]);
    await filtered("exit", "0", ["build", built, "succeeded"]);
    await filtered("q", "checking", ["check", failed, "failed"]);
    const screenshot = process.env.WEBHOOK_CONSOLE_SCREENSHOT;
    if (screenshot) {
      await untilShown(
        () => rows(page),
        (r) => r.length === 2,
        10_000,
      );
      await page.screenshot({ path: screenshot, fullPage: true });
    }

    // A run whose command waits: its first line shows while it runs, the second once it goes on.
    const go2 = join(dir, "go-2");
    const running = String((await postJSON(`${s.base}/hooks/build`, { go: go2 })).headers["x-job-id"]);
    await page.goto(`${s.base}/console/#/run/${running}`);
    const view = (): Promise<{ state: string; output: string }> =>
      page.evaluate(() => ({
        state: document.getElementById("run-state")?.textContent ?? "",
        output: document.getElementById("run-output")?.textContent ?? "",
      }));
    await untilShown(view, (v) => v.state === "running" && v.output === "step one\n", 10_000);
    if (screenshot) await page.screenshot({ path: screenshot.replace(/\.png$/, "-run.png"), fullPage: true });
    await writeFile(go2, "");
    await untilShown(view, (v) => v.state === "succeeded" && v.output === "step one\nstep two\n", 10_000);

    await page.click("#replay");
    await untilShown(
      () => page.evaluate(() => location.hash),
      (h) => h.startsWith("#/run/") && h !== `#/run/${running}`,
      10_000,
    );
    const replayId = decodeURIComponent((await page.evaluate(() => location.hash)).slice("#/run/".length));
    const replayView = async (): Promise<{ state: string; output: string; meta: string }> => ({
      ...(await view()),
      meta: (await page.textContent("#run-meta")) ?? "",
    });
    const shown = await untilShown(replayView, (v) => v.state === "succeeded" && v.meta.includes("Replay of"), 10_000);
    assert.equal(shown.output, "step one\nstep two\n");
    assert.match(shown.meta, new RegExp(`Replay of${running}Trigger ruleskipped`));
    assert.equal((await jobOf(s, replayId)).replayOf, running);
    assert.deepEqual(cspErrors, []);
  });
});

describe("the console over HTTP", () => {
  test("credentials asked with basic auth (the token as its password), strict CSP, another site's page refused", async () => {
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-token", "tok", "-console"]);
    try {
      const open = await send(`${s.base}/console/`, { method: "GET" });
      assert.equal(open.status, 401);
      assert.match(String(open.headers["www-authenticate"]), /^Basic /);
      const basic = `Basic ${Buffer.from("any:tok").toString("base64")}`;
      const page = await send(`${s.base}/console/`, { method: "GET", headers: { Authorization: basic } });
      assert.equal(page.status, 200);
      assert.match(String(page.headers["content-security-policy"]), /default-src 'none'; script-src 'self'/);
      assert.doesNotMatch(page.text, /<script>|style=/);
      const wrong = await send(`${s.base}/console/api/runs`, {
        method: "GET",
        headers: { Authorization: `Basic ${Buffer.from("any:nope").toString("base64")}` },
      });
      assert.equal(wrong.status, 401);
      const foreign = await send(`${s.base}/console/api/runs`, { method: "GET", headers: { Authorization: "Bearer tok", "Sec-Fetch-Site": "cross-site" } });
      assert.equal(foreign.status, 403);
      assert.equal((await send(`${s.base}/console/api/runs/nope/events`, { method: "GET", headers: { Authorization: "Bearer tok" } })).status, 404);
    } finally {
      await s.stop();
    }
  });

  test("-console needs -jobs, and credentials unless -console-insecure on loopback", async () => {
    await assert.rejects(startServer(["-hooks", hooks, "-console"]), /-console shows the jobs: give -jobs too/);
    await assert.rejects(startServer(["-hooks", hooks, "-jobs", "-console"]), /-console would let anyone/);
    await assert.rejects(startServer(["-hooks", hooks, "-jobs", "-console", "-console-insecure"], { ip: "0.0.0.0" }), /-console would let anyone/);
    const s = await startServer(["-hooks", hooks, "-jobs", "-console", "-console-insecure"]);
    try {
      assert.equal((await send(`${s.base}/console/api/hooks`, { method: "GET" })).status, 200);
    } finally {
      await s.stop();
    }
  });

  test("seeded random filters, ids and replays: always a JSON answer, the server stays up", async () => {
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-replay", "-console", "-console-insecure"]);
    try {
      const done = String((await send(`${s.base}/hooks/check`, { headers: { "X-Token": "s3cret" } })).headers["x-job-id"]);
      await finished(s, done);
      const seed = fuzzSeed(0x636f6e73);
      const rnd = seeded(seed);
      const keys = ["hook", "state", "exit", "since", "until", "q", "x"];
      const values = ["", "check", "failed", "3", "-1", "99999", "2026-01-01T00:00:00Z", "not a date", "%", "%ZZ", "\u0000", "ü", "a".repeat(5000), "checking"];
      const piece = (): string => (rnd.int(3) === 0 ? rnd.bytes(1 + rnd.int(8)).toString("latin1") : rnd.pick(values));
      for (let i = 0, n = fuzzCases(150); i < n; i++) {
        const query = Array.from({ length: rnd.int(5) }, () => `${rnd.pick(keys)}=${encodeURIComponent(piece())}`).join("&");
        const what = `case ${i} (FUZZ_SEED=${seed}): ${JSON.stringify(query)}`;
        const r = await send(`${s.base}/console/api/runs?${query}`, { method: "GET" });
        assert.equal(r.status, 200, what);
        // Only the one job, and its replays.
        const runs = (JSON.parse(r.text) as { runs: { hook: string }[] }).runs;
        assert.ok(
          runs.every((j) => j.hook === "check"),
          what,
        );
        // No "." or "/" (nor empty): a path with "/." or "//" is redirected (301) before any route sees it.
        const id = encodeURIComponent(rnd.int(4) === 0 ? done : piece().replace(/[./]/g, "") || "none");
        const path = rnd.pick([`/console/api/runs/${id}/events`, `/jobs/${id}/replay`]);
        const e = await send(`${s.base}${path}`, { method: path.startsWith("/jobs") ? "POST" : "GET" });
        assert.ok([200, 202, 404, 409].includes(e.status), `${what} ${path} → ${e.status} ${e.text.slice(0, 200)}`);
      }
      assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200, "the server still answers");
    } finally {
      await s.stop();
    }
  });

  test("a reader that falls behind loses the oldest output, told by a skipped event, and still gets the last record", async () => {
    const s = await startServer(["-hooks", hooks, "-jobs", "-console", "-console-insecure"]);
    try {
      const go = join(dir, "go-flood");
      const id = String((await postJSON(`${s.base}/hooks/flood`, { go })).headers["x-job-id"]);
      // The stream opens, then is not read while the command writes its 32 MiB and ends.
      const chunks: Buffer[] = [];
      const ended = new Promise<void>((resolve, reject) => {
        const req = request(`${s.base}/console/api/runs/${id}/events`, { agent: false }, (res) => {
          res.once("data", (c: Buffer) => {
            chunks.push(c);
            res.pause();
            void writeFile(go, "")
              .then(() => eventually(async () => (await jobOf(s, id)).state === "succeeded", 20_000))
              .then(() => {
                res.on("data", (more: Buffer) => chunks.push(more));
                res.resume();
              }, reject);
          });
          res.on("end", resolve);
          res.on("error", reject);
        });
        req.on("error", reject);
        req.end();
      });
      await ended;
      const text = Buffer.concat(chunks).toString();
      const received = text.length;
      assert.ok(received < 16 * 1024 * 1024, `it got ${received} bytes of the 32 MiB`);
      assert.match(text, /^event: skipped\ndata: \d+$/m);
      const records = [...text.matchAll(/^event: job\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as { state: string; output: string });
      const last = records[records.length - 1]!;
      assert.equal(last.state, "succeeded");
      assert.match(last.output, /x\nEND\n$/);
    } finally {
      await s.stop();
    }
  });
});

describe("the console's JSON routes", () => {
  let s: Server;
  before(async () => {
    const file = await writeHooks(
      dir,
      [
        { id: "alpha", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "string", name: "alpha ran" }] },
        { id: "beta", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "string", name: "beta ran" }] },
        {
          id: "coin",
          "execute-command": "/bin/sh",
          "pass-arguments-to-command": [
            { source: "string", name: "-c" },
            { source: "string", name: 'exit "$1"' },
            { source: "string", name: "sh" },
            { source: "payload", name: "code" },
          ],
        },
        { id: "idle", "execute-command": "/bin/true" },
        {
          // Waits (at most 20 s) for the file named in the payload.
          id: "waits",
          "execute-command": "/bin/sh",
          "pass-arguments-to-command": [
            { source: "string", name: "-c" },
            { source: "string", name: 'n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; echo done' },
            { source: "string", name: "sh" },
            { source: "payload", name: "go" },
          ],
        },
      ],
      "routes.json",
    );
    s = await startServer(["-hooks", file, "-jobs", "-console", "-console-insecure"]);
  });
  after(() => s.stop());

  interface RunJson {
    id: string;
    hook: string;
    state: string;
    created: string;
  }
  const runs = async (query: string): Promise<string[]> => {
    const r = await send(`${s.base}/console/api/runs?${query}`, { method: "GET" });
    assert.equal(r.status, 200, r.text);
    return (JSON.parse(r.text) as { runs: RunJson[] }).runs.map((j) => j.id);
  };
  let lastCreated = 0;
  /** Triggers the hook once the clock has passed the last run's creation (each run its own millisecond), and waits for its end. */
  const runOf = async (hook: string, payload: unknown = {}): Promise<RunJson> => {
    await eventually(() => Date.now() > lastCreated, 1_000, 1);
    const id = String((await postJSON(`${s.base}/hooks/${hook}`, payload)).headers["x-job-id"]);
    await finished(s, id);
    const job = JSON.parse((await send(`${s.base}/jobs/${id}`, { method: "GET" })).text) as RunJson;
    lastCreated = Date.parse(job.created);
    return job;
  };

  test("the hook filter and the time range (since inclusive, until exclusive) select exactly the runs they name", async () => {
    const a1 = await runOf("alpha");
    const b1 = await runOf("beta");
    const a2 = await runOf("alpha");
    const b2 = await runOf("beta");
    const a3 = await runOf("alpha");
    const q = (v: string): string => encodeURIComponent(v);
    assert.deepEqual(await runs("hook=alpha"), [a3.id, a2.id, a1.id]);
    assert.deepEqual(await runs("hook=beta"), [b2.id, b1.id]);
    assert.deepEqual(await runs("hook=alph"), [], "a hook id matches whole");
    assert.deepEqual(await runs(`since=${q(b1.created)}&until=${q(b2.created)}`), [a2.id, b1.id]);
    assert.deepEqual(await runs(`since=${q(a2.created)}`), [a3.id, b2.id, a2.id]);
    assert.deepEqual(await runs(`until=${q(a2.created)}`), [b1.id, a1.id]);
    assert.deepEqual(await runs(`until=${q(a1.created)}`), []);
    assert.deepEqual(await runs(`since=${q(new Date(Date.parse(a3.created) + 1).toISOString())}`), []);
    assert.deepEqual(await runs(`hook=alpha&since=${q(b1.created)}`), [a3.id, a2.id]);
    assert.deepEqual(await runs(`hook=beta&since=${q(b1.created)}&until=${q(a3.created)}`), [b2.id, b1.id]);
    assert.deepEqual(await runs(`hook=alpha&until=${q(b1.created)}`), [a1.id]);
  });

  test("the hooks view: after 3 runs of which 1 failed, the last run and 2 of 3 succeeded", async () => {
    await runOf("coin", { code: "0" });
    await runOf("coin", { code: "0" });
    const last = await runOf("coin", { code: "1" });
    assert.equal(last.state, "failed");
    const r = await send(`${s.base}/console/api/hooks`, { method: "GET" });
    assert.equal(r.status, 200, r.text);
    const views = (JSON.parse(r.text) as { hooks: { id: string; lastRun?: unknown; finished: number; succeeded: number }[] }).hooks;
    const coin = views.find((h) => h.id === "coin");
    assert.deepEqual(
      { lastRun: coin?.lastRun, finished: coin?.finished, succeeded: coin?.succeeded },
      { lastRun: { id: last.id, state: "failed", created: last.created }, finished: 3, succeeded: 2 },
    );
    const idle = views.find((h) => h.id === "idle");
    assert.deepEqual({ lastRun: idle?.lastRun, finished: idle?.finished, succeeded: idle?.succeeded }, { lastRun: undefined, finished: 0, succeeded: 0 });
  });

  test("at most 32 live streams: the 33rd is answered 503; a closed client's slot is free again", async () => {
    const go = join(dir, "go-streams");
    const id = String((await postJSON(`${s.base}/hooks/waits`, { go })).headers["x-job-id"]);
    const url = `${s.base}/console/api/runs/${id}/events`;
    const open: Stream[] = [];
    try {
      for (let i = 0; i < 32; i++) {
        const st = await openStream(url);
        open.push(st);
        assert.equal(st.res.statusCode, 200, `stream ${i + 1}`);
      }
      // Each has its run's record: the stream is live.
      await Promise.all(open.map((st) => eventually(() => st.text().includes('"state":"running"'), 10_000)));
      const over = await openStream(url);
      open.push(over);
      assert.equal(over.res.statusCode, 503);
      assert.equal(over.res.headers["retry-after"], "5");
      assert.match(await over.ended, /too many console streams are open; close a console tab/);

      open[0]!.req.destroy();
      // The server lets the slot go once it sees the client gone: then a new stream gets in.
      const again = await eventually(async () => {
        const st = await openStream(url);
        open.push(st);
        if (st.res.statusCode === 200) return st;
        await st.ended;
        return undefined;
      }, 10_000);
      await eventually(() => again.text().includes('"state":"running"'), 10_000);
      await writeFile(go, "");
      assert.match(await again.ended, /"state":"succeeded"/);
    } finally {
      for (const st of open) st.req.destroy();
      await writeFile(go, "");
    }
  });
});

interface Stream {
  req: ClientRequest;
  res: IncomingMessage;
  text: () => string;
  /** All it got, once it ended. */
  ended: Promise<string>;
}

/** Opens an event stream; resolves once its answer's head arrives. */
function openStream(url: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      const ended = new Promise<string>((done) => {
        res.on("end", () => done(text));
        res.on("close", () => done(text));
        res.on("error", () => done(text));
      });
      resolve({ req, res, text: () => text, ended });
    });
    req.on("error", reject);
    req.end();
  });
}
