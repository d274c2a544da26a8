// Unauthenticated multipart bodies must never end or hang the server: bodies are decoded before
// any rule is checked, so anyone who can reach a hook id can send them. Each reproduction below
// once killed or hung bin/webhook; the fuzz test sends seeded random mutations of valid bodies.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync } from "node:fs";
import { removeDir, tempDir } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";
import { fixture, send, type Server, signedHook, startServer, writeHooks } from "./fixtures/harness.js";
import { multipart } from "../fixtures/http.js";
import { peakRssMiB } from "../fixtures/memory.js";

let dir = "";
let s: Server;
let ranFile = "";

before(async () => {
  dir = await tempDir("webhook-mp-attack-");
  ranFile = join(dir, "ran.txt");
  const hooks = await writeHooks(dir, [
    {
      id: "echo",
      "execute-command": fixture("hex.sh"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "a" },
        { source: "payload", name: "b" },
      ],
    },
    signedHook("signed", ranFile),
  ]);
  s = await startServer(["-hooks", hooks]);
});

after(async () => {
  await s.stop();
  await removeDir(dir);
});

const post = (body: Buffer | string, boundary: string) =>
  send(`${s.base}/hooks/signed`, { body, headers: { "Content-Type": `multipart/form-data; boundary=${boundary}` }, timeoutMs: 10_000 });

describe("multipart bodies from anyone", () => {
  test("a body cut off inside a file part gets 500 and the server stays up", async () => {
    const r = await post('--X\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nabc', "X");
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while parsing multipart form.");
    assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
  });

  test("a body cut off inside a JSON file part gets 500 and the server stays up", async () => {
    const r = await post('--X\r\nContent-Disposition: form-data; name="f"; filename="a.json"\r\nContent-Type: application/json\r\n\r\n{"a":', "X");
    assert.equal(r.status, 500);
    assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
  });

  test("a part after the closing boundary is answered", async () => {
    const r = await post('--XyZ--\r\n--XyZ\r\n--XyZ\r\nContent-Disposition: form-data; name="f"; filename="x.json"\r\n\r\n\r\n', "XyZ");
    assert.ok(r.status >= 200 && r.status < 600, `status ${r.status}`);
    assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
  });

  test("seeded random mutations of multipart bodies all get an answer and run nothing", async () => {
    const seed = fuzzSeed(0x6d756c74);
    const rnd = seeded(seed);
    const cases = fuzzCases(150);
    const boundaries = ["X", "XyZ", "----b", "a b", '"q"', "-".repeat(70)];
    for (let i = 0; i < cases; i++) {
      const boundary = rnd.pick(boundaries);
      const { body } = multipart(
        [
          { name: "a", value: "1" },
          { name: "f", value: '{"x":[1,2]}', filename: "f.json", contentType: "application/json" },
          { name: "g", value: rnd.bytes(rnd.int(64)), filename: "g.bin" },
        ],
        boundary,
      );
      let b = Buffer.from(body);
      const ops = 1 + rnd.int(4);
      for (let k = 0; k < ops; k++) {
        const at = rnd.int(b.length + 1);
        switch (rnd.int(5)) {
          case 0: // truncate
            b = b.subarray(0, at);
            break;
          case 1: // flip a byte
            if (b.length) b[Math.min(at, b.length - 1)] = rnd.int(256);
            break;
          case 2: // insert a boundary line
            b = Buffer.concat([
              b.subarray(0, at),
              Buffer.from(rnd.pick([`--${boundary}\r\n`, `--${boundary}--\r\n`, `\r\n--${boundary}`, "\n"])),
              b.subarray(at),
            ]);
            break;
          case 3: // insert random bytes
            b = Buffer.concat([b.subarray(0, at), rnd.bytes(rnd.int(16)), b.subarray(at)]);
            break;
          default: // duplicate a slice
            b = Buffer.concat([b.subarray(0, at), b.subarray(rnd.int(b.length + 1)), b.subarray(at)]);
        }
      }
      let status = 0;
      try {
        status = (await post(b, boundary)).status;
      } catch (e) {
        assert.fail(`case ${i} (FUZZ_SEED=${seed}): no answer: ${(e as Error).message}`);
      }
      assert.ok([200, 400, 403, 413, 500].includes(status), `case ${i} (FUZZ_SEED=${seed}): status ${status}`);
    }
    assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
    assert.equal(existsSync(ranFile), false, "a command ran without a valid signature");
  });

  test("seeded random well-formed bodies (CRLF or bare LF, preambles, epilogues, binary values) hand the command exactly the values sent", async () => {
    const seed = fuzzSeed(0x726f756e);
    const rnd = seeded(seed);
    const cases = fuzzCases(60);
    for (let i = 0; i < cases; i++) {
      const boundary = rnd.pick(["X", "----b7", "a.b_c", "-".repeat(20) + "z"]);
      const nl = rnd.pick(["\r\n", "\n"]);
      // Values that cannot hold the delimiter (no "-", no line break) and can be argv (no NUL).
      const value = (): Buffer => Buffer.from([...rnd.bytes(rnd.int(40))].map((b) => (b === 0x2d || b === 0x0a || b === 0x0d || b === 0 ? 0x41 : b)));
      const a = value();
      const b = value();
      const part = (name: string, v: Buffer): Buffer[] => [
        Buffer.from(`--${boundary}${nl}Content-Disposition: form-data; name="${name}"${nl}${nl}`),
        v,
        Buffer.from(nl),
      ];
      const body = Buffer.concat([
        Buffer.from(rnd.pick(["", `preamble${nl}`, `x${nl}${nl}`])),
        ...part("a", a),
        ...part("b", b),
        Buffer.from(`--${boundary}--${rnd.pick(["", nl, `${nl}epilogue`])}`),
      ]);
      const r = await send(`${s.base}/hooks/echo`, { body, headers: { "Content-Type": `multipart/form-data; boundary=${boundary}` } });
      const where = `case ${i} (FUZZ_SEED=${seed})`;
      assert.equal(r.status, 200, `${where}: ${r.text}`);
      assert.match(r.text, new RegExp(`^arg1=${a.toString("hex")}\\narg2=${b.toString("hex")}\\n$`), where);
    }
  });
});

