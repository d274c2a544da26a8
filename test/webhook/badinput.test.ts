// Malformed JSON, XML and multipart; bodies above -max-body (413); headers
// with odd bytes (the 10 000-request load test is in load.test.ts). Every request gets a proper
// status, the server stays up, and no command runs whose rule was not satisfied.
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, parseDump, parseEcho, rawExchange, send, startServer, statusOf, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
const append = fixture("append.sh");
const NOT_SATISFIED = "Hook rules were not satisfied.";
let dir = "";
let ranFile = "";
let s: Server; // default limits
let small: Server; // -max-body 1024

const tokenRule = { match: { type: "value", value: "yes", parameter: { source: "url", name: "token" } } };

before(async () => {
  dir = await tempDir("webhook-bad-");
  ranFile = join(dir, "ran.txt");
  // append.sh <marker from ?n=> <file>: one line per command that ran
  const appendArgs = [
    { source: "url", name: "n" },
    { source: "string", name: ranFile },
  ];
  const hooks = await writeHooks(dir, [
    {
      id: "guarded-echo",
      "execute-command": echo,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "payload", name: "a" }],
      "trigger-rule": tokenRule,
    },
    {
      id: "payload-rule",
      "execute-command": append,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": { match: { type: "value", value: "1", parameter: { source: "payload", name: "a" } } },
    },
    {
      id: "good",
      "execute-command": append,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": tokenRule,
    },
    {
      id: "guarded",
      "execute-command": append,
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": tokenRule,
    },
    {
      id: "signed",
      "execute-command": append,
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": { match: { type: "payload-hmac-sha256", secret: "load-secret", parameter: { source: "header", name: "X-Sig" } } },
    },
    {
      id: "post-only",
      "execute-command": append,
      "http-methods": ["POST"],
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": tokenRule,
    },
    {
      id: "proto",
      "execute-command": fixture("dump.mjs"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "constructor" },
        { source: "payload", name: "toString" },
        { source: "payload", name: "x" },
        { source: "url", name: "constructor" },
        { source: "header", name: "constructor" },
        { source: "payload", name: "a.hasOwnProperty" },
      ],
    },
    {
      id: "polluted",
      "execute-command": append,
      "pass-arguments-to-command": appendArgs,
      "response-message": "ran",
      "trigger-rule": { match: { type: "value", value: "polluted", parameter: { source: "payload", name: "x" } } },
    },
    {
      id: "slow-capture",
      "execute-command": fixture("slow.sh"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "url", name: "gate" },
        { source: "url", name: "done" },
      ],
    },
    {
      id: "utf8-header",
      "execute-command": fixture("dump.mjs"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "header", name: "X-Name" }],
      "trigger-rule": { match: { type: "value", value: "café ✓", parameter: { source: "header", name: "X-Name" } } },
    },
  ]);
  [s, small] = await Promise.all([startServer(["-hooks", hooks, "-verbose"]), startServer(["-hooks", hooks, "-max-body", "1024"])]);
});

after(async () => {
  await Promise.all([s?.stop(), small?.stop()]);
  await removeDir(dir);
});

async function ranLines(): Promise<string[]> {
  if (!existsSync(ranFile)) return [];
  return (await readFile(ranFile, "utf8")).split("\n").filter(Boolean);
}

// Each test stands alone: whatever it sent, both servers must still be up after it.
afterEach(async () => {
  await stillUp(s);
  await stillUp(small);
});

async function stillUp(server: Server): Promise<void> {
  const r = await send(`${server.base}/`, { method: "GET" });
  assert.equal(r.status, 200);
  assert.equal(r.text, "OK");
  assert.equal(server.proc.child.exitCode, null, "the server is still running");
}

