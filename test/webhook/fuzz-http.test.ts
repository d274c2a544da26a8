// Seeded, bounded fuzzing of the hook server's HTTP/1.1 parsing over raw TCP: mutated request heads
// (methods, targets, versions, header lines, folding, framing) and bodies (Content-Length, chunked) to a
// running bin/webhook. Every request is answered or its connection closed, the server stays up, and the
// hook behind a signature never runs. FUZZ_SEED replays a run; `npm run fuzz` runs many more cases.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { removeDir, tempDir } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";
import { connect } from "node:net";
import { send, type Server, signedHook, startServer, writeHooks } from "./fixtures/harness.js";

let dir = "";
let ranFile = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-fuzz-http-");
  ranFile = join(dir, "ran.txt");
  const hooks = await writeHooks(dir, [signedHook("signed", ranFile)]);
  s = await startServer(["-hooks", hooks, "-max-body", "65536"]);
});

after(async () => {
  await s.stop();
  await removeDir(dir);
});

const METHODS = ["POST", "GET", "PUT", "HEAD", "OPTIONS", "DELETE", "PATCH", "CONNECT", "TRACE", "P\x00ST", "", "G E T"];
const TARGETS = ["/hooks/signed", "/hooks/signed?x=%FF&y=%zz", "*", "/hooks/%2e%2e/signed", "http://h/hooks/signed", "/", "/hooks/", "//", "/hooks/signed#f"];
const VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.x", "http/1.1", "HTTP/1.1 ", ""];
const HEADERS = [
  "Host: 127.0.0.1",
  "Content-Type: application/json",
  "Content-Type: multipart/form-data; boundary=X",
  "Content-Type: application/x-www-form-urlencoded",
  "Content-Type: text/xml",
  "X-Hub-Signature-256: sha256=00",
  "Transfer-Encoding: chunked",
  "Transfer-Encoding: gzip, chunked",
  "Content-Length: 5",
  "Content-Length: -1",
  "Content-Length: 99999999999999999999",
  "Content-Length: 3, 4",
  " folded continuation",
  "\tfolded tab",
  "No-Colon-Header",
  ": empty name",
  "Expect: 100-continue",
  "Connection: close",
  "Connection: keep-alive",
  "X-Bytes: \xff\xfe\x80",
];

/**
 * Sends `bytes`, then ends the sending side (as a client that has nothing more to say) and collects the
 * answer. Resolves with what came back once the server closes, or undefined if it keeps the connection
 * open for `limitMs` after the client's end: a leak.
 */
function exchange(port: number, bytes: Buffer, limitMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sock = connect({ port, host: "127.0.0.1" });
    const timer = setTimeout(() => {
      sock.destroy();
      resolve(undefined);
    }, limitMs);
    sock.on("data", (c: Buffer) => chunks.push(c));
    sock.on("error", () => undefined);
    sock.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("latin1"));
    });
    sock.on("connect", () => sock.end(bytes));
  });
}

function mutate(rnd: Random, b: Buffer): Buffer {
  const at = rnd.int(b.length + 1);
  switch (rnd.int(4)) {
    case 0:
      return b.subarray(0, at);
    case 1: {
      const c = Buffer.from(b);
      if (c.length) c[Math.min(at, c.length - 1)] = rnd.int(256);
      return c;
    }
    case 2:
      return Buffer.concat([b.subarray(0, at), rnd.bytes(rnd.int(12)), b.subarray(at)]);
    default:
      return Buffer.concat([b.subarray(0, at), Buffer.from(rnd.pick(["\r\n", "\n", "\r", "\r\n\r\n", "0\r\n\r\n", ":"])), b.subarray(at)]);
  }
}

function request(rnd: Random): Buffer {
  const body = rnd.pick(["", '{"a":1}', "a=1&b=2", '--X\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--X--\r\n', "<a>1</a>"]);
  const lines = [`${rnd.pick(METHODS)} ${rnd.pick(TARGETS)} ${rnd.pick(VERSIONS)}`.trimEnd()];
  const n = rnd.int(6);
  for (let i = 0; i < n; i++) lines.push(rnd.pick(HEADERS));
  let framed = body;
  // Half the requests carry a length; of the rest, half are chunked (two draws, in this order, keep old seeds' inputs).
  const framing = rnd.int(2) === 0 ? "length" : rnd.int(2) === 0 ? "chunked" : "none";
  if (framing === "length") lines.push(`Content-Length: ${body.length}`);
  else if (framing === "chunked") {
    lines.push("Transfer-Encoding: chunked");
    framed = body ? `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n` : "0\r\n\r\n";
  }
  lines.push("Connection: close");
  let raw: Buffer = Buffer.from(`${lines.join(rnd.pick(["\r\n", "\r\n", "\n"]))}\r\n\r\n${framed}`, "latin1");
  const ops = rnd.int(3);
  for (let k = 0; k < ops; k++) raw = mutate(rnd, raw);
  return raw;
}

test("seeded random HTTP requests: each answered or closed, the server stays up, nothing unsigned runs", async () => {
  const seed = fuzzSeed(0x68747470);
  const rnd = seeded(seed);
  const cases = fuzzCases(200);
  for (let i = 0; i < cases; i++) {
    const raw = request(rnd);
    const reply = await exchange(s.port, raw, 30_000);
    const what = `case ${i} (FUZZ_SEED=${seed}): ${JSON.stringify(raw.toString("latin1"))}`;
    assert.notEqual(reply, undefined, `${what}: the connection stayed open after the client finished`);
    // An answer, if any, is a well-formed status line; silence means the server closed the connection.
    if (reply) assert.match(reply, /^HTTP\/1\.[01] [1-5]\d\d /, `${what} → ${JSON.stringify(reply.slice(0, 200))}`);
  }
  assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200, "the server still answers");
  assert.equal(existsSync(ranFile), false, "a command ran without a valid signature");
});
