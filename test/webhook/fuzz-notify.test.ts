// Seeded, bounded fuzzing of the two parsers the notifications and traces add: the hook field notify
// (mutated targets in a hooks file: each loads or is refused with a one-line HooksFileError; notify's own
// messages quote no password or header value) and the W3C traceparent a request or a job message carries (any text:
// a span context with valid ids, or nothing; never an exception). FUZZ_SEED replays a run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HooksFileError, parseHooks } from "../../src/webhook/hooks/config.js";
import { parseTraceparent } from "../../src/webhook/trace/otel.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";

const PASSWORD = "fuzz-pa55";
const HEADER = "fuzz-header-value";

const TARGETS: unknown[] = [
  { url: `https://user:${PASSWORD}@example.org/hook`, on: ["failed", "retried"], timeout: "5s", retries: 3, headers: [{ name: "X-Key", value: HEADER }] },
  { ntfy: "https://ntfy.example/alerts", title: "{{.Hook}} {{.State}}", priority: "high", tags: ["x", "warning"] },
  { mqtt: "mqtts://broker.example:8883", topic: "webhook/out", template: '{"h":"{{.Hook}}","o":{{printf "%q" .Output}}}' },
];
const SEED = JSON.stringify([{ id: "n", "execute-command": "/bin/true", notify: TARGETS }]);
const INSERTS = ['"', "{", "}", "[", "]", ",", ":", "{{", "}}", "://", "@", "#", "+", "\\u0000", "\\n", "-1", "99", "1e400", "null", "true", '"on"', '"url"'];

function mutate(rnd: Random, text: string): string {
  let s = text;
  for (let k = 1 + rnd.int(3); k > 0; k--) {
    const at = rnd.int(s.length + 1);
    const op = rnd.int(3);
    if (op === 0) s = s.slice(0, at) + INSERTS[rnd.int(INSERTS.length)]! + s.slice(at);
    else if (op === 1) s = s.slice(0, at) + s.slice(at + 1 + rnd.int(12));
    else s = s.slice(0, at) + String.fromCharCode(32 + rnd.int(95)) + s.slice(at + 1);
  }
  return s;
}

test("seeded random notify fields: each loads or is refused with one line that quotes no secret", () => {
  const seed = fuzzSeed(0x6e6f7469);
  const rnd = seeded(seed);
  for (let i = 0, n = fuzzCases(400); i < n; i++) {
    const text = mutate(rnd, SEED);
    try {
      parseHooks("fuzz.json", text);
    } catch (e) {
      if (!(e instanceof HooksFileError)) assert.fail(`case ${i} (FUZZ_SEED=${seed}): ${String(e)}\n${text}`);
      assert.doesNotMatch(e.message, /\n/, `case ${i}: one line`);
      // (A syntax error quotes the file where it broke, as before: only notify's own checks are held to this.)
      if (e.message.includes('"notify['))
        for (const secret of [PASSWORD, HEADER]) assert.ok(!e.message.includes(secret), `case ${i}: the message quotes ${secret}: ${e.message}`);
    }
  }
});

test("seeded random traceparents: a span context with valid ids, or none", () => {
  const seed = fuzzSeed(0x74726163);
  const rnd = seeded(seed);
  const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  for (let i = 0, n = fuzzCases(2000); i < n; i++) {
    const text = rnd.int(4) === 0 ? rnd.bytes(rnd.int(80)).toString("latin1") : mutate(rnd, valid);
    const c = parseTraceparent(text);
    if (c === undefined) continue;
    assert.match(c.traceId, /^(?!0+$)[0-9a-f]{32}$/, `case ${i} (FUZZ_SEED=${seed}): ${JSON.stringify(text)}`);
    assert.match(c.spanId, /^(?!0+$)[0-9a-f]{16}$/, `case ${i}: ${JSON.stringify(text)}`);
    assert.ok(c.traceFlags === 0 || c.traceFlags === 1);
  }
  assert.deepEqual(parseTraceparent(valid), { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true });
  for (const bad of [
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
    `${valid}-extra`,
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
  ])
    assert.equal(parseTraceparent(bad), undefined, bad);
});
