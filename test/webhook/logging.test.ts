// -verbose logs each request under a request id (hook matched, rules, command,
// argv, env names, cwd, exit status, output, one summary line); -debug adds request dumps; secrets
// from the hooks file never appear in the log.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, linesOf, requestIdsFor, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
const TOKEN = "tok-SECRET-4711";
const ENV_SECRET = "env-SECRET-9931";
const HMAC_SECRET = "hmac-SECRET-2323";
const SCALR_SECRET = "scalr-SECRET-5151";
let dir = "";
let workDir = "";
let verbose: Server;
let debug: Server;

before(async () => {
  dir = await tempDir("webhook-logging-");
  workDir = join(dir, "work");
  await mkdir(workDir);
  const hooks = await writeHooks(dir, [
    {
      id: "log-me",
      "execute-command": echo,
      "command-working-directory": workDir,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "url", name: "who" },
        { source: "string", name: "fixed-arg" },
      ],
      "pass-environment-to-command": [{ source: "url", name: "who", envname: "EXTRA_WHO" }],
    },
    { id: "log-fail", "execute-command": fixture("fail.sh"), "include-command-output-in-response": true },
    {
      id: "secret-value",
      "execute-command": "/bin/true",
      "include-command-output-in-response": true,
      "pass-environment-to-command": [{ source: "string", name: ENV_SECRET, envname: "EXTRA_API_KEY" }],
      "trigger-rule": { match: { type: "value", value: TOKEN, parameter: { source: "header", name: "X-Token" } } },
    },
    {
      id: "secret-hmac",
      "execute-command": "/bin/true",
      "trigger-rule": { match: { type: "payload-hmac-sha256", secret: HMAC_SECRET, parameter: { source: "header", name: "X-Sig" } } },
    },
    {
      id: "secret-scalr",
      "execute-command": "/bin/true",
      "trigger-rule": { match: { type: "scalr-signature", secret: SCALR_SECRET } },
    },
  ]);
  [verbose, debug] = await Promise.all([startServer(["-hooks", hooks, "-verbose"]), startServer(["-hooks", hooks, "-debug"])]);
});

after(async () => {
  await Promise.all([verbose?.stop(), debug?.stop()]);
  await removeDir(dir);
});

/** Waits until a log line mentions `needle`, and returns all lines of that request. */
async function requestLines(s: Server, needle: string, extra: RegExp): Promise<string[]> {
  return eventually<string[] | undefined>(() => {
    for (const rid of requestIdsFor(s.logs(), needle)) {
      const lines = linesOf(s.logs(), rid);
      if (lines.some((l) => extra.test(l))) return lines;
    }
    return undefined;
  }, 10_000) as Promise<string[]>;
}