describe("multipart bodies that cost time or memory", () => {
  const echo = (body: Buffer | string) =>
    send(`${s.base}/hooks/echo`, { body, headers: { "Content-Type": "multipart/form-data; boundary=X" }, timeoutMs: 10_000 });

  // Each of these blocked every request for minutes (backtracking trims, a quoted value built a
  // character at a time) or took hundreds of MB.
  for (const [what, header] of [
    ["a header value with a long run of spaces inside", `Content-Disposition: form-data; name="a"\r\nA: a${" ".repeat(300_000)}b`],
    ["a file name of 300 000 slashes", `Content-Disposition: form-data; name="a"; filename="${"/".repeat(300_000)}a"`],
    ["an unterminated quoted parameter", `Content-Disposition: form-data; name="a"; x="${" ".repeat(300_000)}`],
    ["300 000 folded header lines", `Content-Disposition: form-data; name="a"\r\nA: b${"\r\n x".repeat(300_000)}`],
  ]) {
    test(`${what}: answered at once`, async () => {
      const r = await echo(`--X\r\n${header}\r\n\r\nv\r\n--X--\r\n`);
      assert.equal(r.status, 200, r.text);
      assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
    });
  }

  test("a 9 MiB quoted-printable part raises the server's peak memory by far less than 10x its size", async () => {
    const peakRss = (): number => peakRssMiB(s.proc.child.pid!) * 1024 * 1024;
    const before = await peakRss();
    const size = 9 * 1024 * 1024;
    const body = Buffer.concat([
      Buffer.from('--X\r\nContent-Disposition: form-data; name="q"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n'),
      Buffer.alloc(size, "a"),
      Buffer.from("\r\n--X--\r\n"),
    ]);
    assert.equal((await echo(body)).status, 200);
    const grew = (await peakRss()) - before;
    assert.ok(grew < 10 * size, `peak RSS grew by ${(grew / 1024 / 1024).toFixed(0)} MiB for a ${size / 1024 / 1024} MiB part`);
  });
});
