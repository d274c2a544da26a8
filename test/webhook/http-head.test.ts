// The HTTP transport's pure parts, without a socket: the request head parser (head.ts) and the
// answer encoder (encode.ts). What goes over TCP is tested in transport.test.ts and fuzz-http.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HttpResponse } from "../../src/webhook/http/contract.js";
import { encodeResponse, encodeStreamHead, goRefusal, plain } from "../../src/webhook/http/encode.js";
import { afterHead, chunkSize, headEnd, type ParsedHead, parseHead, Refused, resumeAt, target } from "../../src/webhook/http/head.js";
import { fuzzCases, fuzzSeed, type Random, seeded } from "../fuzz/random.js";

const DATE = "Date: Sat, 28 Nov 2026 10:00:00 GMT\r\n";

function parsed(text: string, maxHeaderCount = 200): ParsedHead {
  const h = parseHead(text, maxHeaderCount);
  assert.ok(!(h instanceof Refused), `refused: ${h instanceof Refused ? `${h.status} ${h.detail}` : ""}`);
  return h;
}

function refused(text: string, maxHeaderCount = 200): [number, string] {
  const h = parseHead(text, maxHeaderCount);
  assert.ok(h instanceof Refused, "accepted");
  return [h.status, h.detail];
}

test("headEnd finds the empty line after CRLF, bare LF and mixed line ends; afterHead is where the body starts", () => {
  for (const [raw, end, next] of [
    ["GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY", 23, 27],
    ["GET / HTTP/1.1\nHost: a\n\nBODY", 22, 24],
    ["GET / HTTP/1.1\r\nHost: a\n\r\nBODY", 23, 26],
    ["GET / HTTP/1.1\r\nHost: a\r\n\nBODY", 23, 26],
  ] as const) {
    const buf = Buffer.from(raw, "latin1");
    assert.equal(headEnd(buf, 0), end, JSON.stringify(raw));
    assert.equal(afterHead(buf, end), next, JSON.stringify(raw));
    assert.equal(buf.toString("latin1", next), "BODY");
  }
  assert.equal(headEnd(Buffer.from("GET / HTTP/1.1\r\nHost: a\r\n"), 0), -1);
  assert.equal(headEnd(Buffer.from("GET / HTTP/1.1\r\nHost: a\r\n\r"), 0), -1);
});

test("parseHead reads the request line, the headers as sent, framing and keep-alive", () => {
  const h = parsed(
    "POST /hooks/x?a=1 HTTP/1.1\r\nHost: example\r\nX-Folded: one\r\n \t two \r\nContent-Length: 5\r\nContent-Length: 5\r\nExpect: 100-Continue",
  );
  assert.deepEqual(h, {
    method: "POST",
    target: "/hooks/x?a=1",
    http10: false,
    rawHeaders: ["Host", "example", "X-Folded", "one two", "Content-Length", "5", "Content-Length", "5", "Expect", "100-Continue"],
    contentLength: 5,
    chunked: false,
    keepAlive: true,
    expectContinue: true,
  });
  assert.equal(parsed("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close").keepAlive, false);
  const old = parsed("GET / HTTP/1.0");
  assert.equal(old.http10, true);
  assert.equal(old.keepAlive, false);
  assert.equal(parsed("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nExpect: 100-continue").keepAlive, true);
  assert.equal(parsed("GET / HTTP/1.0\r\nExpect: 100-continue").expectContinue, false);
  assert.equal(parsed("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked").chunked, true);
  // A value keeps a 0xA0 byte at its edge: only spaces and tabs are trimmed.
  assert.deepEqual(parsed("GET / HTTP/1.1\r\nHost: a\r\nX: \xa0v\xa0 ").rawHeaders, ["Host", "a", "X", "\xa0v\xa0"]);
});