describe("malformed bodies", { concurrency: true }, () => {
  test("malformed JSON: logged, payload empty, the rules still run", async () => {
    const r = await send(`${s.base}/hooks/guarded-echo?token=yes`, { headers: { "Content-Type": "application/json" }, body: '{"a": "x",' });
    assert.equal(r.status, 200);
    assert.deepEqual(parseEcho(r.text).args, [""]);
    await s.proc.waitFor(/error parsing JSON payload/);
  });

  test("malformed JSON: a rule on the payload does not hold and the command does not run", async () => {
    const r = await send(`${s.base}/hooks/payload-rule?n=bad-json`, { headers: { "Content-Type": "application/json" }, body: '{"a": 1' });
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
    assert.ok(!(await ranLines()).includes("bad-json"));
  });

  test("JSON that is a bare string or number: no crash, rules run", async () => {
    for (const body of ['"just a string"', "42", "null", "[1,2", "\u0000\u0001"]) {
      const r = await send(`${s.base}/hooks/guarded-echo?token=yes`, { headers: { "Content-Type": "application/json" }, body });
      assert.equal(r.status, 200, body);
    }
  });

  test("names of JavaScript built-ins are just missing keys (no prototype lookups)", async () => {
    const r = await send(`${s.base}/hooks/proto`, { headers: { "Content-Type": "application/json" }, body: '{"__proto__":{"x":"polluted"},"a":{}}' });
    assert.deepEqual(parseDump(r.text).argv, ["", "", "", "", "", ""]);
  });

  test("__proto__ keys in JSON, forms and XML cannot satisfy a rule on another key", async () => {
    const bodies: [string, string][] = [
      ["application/json", '{"__proto__":{"x":"polluted"}}'],
      ["application/x-www-form-urlencoded", "__proto__[x]=polluted&__proto__=polluted"],
      ["application/xml", "<__proto__><x>polluted</x></__proto__>"],
    ];
    for (const [type, body] of bodies) {
      const r = await send(`${s.base}/hooks/polluted?n=proto-${type}`, { headers: { "Content-Type": type }, body });
      assert.equal(r.text, NOT_SATISFIED, type);
    }
    assert.ok(!(await ranLines()).some((l) => l.startsWith("proto-")));
  });

  test("JSON and XML nested 50 000 deep: a proper answer, no crash", async () => {
    const deepJson = '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000);
    const deepArray = "[".repeat(100_000) + "]".repeat(100_000);
    const deepXml = "<a>".repeat(50_000) + "1" + "</a>".repeat(50_000);
    for (const [type, body] of [
      ["application/json", deepJson],
      ["application/json", deepArray],
      ["application/xml", deepXml],
    ] as const) {
      const r = await send(`${s.base}/hooks/guarded-echo?token=yes`, { headers: { "Content-Type": type }, body });
      assert.equal(r.status, 200, type);
    }
  });

  test("malformed XML: logged, payload empty, the rules still run", async () => {
    const r = await send(`${s.base}/hooks/guarded-echo?token=yes`, { headers: { "Content-Type": "application/xml" }, body: "<a><b>unclosed</a>" });
    assert.equal(r.status, 200);
    assert.deepEqual(parseEcho(r.text).args, [""]);
    await s.proc.waitFor(/error parsing XML payload/);
  });

  test("malformed XML: a rule on the payload does not hold; garbage after the first element is not read, as by the reference", async () => {
    const r = await send(`${s.base}/hooks/payload-rule?n=bad-xml`, { headers: { "Content-Type": "application/xml" }, body: "<a>1<<</a>" });
    assert.equal(r.text, NOT_SATISFIED);
    assert.ok(!(await ranLines()).includes("bad-xml"));
    const after = await send(`${s.base}/hooks/payload-rule?n=xml-then-garbage`, { headers: { "Content-Type": "application/xml" }, body: "<a>1</a><<<" });
    assert.notEqual(after.text, NOT_SATISFIED);
    assert.ok((await ranLines()).includes("xml-then-garbage"));
  });

  test("malformed multipart (garbage after the boundary): 500 'Error occurred while parsing multipart form.'", async () => {
    const r = await send(`${s.base}/hooks/payload-rule?n=bad-multipart`, {
      headers: { "Content-Type": "multipart/form-data; boundary=xyz" },
      body: "this is not multipart at all",
    });
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while parsing multipart form.");
    assert.ok(!(await ranLines()).includes("bad-multipart"));
  });

  test("truncated multipart (no closing boundary): 500, command not run", async () => {
    const r = await send(`${s.base}/hooks/payload-rule?n=cut-multipart`, {
      headers: { "Content-Type": "multipart/form-data; boundary=xyz" },
      body: '--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--xy',
    });
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while parsing multipart form.");
    assert.ok(!(await ranLines()).includes("cut-multipart"));
  });
});

