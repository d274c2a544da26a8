// Response-message, response-headers, status codes and their fallback, captured
// output and its error variants, and background execution.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, linesOf, parseEcho, requestIdsFor, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
const EXEC_ERROR = "Error occurred while executing the hook's command. Please check your logs for more details.";
const tokenRule = {
  match: { type: "value", value: "let-me-in", parameter: { source: "url", name: "token" } },
};
let dir = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-responses-");
  const hooks = await writeHooks(dir, [
    { id: "message", "execute-command": echo, "response-message": "Deploying now" },
    {
      id: "headers",
      "execute-command": echo,
      "response-message": "with headers",
      "response-headers": [
        { name: "X-Deploy", value: "started" },
        { name: "Access-Control-Allow-Origin", value: "*" },
      ],
    },
    { id: "created", "execute-command": echo, "response-message": "made", "success-http-response-code": 201 },
    { id: "no-content", "execute-command": echo, "response-message": "dropped", "success-http-response-code": 204 },
    { id: "odd-code", "execute-command": echo, "response-message": "odd", "success-http-response-code": 999 },
    { id: "guarded", "execute-command": echo, "response-message": "in", "trigger-rule": tokenRule },
    {
      id: "guarded-403",
      "execute-command": echo,
      "trigger-rule": tokenRule,
      "trigger-rule-mismatch-http-response-code": 403,
      "response-headers": [{ name: "X-Only-On-Success", value: "yes" }],
    },
    { id: "guarded-odd", "execute-command": echo, "trigger-rule": tokenRule, "trigger-rule-mismatch-http-response-code": 999 },
    { id: "capture", "execute-command": fixture("mixed.sh"), "include-command-output-in-response": true, "response-message": "ignored" },
    {
      id: "capture-201",
      "execute-command": echo,
      "include-command-output-in-response": true,
      "success-http-response-code": 201,
      "pass-arguments-to-command": [{ source: "string", name: "hello" }],
    },
    { id: "capture-fail", "execute-command": fixture("fail.sh"), "include-command-output-in-response": true },
    {
      id: "capture-fail-output",
      "execute-command": fixture("fail.sh"),
      "include-command-output-in-response": true,
      "include-command-output-in-response-on-error": true,
      "response-headers": [{ name: "X-Still", value: "sent" }],
    },
    {
      id: "capture-fail-201",
      "execute-command": fixture("fail.sh"),
      "include-command-output-in-response": true,
      "success-http-response-code": 201,
    },
    { id: "capture-missing", "execute-command": join(dir, "no-such-command"), "include-command-output-in-response": true },
    {
      id: "background",
      "execute-command": fixture("slow.sh"),
      "response-message": "started in the background",
      "pass-arguments-to-command": [
        { source: "url", name: "gate" },
        { source: "url", name: "done" },
      ],
    },
    { id: "empty-message", "execute-command": echo },
    {
      id: "json-output",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "response-headers": [{ name: "Content-Type", value: "application/json" }],
      "pass-arguments-to-command": [{ source: "string", name: '{"ok":true}' }],
    },
    {
      id: "big-output",
      "execute-command": "/usr/bin/head",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: "1048576" },
        { source: "string", name: "/dev/urandom" },
      ],
    },
    { id: "stdin", "execute-command": "/bin/cat", "include-command-output-in-response": true },
    { id: "bad-cwd", "execute-command": echo, "command-working-directory": join(dir, "no-such-dir"), "include-command-output-in-response": true },
    { id: "not-executable", "execute-command": fixture("harness.ts"), "include-command-output-in-response": true },
  ]);
  s = await startServer(["-hooks", hooks, "-verbose"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

describe("responses", { concurrency: true }, () => {
  test("response-message is the body of a triggered hook", async () => {
    const r = await send(`${s.base}/hooks/message`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "Deploying now");
  });

  test("no response-message gives an empty 200", async () => {
    const r = await send(`${s.base}/hooks/empty-message`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "");
  });

  test("response-headers are sent", async () => {
    const r = await send(`${s.base}/hooks/headers`);
    assert.equal(r.headers["x-deploy"], "started");
    assert.equal(r.headers["access-control-allow-origin"], "*");
  });

  test("success-http-response-code sets the status", async () => {
    const r = await send(`${s.base}/hooks/created`);
    assert.equal(r.status, 201);
    assert.equal(r.text, "made");
  });

  test("success-http-response-code 204 sends no body", async () => {
    const r = await send(`${s.base}/hooks/no-content`);
    assert.equal(r.status, 204);
    assert.equal(r.text, "");
  });

  test("an unknown success-http-response-code falls back to 200 and is logged", async () => {
    const r = await send(`${s.base}/hooks/odd-code`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "odd");
    await s.proc.waitFor(/odd-code got matched, but the configured return code 999 is unknown - defaulting to 200/);
  });

  test("rules not satisfied: 200 'Hook rules were not satisfied.'", async () => {
    const r = await send(`${s.base}/hooks/guarded?token=wrong`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "Hook rules were not satisfied.");
  });

  test("rules satisfied: the response-message", async () => {
    const r = await send(`${s.base}/hooks/guarded?token=let-me-in`);
    assert.equal(r.text, "in");
  });

  test("trigger-rule-mismatch-http-response-code sets the status of a mismatch; hook headers are not sent", async () => {
    const r = await send(`${s.base}/hooks/guarded-403`);
    assert.equal(r.status, 403);
    assert.equal(r.text, "Hook rules were not satisfied.");
    assert.equal(r.headers["x-only-on-success"], undefined);
  });

  test("an unknown trigger-rule-mismatch-http-response-code falls back to 200 and is logged", async () => {
    const r = await send(`${s.base}/hooks/guarded-odd`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "Hook rules were not satisfied.");
    await s.proc.waitFor(/guarded-odd got matched, but the configured return code 999 is unknown - defaulting to 200/);
  });

  test("include-command-output-in-response returns stdout and stderr combined, in order, instead of the message", async () => {
    const r = await send(`${s.base}/hooks/capture`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "out one\nerr one\nout two\n");
  });

  test("a Content-Type from response-headers is kept for captured output", async () => {
    const r = await send(`${s.base}/hooks/json-output`);
    assert.equal(r.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(r.text), { ok: true });
  });

  test("1 MiB of binary output comes back whole", async () => {
    const r = await send(`${s.base}/hooks/big-output`);
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 1048576);
  });

  test("the command's stdin is empty (a command reading stdin does not hang)", async () => {
    const r = await send(`${s.base}/hooks/stdin`, { body: "the request body is not the command's stdin", headers: { "Content-Type": "text/plain" } });
    assert.equal(r.status, 200);
    assert.equal(r.text, "");
  });

  test("captured output with success-http-response-code", async () => {
    const r = await send(`${s.base}/hooks/capture-201`);
    assert.equal(r.status, 201);
    assert.deepEqual(parseEcho(r.text).args, ["hello"]);
  });

  test("a failing command with output capture: 500 and the fixed message", async () => {
    const r = await send(`${s.base}/hooks/capture-fail`);
    assert.equal(r.status, 500);
    assert.equal(r.text, EXEC_ERROR);
    assert.equal(r.headers["content-type"], "text/plain; charset=utf-8");
  });

  test("a failing command with include-command-output-in-response-on-error: 500 and its output", async () => {
    const r = await send(`${s.base}/hooks/capture-fail-output`);
    assert.equal(r.status, 500);
    assert.equal(r.text, "out one\nerr one\nout two\n");
    assert.equal(r.headers["x-still"], "sent");
  });

  test("a failing command ignores success-http-response-code", async () => {
    const r = await send(`${s.base}/hooks/capture-fail-201`);
    assert.equal(r.status, 500);
    assert.equal(r.text, EXEC_ERROR);
  });

  test("a command that does not exist, with output capture: 500 and the fixed message", async () => {
    const r = await send(`${s.base}/hooks/capture-missing`);
    assert.equal(r.status, 500);
    assert.equal(r.text, EXEC_ERROR);
  });

  test("a command-working-directory that does not exist: 500 and the fixed message", async () => {
    const r = await send(`${s.base}/hooks/bad-cwd`);
    assert.equal(r.status, 500);
    assert.equal(r.text, EXEC_ERROR);
  });

  test("a file that is not executable: 500 and the fixed message", async () => {
    const r = await send(`${s.base}/hooks/not-executable`);
    assert.equal(r.status, 500);
    assert.equal(r.text, EXEC_ERROR);
  });

  test("without output capture the response comes back while the command still runs", async () => {
    const gate = join(dir, "gate-file");
    const done = join(dir, "done-file");
    const r = await send(`${s.base}/hooks/background?gate=${encodeURIComponent(gate)}&done=${encodeURIComponent(done)}`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "started in the background");
    assert.equal(existsSync(done), false, "the command cannot have finished: it waits for the gate file");
    await writeFile(gate, "go");
    await eventually(() => existsSync(done), 20_000);
  });

  test("the log tells the request id of the background run and that it finished", async () => {
    const gate = join(dir, "gate-2");
    const done = join(dir, "done-2");
    await writeFile(gate, "go");
    await send(`${s.base}/hooks/background?gate=${encodeURIComponent(gate)}&done=${encodeURIComponent(done)}`);
    await eventually(() => existsSync(done), 20_000);
    await eventually(() => requestIdsFor(s.logs(), done).length > 0, 10_000);
    const [rid] = requestIdsFor(s.logs(), done);
    await eventually(() => linesOf(s.logs(), rid!).some((l) => /finished handling background/.test(l)), 10_000);
  });
});