test("parseHead refuses what Go refuses, and what could smuggle a request past a proxy", () => {
  const cases: [string, number, string][] = [
    ["GET /", 400, "malformed HTTP request"],
    [" / HTTP/1.1", 400, "malformed HTTP request"],
    ["G@T / HTTP/1.1\r\nHost: a", 400, "malformed HTTP request"],
    ["GET /a\x01b HTTP/1.1\r\nHost: a", 400, "malformed HTTP request"],
    ["GET / HTTP/2.0\r\nHost: a", 505, "unsupported protocol version"],
    ["GET / HTTP/1\r\nHost: a", 400, "malformed HTTP version"],
    ["GET / HTTP/1.1", 400, "missing required Host header"],
    ["GET / HTTP/1.1\r\nHost: a\r\nhost: b", 400, "too many Host headers"],
    ["GET / HTTP/1.1\r\nHost: a\r\nno colon", 400, "malformed MIME header line"],
    ["GET / HTTP/1.1\r\nHost: a\r\nBad Name: v", 400, "invalid header name"],
    ["GET / HTTP/1.1\r\nHost: a\r\nX: a\rb", 400, "invalid header value"],
    ["GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f", 400, "invalid header value"],
    ["POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2", 400, "invalid Content-Length"],
    ["POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1", 400, "invalid Content-Length"],
    ["POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456", 400, "invalid Content-Length"],
    ["POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked", 400, "too many transfer encodings"],
    ["POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3", 400, "Transfer-Encoding and Content-Length together"],
    ["POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip", 501, "unsupported transfer encoding"],
  ];
  for (const [text, status, detail] of cases) assert.deepEqual(refused(text), [status, detail], JSON.stringify(text));
  assert.deepEqual(refused("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2", 2), [431, "too many header fields"]);
  assert.equal((parseHead("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3", 200) as Refused).http10, true);
});

test("target keeps the path and query of the absolute form", () => {
  assert.equal(target("/a?b"), "/a?b");
  assert.equal(target("http://example.com/hooks/x?y=1"), "/hooks/x?y=1");
  assert.equal(target("https://example.com"), "/");
  assert.equal(target("*"), "*");
});

test("chunkSize reads hex sizes, ignores extensions, refuses the rest", () => {
  assert.equal(chunkSize("1a"), 26);
  assert.equal(chunkSize("0;name=value"), 0);
  assert.equal(chunkSize("FF  "), 255);
  for (const bad of ["", "g", "-1", " 1", "1234567890abcdef", "1\r"]) assert.equal(chunkSize(bad), undefined, JSON.stringify(bad));
});

const KEEP = { http10: false, isHead: false, keepAlive: true };

test("encodeResponse writes Go's status line, the headers, the framing and the body in one buffer", () => {
  const res: HttpResponse = {
    status: 200,
    headers: [
      ["Content-Type", "text/plain"],
      ["X-Split", "a\r\nb"],
      ["Bad Name", "dropped"],
      ["Content-Length", "999"],
      ["Connection", "keep-alive"],
    ],
    body: "héllo",
  };
  assert.equal(
    encodeResponse(res, KEEP, DATE).toString("utf8"),
    `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Split: a  b\r\n${DATE}Content-Length: 6\r\n\r\nhéllo`,
  );
  assert.equal(
    encodeResponse({ ...res, headers: [] }, { http10: true, isHead: false, keepAlive: true }, DATE).toString(),
    `HTTP/1.0 200 OK\r\n${DATE}Content-Length: 6\r\nConnection: keep-alive\r\n\r\nhéllo`,
  );
  assert.equal(
    encodeResponse({ ...res, headers: [] }, { ...KEEP, keepAlive: false }, DATE).toString(),
    `HTTP/1.1 200 OK\r\n${DATE}Content-Length: 6\r\nConnection: close\r\n\r\nhéllo`,
  );
  // HEAD: the length of a body there is, none for an empty one; never the body.
  assert.equal(encodeResponse({ ...res, headers: [] }, { ...KEEP, isHead: true }, DATE).toString(), `HTTP/1.1 200 OK\r\n${DATE}Content-Length: 6\r\n\r\n`);
  assert.equal(encodeResponse({ status: 200, headers: [], body: "" }, { ...KEEP, isHead: true }, DATE).toString(), `HTTP/1.1 200 OK\r\n${DATE}\r\n`);
  // 204 carries neither body nor Content-Type; an unknown status gets Go's text.
  assert.equal(
    encodeResponse({ status: 204, headers: [["Content-Type", "x/y"]], body: "no" }, KEEP, DATE).toString(),
    `HTTP/1.1 204 No Content\r\n${DATE}\r\n`,
  );
  assert.equal(
    encodeResponse({ status: 299, headers: [], body: Buffer.from([1]) }, KEEP, DATE).toString("latin1"),
    `HTTP/1.1 299 status code 299\r\n${DATE}Content-Length: 1\r\n\r\n\x01`,
  );
});

