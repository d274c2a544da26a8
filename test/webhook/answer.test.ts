// The one place where what became of a trigger becomes the HTTP answer (server/answer.ts), for
// local and shared-queue dispatch alike. Over HTTP: limits.test.ts, run-policies.test.ts, queue.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Dispatched } from "../../src/webhook/dispatch/dispatch.js";
import type { Hook } from "../../src/webhook/hooks/hook.js";
import { runPolicy } from "../../src/webhook/hooks/run-fields.js";
import type { HttpResponse } from "../../src/webhook/http/contract.js";
import { Log } from "../../src/webhook/log/log.js";
import { Answers } from "../../src/webhook/server/answer.js";
import { Headers } from "../../src/webhook/server/response.js";

const LIMITS = { maxConcurrency: 0, maxBackground: 8, maxQueue: 100, commandTimeoutMs: 0 };

function answer(hook: Partial<Hook>, d: Dispatched, jobsServed = false): Promise<HttpResponse> {
  const h = { id: "h", "execute-command": "/bin/true", ...hook } as Hook;
  const out = new Headers();
  out.set("X-Global", "1");
  return Promise.resolve(new Answers(new Log(false), jobsServed, LIMITS).dispatched({ hook: h, rid: "r", fields: {} }, out, runPolicy(h), d));
}

test("refusals: 429 for a rate-limit or a full queue, with Retry-After; 503 or 413 when the shared queue cannot take it", async () => {
  const limited = await answer({}, { kind: "limited", retryAfterS: 7 });
  assert.equal(limited.status, 429);
  assert.deepEqual(limited.headers, [
    ["X-Global", "1"],
    ["Retry-After", "7"],
    ["Content-Type", "text/plain; charset=utf-8"],
  ]);
  assert.match(String(limited.body), /rate-limit is reached/);
  const busy = await answer({ "response-headers": [{ name: "X-Not", value: "set" }] }, { kind: "busy" });
  assert.equal(busy.status, 429);
  assert.deepEqual(busy.headers, [
    ["X-Global", "1"],
    ["Retry-After", "1"],
    ["Content-Type", "text/plain; charset=utf-8"],
  ]);
  assert.match(String(busy.body), /max-concurrency/);
  const down = await answer({}, { kind: "unavailable", tooLarge: false });
  assert.equal(down.status, 503);
  assert.deepEqual(down.headers.slice(1), [
    ["Content-Type", "text/plain; charset=utf-8"],
    ["Retry-After", "1"],
  ]);
  assert.equal((await answer({}, { kind: "unavailable", tooLarge: true })).status, 413);
});

test("accepted: the hook's response headers, then X-Job-Id; async-response answers 202 with the job's URL when /jobs serves it", async () => {
  const hook = { "response-headers": [{ name: "x-mine", value: "v" }], "response-message": "ok", "success-http-response-code": 201 };
  const queued = await answer(hook, { kind: "queued", jobId: "j1" });
  assert.equal(queued.status, 201);
  assert.equal(queued.body, "ok");
  assert.deepEqual(queued.headers.slice(0, 3), [
    ["X-Global", "1"],
    ["X-Mine", "v"],
    ["X-Job-Id", "j1"],
  ]);
  const async = await answer({ "async-response": true }, { kind: "queued", jobId: "j2" }, true);
  assert.equal(async.status, 202);
  assert.ok(async.headers.some(([k, v]) => k === "Location" && v === "/jobs/j2"));
  const unserved = await answer({ "async-response": true }, { kind: "queued", jobId: "j3" });
  assert.ok(!unserved.headers.some(([k]) => k === "Location"));
  const duplicate = await answer({ "async-response": true, "response-message": "seen" }, { kind: "duplicate", jobId: "j0" });
  assert.equal(duplicate.status, 200);
  assert.equal(duplicate.body, "seen");
});

test("ran: the command's output, 500 on failure (or its exit code with status-from-exit-code), 504 after command-timeout", async () => {
  const ran = (result: { output: Buffer; error?: string; exitCode?: number | null; timedOut?: boolean }, hook: Partial<Hook> = {}) =>
    answer({ "include-command-output-in-response": true, ...hook }, { kind: "ran", result: Promise.resolve(result) });
  const ok = await ran({ output: Buffer.from("out"), exitCode: 0 });
  assert.equal(ok.status, 200);
  assert.equal(String(ok.body), "out");
  assert.equal((await ran({ output: Buffer.from(""), error: "exit status 1", exitCode: 1 })).status, 500);
  assert.equal((await ran({ output: Buffer.from(""), error: "exit status 104", exitCode: 104 }, { "status-from-exit-code": true })).status, 404);
  const late = await ran({ output: Buffer.from(""), error: "signal: terminated", exitCode: null, timedOut: true }, { "command-timeout": "2s" });
  assert.equal(late.status, 504);
  assert.match(String(late.body), /command-timeout of 2s/);
});
