// Seeded fuzzing of the saved-request parser of -test-request (raw HTTP and JSON forms): random and
// mangled requests give a request or a problem, never a throw, and quickly; a request written in the
// JSON form -record-requests writes reads back unchanged. FUZZ_SEED replays a run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { jsonForm, parseSavedRequest } from "../../src/webhook/explain/request-file.js";
import { canonicalHeaderKey } from "../../src/webhook/go/header.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";

const VALID = [
  'POST /hooks/deploy?token=42 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"ref":"m"}\r\n',
  "POST /hooks/a HTTP/1.1\nTransfer-Encoding: chunked\n\n5\nhello\n0\n\n",
  "GET http://example.com/hooks/x?a=b HTTP/1.0\n\n",
  '{"method":"POST","url":"/hooks/x","headers":{"X-A":["1","2"]},"body":"b"}',
  '{"url":"/hooks/x","bodyBase64":"AAEC","remoteAddr":"[::1]:5"}',
  "== Info: Connected\n=> Send header, 30 bytes (0x1e)\n0000: 50 4f 53 54 20 2f 68 6f 6f 6b 73 2f 61 20 48 54 POST /hooks/a HT\n0010: 54 50 2f 31 2e 31 0d 0a 0d 0a                   TP/1.1....\n<= Recv header, 2 bytes (0x2)\n0000: 0d 0a                                           ..\n",
];

function mangle(r: Random, s: string): Buffer {
  const b = Buffer.from(s, "latin1");
  switch (r.int(6)) {
    case 0:
      return b.subarray(0, r.int(b.length + 1));
    case 1: {
      const c = Buffer.from(b);
      for (let i = 0; i < 1 + r.int(4); i++) c[r.int(c.length)] = r.pick([0x00, 0x0a, 0x0d, 0x20, 0x3a, 0x7b, 0x22, 0x30, 0x5b, 0xff]);
      return c;
    }
    case 2:
      return Buffer.concat([b, b]);
    case 3:
      return r.bytes(r.int(200));
    case 4:
      return Buffer.from(s.replace(/\d+/, r.pick(["-1", "99999999999999999999", "ffffffffffffffff", "", "1e3"])), "latin1");
    default:
      return Buffer.from(`${r.pick(["POST /h HTTP/1.1\n", "{"])}${"A: b\n".repeat(r.int(1500))}\n`, "latin1");
  }
}

test("random and mangled saved requests give a request or a problem, never a throw", () => {
  const seed = fuzzSeed(0x33f00d);
  const r = seeded(seed);
  const cases = fuzzCases(400);
  for (let i = 0; i < cases; i++) {
    const input = mangle(r, r.pick(VALID));
    const t0 = process.hrtime.bigint();
    let out: ReturnType<typeof parseSavedRequest>;
    try {
      out = parseSavedRequest(input);
    } catch (e) {
      assert.fail(`seed ${seed} case ${i}: threw ${(e as Error).message} on ${JSON.stringify(input.toString("latin1").slice(0, 200))}`);
    }
    if ("problem" in out) assert.ok(out.problem.length > 0 && out.problem.length < 300, `seed ${seed} case ${i}: a short problem`);
    else assert.ok(Buffer.isBuffer(out.body) && out.url.startsWith("/"), `seed ${seed} case ${i}: a request with a path`);
    // Linear work: even the largest input is read in well under a second.
    assert.ok(process.hrtime.bigint() - t0 < 1_000_000_000n, `seed ${seed} case ${i}: parsed in under a second`);
  }
});

/** What hooks read of headers: each canonical name's values, in the order sent. */
function byName(raw: string[]): Record<string, string[]> {
  const out = Object.create(null) as Record<string, string[]>;
  for (let i = 0; i < raw.length; i += 2) (out[canonicalHeaderKey(raw[i]!)] ??= []).push(raw[i + 1]!);
  return out;
}

test("what -record-requests writes reads back as the same request", () => {
  const r = seeded(fuzzSeed(0x33beef));
  for (let i = 0; i < fuzzCases(100); i++) {
    const rawHeaders = Array.from({ length: 2 * r.int(4) }, (_, k) =>
      k % 2 === 0
        ? r.pick(["X-A", "x-a", "Content-Type", "__proto__"])
        : r
            .bytes(r.int(8))
            .toString("latin1")
            .replace(/[\x00-\x1f\x7f]/g, "v"),
    );
    const head = { method: r.pick(["POST", "GET", "PUT"]), url: r.pick(["/hooks/a", "/hooks/a?x=%41&b"]), rawHeaders, remoteAddr: "10.0.0.1:4" };
    const body = r.bytes(r.int(50));
    const back = parseSavedRequest(Buffer.from(jsonForm(head, body)));
    assert.ok(!("problem" in back), `case ${i}: ${JSON.stringify(back)}`);
    assert.deepEqual({ ...back, rawHeaders: byName(back.rawHeaders) }, { ...head, rawHeaders: byName(rawHeaders), body }, `case ${i}`);
  }
});