test("a 1xx answer goes first, with its headers sorted and no framing", () => {
  const res: HttpResponse = {
    status: 200,
    headers: [["B", "2"]],
    body: "x",
    informational: {
      status: 103,
      headers: [
        ["Link", "</a>"],
        ["Content-Type", "t"],
        ["B", "2"],
      ],
    },
  };
  assert.equal(
    encodeResponse(res, KEEP, DATE).toString(),
    `HTTP/1.1 103 Early Hints\r\nB: 2\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nB: 2\r\n${DATE}Content-Length: 1\r\n\r\nx`,
  );
});

test("encodeStreamHead: chunked on HTTP/1.1, raw until close on HTTP/1.0, no framing for HEAD", () => {
  const res: HttpResponse = { status: 200, headers: [], body: "" };
  assert.equal(encodeStreamHead(res, KEEP, DATE), `HTTP/1.1 200 OK\r\n${DATE}Transfer-Encoding: chunked\r\n\r\n`);
  assert.equal(encodeStreamHead(res, { http10: true, isHead: false, keepAlive: false }, DATE), `HTTP/1.0 200 OK\r\n${DATE}\r\n`);
  assert.equal(encodeStreamHead(res, { ...KEEP, isHead: true }, DATE), `HTTP/1.1 200 OK\r\n${DATE}\r\n`);
});

test("goRefusal writes Go's exact bytes; refusals of ours are plain answers", () => {
  const headers = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n";
  assert.equal(
    goRefusal(400, "missing required Host header"),
    `HTTP/1.1 400 Bad Request: missing required Host header${headers}400 Bad Request: missing required Host header`,
  );
  assert.equal(goRefusal(400, "malformed HTTP request"), `HTTP/1.1 400 Bad Request${headers}400 Bad Request`);
  assert.equal(goRefusal(431, "too many header fields"), `HTTP/1.1 431 Request Header Fields Too Large${headers}431 Request Header Fields Too Large`);
  assert.equal(goRefusal(501, "unsupported transfer encoding"), `HTTP/1.1 501 Not Implemented${headers}Unsupported transfer encoding`);
  assert.equal(goRefusal(400, "Transfer-Encoding and Content-Length together"), undefined);
  assert.deepEqual(plain(408), { status: 408, headers: [["Content-Type", "text/plain; charset=utf-8"]], body: "408 Request Timeout" });
});

// A head from a small grammar, then mutated: whole lines swapped, bytes flipped, separators changed.
function randomHead(r: Random): string {
  const methods = ["GET", "POST", "HEAD", "OPTIONS", "PUT", "G\x00T", ""];
  const targets = ["/", "/hooks/x?a=1", "*", "http://h/p", "/a b", "/%zz", ""];
  const versions = ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1", "http/1.1"];
  const names = ["Host", "host", "Content-Length", "Transfer-Encoding", "Connection", "Expect", "X-A", "Bad Name", "", "X\x7f"];
  const values = ["a", "5", "chunked", "gzip", "close", "keep-alive", "100-continue", " spaced ", "a\rb", "\xa0", "", "-1"];
  const eol = (): string => r.pick(["\r\n", "\n", "\r\n", "\r"]);
  let text = `${r.pick(methods)} ${r.pick(targets)} ${r.pick(versions)}`;
  const n = r.int(8);
  for (let i = 0; i < n; i++) {
    text += eol();
    text += r.int(10) === 0 ? ` ${r.pick(values)}` : `${r.pick(names)}:${r.pick(values)}`;
  }
  if (r.int(4) === 0) {
    const bytes = Buffer.from(text, "latin1");
    for (let k = r.int(3) + 1; k > 0; k--) bytes[r.int(bytes.length)] = r.int(256);
    text = bytes.toString("latin1");
  }
  return text;
}

