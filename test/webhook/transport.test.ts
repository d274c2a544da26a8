// The HTTP/1.1 transport under bad input, over raw TCP to a running bin/webhook: request
// smuggling attempts (both framings, odd Transfer-Encodings, bare LF in chunked framing, a request
// hidden in a body), pipelining, keep-alive and HTTP/1.0, HEAD, 100-continue, bare-LF heads (Go
// accepts them), oversized heads, and clients that stall (slowloris) or idle.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, tempDir } from "../helpers.js";
import { fixture, rawExchange, send, startServer, statusOf, writeHooks, type Server } from "./fixtures/harness.js";

let dir = "";
let ranFile = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-transport-");
  ranFile = join(dir, "ran.txt");
  const hooks = await writeHooks(dir, [
    {
      id: "run",
      "execute-command": fixture("append.sh"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "url", name: "n" },
        { source: "string", name: ranFile },
      ],
    },
    {
      id: "body",
      "execute-command": "/bin/sh",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: 'printf "%s" "$1"' },
        { source: "string", name: "sh" },
        { source: "raw-request-body" },
      ],
    },
    {
      id: "framing",
      "execute-command": "/bin/true",
      "response-message": "hi",
      "response-headers": [
        { name: "Content-Length", value: "0" },
        { name: "Transfer-Encoding", value: "chunked" },
        { name: "X-Kept", value: "1" },
      ],
    },
    {
      id: "slow",
      "execute-command": "/bin/sh",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: "sleep 0.3; echo slow" },
      ],
    },
  ]);
  // Short transport timeouts so the stall tests finish quickly.
  s = await startServer(["-hooks", hooks, "-max-body", "4096"], {
    env: { ...process.env, WEBHOOK_HEADERS_TIMEOUT_MS: "1500", WEBHOOK_IDLE_TIMEOUT_MS: "2500" },
  });
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

const ran = async (): Promise<string[]> => (await readFile(ranFile, "utf8").catch(() => "")).split("\n").filter(Boolean);

/** Every status line in a raw exchange, in order. */
const statuses = (raw: string): number[] => [...raw.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));