describe("-max-body", { concurrency: true }, () => {
  const post = (path: string, bodyLen: number, extraHeaders = "") =>
    Buffer.concat([
      Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n${extraHeaders}`),
      Buffer.from(extraHeaders.includes("chunked") ? "\r\n" : `Content-Length: ${bodyLen}\r\n\r\n`),
    ]);

  test("a body above -max-body answers 413 and the command does not run", async () => {
    const body = JSON.stringify({ a: "1", pad: "x".repeat(2048) });
    const raw = await rawExchange(small.port, Buffer.concat([post("/hooks/good?token=yes&n=too-big", body.length), Buffer.from(body)]));
    assert.equal(statusOf(raw), 413, raw.slice(0, 200));
    assert.ok(!(await ranLines()).includes("too-big"));
  });

  test("a chunked body above -max-body answers 413", async () => {
    const chunk = "x".repeat(600);
    const chunked = `${(600).toString(16)}\r\n${chunk}\r\n`.repeat(4) + "0\r\n\r\n";
    const raw = await rawExchange(
      small.port,
      Buffer.concat([post("/hooks/good?token=yes&n=too-big-chunked", 0, "Transfer-Encoding: chunked\r\n"), Buffer.from(chunked)]),
    );
    assert.equal(statusOf(raw), 413, raw.slice(0, 200));
    assert.ok(!(await ranLines()).includes("too-big-chunked"));
  });

  test("a body right at -max-body is accepted", async () => {
    const head = '{"pad":"';
    const body = head + "y".repeat(1024 - head.length - 2) + '"}';
    assert.equal(body.length, 1024);
    const r = await send(`${small.base}/hooks/good?token=yes&n=at-limit`, { headers: { "Content-Type": "application/json" }, body });
    assert.equal(r.status, 200);
    assert.ok((await ranLines()).includes("at-limit"));
  });

  test("the default limit is 10 MiB: 10 MiB + 1 byte answers 413, every time, even to a client that sends it all first", async () => {
    const size = 10 * 1024 * 1024 + 1;
    const request = Buffer.concat([post("/hooks/good?token=yes&n=over-default", size), Buffer.alloc(size, 0x20)]);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push(statusOf(await rawExchange(s.port, request, 30_000)));
    assert.deepEqual(statuses, [413, 413, 413, 413, 413], "0 = the connection was reset before the answer could be read");
    assert.ok(!(await ranLines()).includes("over-default"));
  });

  test("a 2 MiB body is under the default limit", async () => {
    const body = JSON.stringify({ pad: "z".repeat(2 * 1024 * 1024) });
    const r = await send(`${s.base}/hooks/good?token=yes&n=two-mib`, { headers: { "Content-Type": "application/json" }, body });
    assert.equal(r.status, 200);
  });
});

describe("clients that hang up", () => {
  test("a client that disconnects while its command runs: no crash, and the command still finishes", async () => {
    const gate = join(dir, "hangup-gate");
    const done = join(dir, "hangup-done");
    const url = `${s.base}/hooks/slow-capture?gate=${encodeURIComponent(gate)}&done=${encodeURIComponent(done)}`;
    const aborted = send(url, { timeoutMs: 500 }).then(
      () => "answered",
      () => "hung up",
    );
    assert.equal(await aborted, "hung up");
    await writeFile(gate, "go");
    await eventually(() => existsSync(done), 20_000);
    await stillUp(s);
  });

  test("a client that disconnects in the middle of its body: no crash", async () => {
    const raw = rawExchange(
      s.port,
      'POST /hooks/good?token=yes&n=half-body HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":',
      300,
    );
    assert.equal(statusOf(await raw), 0);
    // A whole request sent afterwards runs its command: by then the cut one would have run too.
    assert.equal((await send(`${s.base}/hooks/good?token=yes&n=after-half-body`, { body: "{}" })).status, 200);
    await eventually(async () => (await ranLines()).includes("after-half-body"), 10_000);
    assert.ok(!(await ranLines()).includes("half-body"));
  });
});

describe("headers with odd bytes", { concurrency: true }, () => {
  const get = (headerLines: Buffer | string, path = "/hooks/utf8-header") =>
    Buffer.concat([Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n`), Buffer.from(headerLines), Buffer.from("\r\n")]);

  test("UTF-8 bytes in a header value reach rules and the command unchanged", async () => {
    const raw = await rawExchange(s.port, get(Buffer.concat([Buffer.from("X-Name: "), Buffer.from("café ✓", "utf8"), Buffer.from("\r\n")])));
    assert.equal(statusOf(raw), 200, raw);
    const body = Buffer.from(raw.slice(raw.indexOf("\r\n\r\n") + 4), "latin1");
    const json = body
      .toString("utf8")
      .replace(/^[0-9a-f]+\r\n/, "")
      .replace(/\r\n0\r\n\r\n$/, "");
    assert.deepEqual(parseDump(json).argv, ["café ✓"]);
  });

  test("Latin-1 bytes in a header value: a proper answer (rule does not hold)", async () => {
    const raw = await rawExchange(s.port, get(Buffer.from([...Buffer.from("X-Name: caf"), 0xe9, 0x0d, 0x0a])));
    assert.equal(statusOf(raw), 200, raw);
    assert.match(raw, /Hook rules were not satisfied\./);
  });

  test("control characters in a header value are refused with 400", async () => {
    const raw = await rawExchange(s.port, get(Buffer.from("X-Name: a\u0001b\r\n")));
    assert.equal(statusOf(raw), 400, raw);
  });

  test("a NUL byte in a header value is refused with 400", async () => {
    const raw = await rawExchange(s.port, get(Buffer.from("X-Name: a\u0000b\r\n")));
    assert.equal(statusOf(raw), 400, raw);
  });

  test("a space inside a header name is refused with 400", async () => {
    const raw = await rawExchange(s.port, get("Bad Name: x\r\n"));
    assert.equal(statusOf(raw), 400, raw);
  });

  test("a header line without a colon is refused with 400", async () => {
    const raw = await rawExchange(s.port, get("NoColonHere\r\n"));
    assert.equal(statusOf(raw), 400, raw);
  });

  test("a garbage request line is refused with 400", async () => {
    const raw = await rawExchange(s.port, "\u0001\u0002 nonsense \u00ff\r\n\r\n");
    assert.equal(statusOf(raw), 400, raw);
  });

  test("HTTP/1.1 without Host is refused with 400; HTTP/1.0 without Host is fine", async () => {
    assert.equal(statusOf(await rawExchange(s.port, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n")), 400);
    assert.equal(statusOf(await rawExchange(s.port, "GET / HTTP/1.0\r\n\r\n")), 200);
  });

  test("two different Content-Length headers are refused with 400, and the command does not run", async () => {
    const raw = await rawExchange(
      s.port,
      "POST /hooks/good?token=yes&n=double-length HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}abc",
    );
    assert.equal(statusOf(raw), 400, raw);
    assert.ok(!(await ranLines()).includes("double-length"));
  });

  test("a 64 KiB header gets a proper answer (200 or 431), never a dropped connection", async () => {
    const raw = await rawExchange(s.port, get(`X-Huge: ${"h".repeat(64 * 1024)}\r\n`, "/hooks/guarded?token=no"));
    assert.ok([200, 431].includes(statusOf(raw)), raw.slice(0, 200));
  });

  test("odd bytes in a signature header: a proper 500, not a crash", async () => {
    const raw = await rawExchange(
      s.port,
      Buffer.concat([
        Buffer.from(
          "POST /hooks/signed?n=odd-sig HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\nX-Sig: sha256=",
        ),
        Buffer.from([0xff, 0xfe, 0x80, 0xc3]),
        Buffer.from("\r\n\r\n{}"),
      ]),
    );
    assert.equal(statusOf(raw), 500, raw);
    assert.match(raw, /Error occurred while evaluating hook rules\./);
  });
});