test("fuzz: parseHead never throws; what it accepts is clean, and what it refuses is a status Go would answer", () => {
  const seed = fuzzSeed(0x5eed31);
  const r = seeded(seed);
  const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  for (let c = fuzzCases(2000); c > 0; c--) {
    const text = randomHead(r);
    const where = `seed ${seed}, head ${JSON.stringify(text)}`;
    const h = parseHead(text, 5);
    if (h instanceof Refused) {
      assert.ok([400, 431, 501, 505].includes(h.status), where);
      continue;
    }
    assert.match(h.method, token, where);
    assert.doesNotMatch(h.target, /[\x00-\x20\x7f]/, where);
    assert.equal(h.rawHeaders.length % 2, 0, where);
    for (let i = 0; i < h.rawHeaders.length; i += 2) {
      assert.match(h.rawHeaders[i]!, token, where);
      assert.doesNotMatch(h.rawHeaders[i + 1]!, /[\x00-\x08\x0a-\x1f\x7f]/, where);
    }
    assert.ok(!(h.chunked && h.contentLength !== undefined), where);
    if (!h.http10) assert.equal(h.rawHeaders.filter((_, i) => i % 2 === 0 && h.rawHeaders[i]!.toLowerCase() === "host").length, 1, where);
  }
});

test("fuzz: a head arriving in pieces ends where the whole one does", () => {
  const seed = fuzzSeed(0x5eed32);
  const r = seeded(seed);
  for (let c = fuzzCases(500); c > 0; c--) {
    const whole = Buffer.from(`${randomHead(r)}${r.pick(["\r\n\r\n", "\n\n", "\r\n\n", "\n\r\n", "\r\n"])}${r.pick(["", "body", "\r\n\r\n"])}`, "latin1");
    const expected = headEnd(whole, 0);
    let scanned = 0;
    let found = -1;
    for (let len = 0; len < whole.length && found === -1; ) {
      len = Math.min(whole.length, len + 1 + r.int(6));
      const piece = whole.subarray(0, len);
      found = headEnd(piece, scanned);
      if (found === -1) scanned = resumeAt(piece);
    }
    assert.equal(found, expected, `seed ${seed}, bytes ${JSON.stringify(whole.toString("latin1"))}`);
  }
});

test("fuzz: an encoded answer is one status line, header lines without CR or LF, one empty line", () => {
  const seed = fuzzSeed(0x5eed33);
  const r = seeded(seed);
  for (let c = fuzzCases(1000); c > 0; c--) {
    const headers: [string, string][] = [];
    for (let i = r.int(6); i > 0; i--) headers.push([r.bytes(r.int(6)).toString("latin1"), r.bytes(r.int(12)).toString("latin1")]);
    const status = r.pick([100, 103, 200, 204, 304, 404, 429, 599]);
    const x = { http10: r.int(2) === 0, isHead: r.int(2) === 0, keepAlive: r.int(2) === 0 };
    const body = r.bytes(r.int(20));
    const out = encodeResponse({ status, headers, body }, x, DATE).toString("latin1");
    const where = `seed ${seed}, answer ${JSON.stringify(out)}`;
    const end = out.indexOf("\r\n\r\n");
    assert.ok(end > 0, where);
    const lines = out.slice(0, end).split("\r\n");
    assert.match(lines[0]!, /^HTTP\/1\.[01] \d{3} /, where);
    for (const line of lines.slice(1)) assert.match(line, /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+: [^\r\n]*$/, where);
    const rest = out.slice(end + 4);
    const bodiless = x.isHead || status < 200 || status === 204 || status === 304;
    assert.equal(rest, bodiless ? "" : body.toString("latin1"), where);
  }
});