describe("request smuggling is refused", { concurrency: true }, () => {
  test("Transfer-Encoding together with Content-Length: 400, nothing runs, the connection closes", async () => {
    const raw = await rawExchange(
      s.port,
      "POST /hooks/run?n=te-cl HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /hooks/run?n=te-cl-smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert.deepEqual(statuses(raw), [400], raw);
    assert.match(raw, /Connection: close/);
    const lines = await ran();
    assert.ok(!lines.includes("te-cl") && !lines.includes("te-cl-smuggled"));
  });

  test("a Transfer-Encoding other than chunked: 501; two Transfer-Encoding headers: 400", async () => {
    for (const te of ["chunked, identity", "gzip", "xchunked", "chunked\t,"]) {
      const raw = await rawExchange(s.port, `POST /hooks/run?n=te-odd HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n0\r\n\r\n`);
      assert.equal(statusOf(raw), 501, `${te}: ${raw}`);
    }
    const two = await rawExchange(
      s.port,
      "POST /hooks/run?n=te-two HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    assert.equal(statusOf(two), 400, two);
    assert.ok(!(await ran()).includes("te-odd") && !(await ran()).includes("te-two"));
  });

  test("chunked framing with bare LF line ends: 400, nothing runs", async () => {
    const raw = await rawExchange(s.port, "POST /hooks/run?n=bare-lf-chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\n{}\n0\n\n");
    assert.equal(statusOf(raw), 400, raw);
    assert.ok(!(await ran()).includes("bare-lf-chunk"));
  });

  test("malformed chunk sizes: 400", async () => {
    for (const size of ["0x2", "-2", " 2", "2 2", "fffffffffffffffff", ""]) {
      const raw = await rawExchange(s.port, `POST /hooks/run?n=bad-size HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\n{}\r\n0\r\n\r\n`);
      assert.equal(statusOf(raw), 400, `${JSON.stringify(size)}: ${raw}`);
    }
  });

  test("Content-Length that is not a plain number: 400", async () => {
    for (const cl of ["+2", "-2", "2.0", "0x2", "2 2", "2, 2", ""]) {
      const raw = await rawExchange(s.port, `POST /hooks/run?n=bad-cl HTTP/1.1\r\nHost: x\r\nContent-Length: ${cl}\r\n\r\n{}`);
      assert.equal(statusOf(raw), 400, `${JSON.stringify(cl)}: ${raw}`);
    }
    assert.ok(!(await ran()).includes("bad-cl"));
  });

  test("the same Content-Length twice is accepted", async () => {
    const raw = await rawExchange(s.port, "POST /hooks/body HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok");
    assert.equal(statusOf(raw), 200, raw);
  });

  test("a request hidden in a body stays body: one answer, which echoes it", async () => {
    const hidden = "GET /hooks/run?n=hidden HTTP/1.1\r\nHost: x\r\n\r\n";
    const raw = await rawExchange(s.port, `POST /hooks/body HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}`);
    assert.deepEqual(statuses(raw), [200], raw);
    assert.ok(raw.endsWith(hidden), raw);
    assert.ok(!(await ran()).includes("hidden"));
  });

  test("a space before the colon, a bare CR: 400", async () => {
    for (const h of ["X-A : 1", "X-A: 1\r2", "X-\u00e9: 1"]) {
      const raw = await rawExchange(s.port, Buffer.from(`GET / HTTP/1.1\r\nHost: x\r\n${h}\r\n\r\n`, "latin1"));
      assert.equal(statusOf(raw), 400, `${JSON.stringify(h)}: ${raw}`);
    }
  });

  test("two Host headers: 400; an unknown HTTP version: 505", async () => {
    assert.equal(statusOf(await rawExchange(s.port, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")), 400);
    assert.equal(statusOf(await rawExchange(s.port, "GET / HTTP/2.0\r\nHost: a\r\n\r\n")), 505);
    assert.equal(statusOf(await rawExchange(s.port, "GET / HTTQ/1.1\r\nHost: a\r\n\r\n")), 400);
  });
});

describe("a request that cannot be read gets Go's exact bytes (checked against adnanh/webhook)", { concurrency: true }, () => {
  const ERROR_HEADERS = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n";
  const cases: [string, string][] = [
    ["GET / HTTP/1.1\r\n\r\n", `HTTP/1.1 400 Bad Request: missing required Host header${ERROR_HEADERS}400 Bad Request: missing required Host header`],
    ["GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", `HTTP/1.1 400 Bad Request: invalid header name${ERROR_HEADERS}400 Bad Request: invalid header name`],
    [
      "GET / HTTP/2.0\r\nHost: x\r\n\r\n",
      `HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version${ERROR_HEADERS}505 HTTP Version Not Supported: unsupported protocol version`,
    ],
    ["POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`],
    ["garbage\r\n\r\n", `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`],
    ["GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", `HTTP/1.1 400 Bad Request${ERROR_HEADERS}400 Bad Request`],
    ["POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", `HTTP/1.1 501 Not Implemented${ERROR_HEADERS}Unsupported transfer encoding`],
  ];
  for (const [request, answer] of cases) {
    test(JSON.stringify(request), async () => {
      assert.equal(await rawExchange(s.port, request), answer);
    });
  }
});

describe("framing that must work", { concurrency: true }, () => {
  test("a head with bare LF line ends is accepted, as Go does", async () => {
    const raw = await rawExchange(s.port, "POST /hooks/body HTTP/1.1\nHost: x\nConnection: close\nContent-Length: 5\n\nhello");
    assert.equal(statusOf(raw), 200, raw);
    assert.ok(raw.endsWith("hello"), raw);
  });

  test("HEAD: the length of what GET would send, none where the answer is empty (as Go: it cannot know)", async () => {
    const root = await rawExchange(s.port, "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.match(root, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(root, /\r\nContent-Length: 2\r\n/);
    assert.ok(root.endsWith("\r\n\r\n"), "no body");
    const empty = await rawExchange(s.port, "HEAD /hooks/run HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.match(empty, /^HTTP\/1\.1 200 OK\r\n/);
    assert.doesNotMatch(empty, /Content-Length/i, empty);
  });

  test("pipelined requests, one of them waiting for a command, are answered in order", async () => {
    const raw = await rawExchange(
      s.port,
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n" +
        "POST /hooks/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
        "POST /hooks/body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n" +
        "GET /hooks/missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert.deepEqual(statuses(raw), [200, 200, 200, 404], raw);
    const bodies = raw.split(/HTTP\/1\.1 \d{3} [^\r]*\r\n(?:[^\r]+\r\n)*\r\n/).slice(1);
    assert.deepEqual(bodies, ["OK", "slow\n", "abc", "Hook not found."]);
  });

  test("framing headers from a hooks file cannot desynchronise the connection", async () => {
    const raw = await rawExchange(s.port, "GET /hooks/framing HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.deepEqual(statuses(raw), [200, 200], raw);
    const first = raw.slice(0, raw.indexOf("HTTP/1.1", 1));
    assert.match(first, /X-Kept: 1\r\n/);
    assert.doesNotMatch(first, /Transfer-Encoding/i);
    assert.equal(first.match(/Content-Length/g)?.length, 1, first);
    assert.ok(first.endsWith("\r\n\r\nhi"), first);
  });

  test("a malformed path escape: 400 and the connection closes", async () => {
    const raw = await rawExchange(s.port, "GET /hooks/%zz HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.deepEqual(statuses(raw), [400], raw);
  });

  test("a pipelining flood from a client that reads late: every request is answered, in order", async () => {
    const n = 5000;
    const sock = connect(s.port, "127.0.0.1");
    await new Promise((r) => sock.once("connect", r));
    sock.pause(); // read nothing until everything is sent
    const reqs = Array.from({ length: n }, (_, i) => `GET /hooks/missing-${i} HTTP/1.1\r\nHost: x\r\n\r\n`).join("");
    await new Promise<void>((r) => sock.write(reqs + "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", () => r()));
    let got = "";
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    sock.resume();
    await new Promise((r) => sock.once("close", r));
    const st = statuses(got);
    assert.equal(st.length, n + 1);
    assert.ok(st.slice(0, n).every((x) => x === 404));
    assert.equal(st[n], 200);
  });

  test("keep-alive: HTTP/1.1 keeps the connection, HTTP/1.0 closes it unless asked", async () => {
    const raw11 = await rawExchange(s.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 800);
    assert.deepEqual(statuses(raw11), [200, 200], raw11);
    assert.doesNotMatch(raw11, /Connection: close/);
    const raw10 = await rawExchange(s.port, "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n");
    assert.deepEqual(statuses(raw10), [200], raw10);
    assert.match(raw10, /^HTTP\/1\.0 200 OK\r\n/);
    const kept = await rawExchange(s.port, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n");
    assert.deepEqual(statuses(kept), [200, 200], kept);
    assert.match(kept, /Connection: keep-alive/);
  });

  test("HEAD: the headers, Content-Length included, and no body", async () => {
    const raw = await rawExchange(s.port, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.deepEqual(statuses(raw), [200, 200], raw);
    const [first] = raw.split("HTTP/1.1 200 OK").slice(1);
    assert.match(first!, /Content-Length: 2\r\n/);
    assert.ok(first!.endsWith("\r\n\r\n"), JSON.stringify(first));
  });

  test("Expect: 100-continue gets 100 Continue, then the answer; too large gets 413 without it", async () => {
    const sock = connect(s.port, "127.0.0.1");
    let got = "";
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    await new Promise((r) => sock.once("connect", r));
    sock.write("POST /hooks/body HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    for (let i = 0; i < 100 && !got.includes("100 Continue"); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(got, "HTTP/1.1 100 Continue\r\n\r\n");
    sock.write("ping");
    await new Promise((r) => sock.once("close", r));
    assert.deepEqual(statuses(got), [100, 200], got);
    assert.ok(got.endsWith("ping"));

    const big = await rawExchange(s.port, "POST /hooks/body HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n", 3000);
    assert.deepEqual(statuses(big), [413], big);
    assert.match(big, /Request body too large\./);
  });

  test("a chunked body over -max-body: 413 after the body is read, no reset", async () => {
    const chunk = "x".repeat(1000);
    const body = `3e8\r\n${chunk}\r\n`.repeat(6) + "0\r\n\r\n";
    const raw = await rawExchange(s.port, `POST /hooks/run?n=chunked-big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${body}`);
    assert.deepEqual(statuses(raw), [413], raw);
    assert.ok(!(await ran()).includes("chunked-big"));
  });
});

describe("oversized heads", { concurrency: true }, () => {
  test("a 2 MiB header: 431 and the connection closes", async () => {
    const raw = await rawExchange(s.port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"b".repeat(2 * 1024 * 1024)}\r\n\r\n`);
    assert.equal(statusOf(raw), 431, raw.slice(0, 200));
  });

  test("a head that never ends, sent in pieces past 1 MiB: 431", async () => {
    const sock = connect(s.port, "127.0.0.1");
    let got = "";
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    sock.on("error", () => undefined);
    await new Promise((r) => sock.once("connect", r));
    sock.write("GET / HTTP/1.1\r\nHost: x\r\n");
    const line = `X-Pad: ${"p".repeat(8000)}\r\n`;
    for (let i = 0; i < 140 && !sock.destroyed && got === ""; i++) {
      sock.write(line);
      await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => (sock.closed ? r(null) : sock.once("close", r)));
    assert.equal(statusOf(got), 431, got.slice(0, 200));
  });

  test("more than 200 header fields: 431", async () => {
    const raw = await rawExchange(s.port, `GET / HTTP/1.1\r\nHost: x\r\n${"X-H: 1\r\n".repeat(250)}\r\n`);
    assert.equal(statusOf(raw), 431, raw.slice(0, 200));
  });
});

describe("clients that stall", { concurrency: true }, () => {
  test("slowloris: a head trickled in too slowly gets 408 and is closed; the server serves others meanwhile", async () => {
    const sock = connect(s.port, "127.0.0.1");
    let got = "";
    let closed = false;
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    sock.on("error", () => undefined);
    sock.on("close", () => (closed = true));
    await new Promise((r) => sock.once("connect", r));
    sock.write("GET / HTTP/1.1\r\n");
    // One header byte every 300 ms keeps it from being idle; the head timeout (1.5 s) ends it.
    for (let i = 0; i < 40 && !closed; i++) {
      sock.write("X");
      const r = await send(`${s.base}/`, { method: "GET" });
      assert.equal(r.status, 200);
      await new Promise((res) => setTimeout(res, 300));
    }
    assert.ok(closed, "the stalled connection is still open after 12 s");
    assert.equal(statusOf(got), 408, got);
  });

  test("an idle keep-alive connection is closed after the idle timeout", async () => {
    const sock = connect(s.port, "127.0.0.1");
    let got = "";
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    await new Promise((r) => sock.once("connect", r));
    sock.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    const started = Date.now();
    await new Promise((r) => sock.once("close", r));
    assert.equal(statusOf(got), 200);
    assert.ok(Date.now() - started < 15_000);
  });

  test("a body that stops arriving: the connection is closed, nothing runs", async () => {
    const raw = await rawExchange(s.port, "POST /hooks/run?n=stalled-body HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", 15_000);
    assert.equal(statusOf(raw), 0, raw);
    assert.ok(!(await ran()).includes("stalled-body"));
  });
});

describe("afterwards", () => {
  test("the server is still up", async () => {
    const r = await send(`${s.base}/hooks/run?n=after`, { method: "POST" });
    assert.equal(r.status, 200);
    assert.ok((await ran()).includes("after"));
  });
});