describe("-verbose", { concurrency: true }, () => {
  test("a triggered hook: id, match, command, argv, env names, cwd, output, and a summary line", async () => {
    const r = await send(`${verbose.base}/hooks/log-me?who=carol-7731`);
    assert.equal(r.status, 200);
    const lines = await requestLines(verbose, "carol-7731", /finished handling log-me/);
    const text = lines.join("\n");
    assert.match(text, /incoming HTTP POST request from 127\.0\.0\.1:\d+/);
    assert.match(text, /log-me got matched/);
    assert.match(text, /log-me hook triggered successfully/);
    assert.match(text, /executing .*echo\.sh/);
    assert.match(text, /"carol-7731"/, "argv is logged, quoted");
    assert.match(text, /"fixed-arg"/);
    assert.match(text, /EXTRA_WHO/, "env names are logged");
    assert.match(text, new RegExp(`using ${workDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} as cwd`));
    assert.match(text, /command output: cwd=/);
    await eventually(
      () => linesOf(verbose.logs(), requestIdsFor(verbose.logs(), "carol-7731")[0]!).some((l) => /\b200\b.*POST \/hooks\/log-me/.test(l)),
      10_000,
    );
  });

  test("every log line of a request carries the same request id, and ids differ between requests", async () => {
    await send(`${verbose.base}/hooks/log-me?who=dave-1`);
    await send(`${verbose.base}/hooks/log-me?who=dave-2`);
    const a = await requestLines(verbose, "dave-1", /finished handling/);
    const b = await requestLines(verbose, "dave-2", /finished handling/);
    const idOf = (l: string) => requestIdsFor(l, "")[0];
    assert.ok(a.length >= 4);
    assert.notEqual(idOf(a[0]!), idOf(b[0]!));
  });

  test("a failing command: its exit status and output are logged", async () => {
    const r = await send(`${verbose.base}/hooks/log-fail?tag=fail-run-1`);
    assert.equal(r.status, 500);
    const lines = await requestLines(verbose, "fail-run-1", /exit status 3/);
    const text = lines.join("\n");
    assert.match(text, /exit status 3/);
    assert.match(text, /out one/);
  });

  test("a rule that does not hold is logged as such", async () => {
    await send(`${verbose.base}/hooks/secret-value?tag=wrong-token-1`, { headers: { "X-Token": "nope" } });
    const lines = await requestLines(verbose, "wrong-token-1", /not satisfied/);
    assert.match(lines.join("\n"), /secret-value got matched, but didn't get triggered because the trigger rules were not satisfied/);
  });

  test("an unknown hook gets a summary line with 404", async () => {
    await send(`${verbose.base}/hooks/ghost-hook-9`);
    await verbose.proc.waitFor(/\b404\b.*\/hooks\/ghost-hook-9/);
  });

  test("start-up logs the loaded hooks and the address", async () => {
    const logs = verbose.logs();
    assert.match(logs, /version \S+ starting/);
    assert.match(logs, /found 5 hook\(s\) in file/);
    assert.match(logs, /loaded: log-me/);
    assert.match(logs, new RegExp(`serving hooks on http://127\\.0\\.0\\.1:${verbose.port}/hooks/\\{id\\}`));
  });
});

describe("-debug", { concurrency: true }, () => {
  test("dumps the request headers and body under the request id", async () => {
    await send(`${debug.base}/hooks/log-me?who=erin-5`, {
      headers: { "X-Dump-Me": "visible-header", "Content-Type": "text/plain" },
      body: "dumped body line",
    });
    const lines = await requestLines(debug, "visible-header", /X-Dump-Me/);
    const text = lines.join("\n");
    assert.match(text, /X-Dump-Me: visible-header/);
    assert.match(text, /dumped body line/);
  });

  test("-debug implies -verbose", async () => {
    await send(`${debug.base}/hooks/log-me?who=frank-6`);
    await requestLines(debug, "frank-6", /finished handling log-me/);
  });
});

describe("secrets", () => {
  test("secrets from the hooks file never appear in the log, at -verbose or -debug", async () => {
    const body = '{"x":1}';
    const goodSig = createHmac("sha256", HMAC_SECRET).update(body).digest("hex");
    for (const s of [verbose, debug]) {
      await send(`${s.base}/hooks/secret-value`, { headers: { "X-Token": "not-the-token" } });
      await send(`${s.base}/hooks/secret-hmac`, { headers: { "Content-Type": "application/json", "X-Sig": goodSig }, body });
      await send(`${s.base}/hooks/secret-hmac`, { headers: { "Content-Type": "application/json", "X-Sig": "sha256=00" }, body });
      await send(`${s.base}/hooks/secret-scalr`, { headers: { "X-Signature": "abc", Date: "Mon 02 Jan 2006 15:04:05 UTC" }, body });
    }
    // The right token sent in a header, without -debug (no dumps): the env secret must not be logged either.
    const ok = await send(`${verbose.base}/hooks/secret-value`, { headers: { "X-Token": TOKEN } });
    assert.equal(ok.status, 200);
    await verbose.proc.waitFor(/finished handling secret-value/);
    await debug.proc.waitFor(/secret-scalr/);
    // A last request to an unknown hook: once its line is in each log, every earlier request's lines are too.
    for (const s of [verbose, debug]) {
      await send(`${s.base}/hooks/end-of-secrets-test`, { method: "GET" });
      await s.proc.waitFor(/end-of-secrets-test/);
    }
    for (const s of [verbose, debug]) {
      for (const secret of [TOKEN, ENV_SECRET, HMAC_SECRET, SCALR_SECRET]) {
        assert.equal(s.logs().includes(secret), false, `${secret} appears in the log:\n${s.logs()}`);
      }
    }
  });
});

describe("-logfile on a full disk", () => {
  test("lines that cannot be written are dropped, said once on stderr, and every request is still answered", async (t) => {
    const hooks = await writeHooks(dir, [{ id: "logged", "execute-command": "/bin/true", "response-message": "ran" }]);
    // /dev/full takes the open and fails every write with ENOSPC.
    const s = await startServer(["-hooks", hooks, "-verbose", "-logfile", "/dev/full"]);
    t.after(() => s.stop());
    for (let i = 0; i < 3; i++) assert.equal((await send(`${s.base}/hooks/logged`, { method: "GET" })).text, "ran");
    assert.equal(s.proc.child.exitCode, null);
    const said = s.proc.stderr().match(/cannot write to -logfile \/dev\/full \(ENOSPC\)/g) ?? [];
    assert.equal(said.length, 1, s.proc.stderr());
  });
});
