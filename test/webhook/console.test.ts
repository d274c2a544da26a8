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
