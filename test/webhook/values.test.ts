// Where request values come from — header, url/query, payload (dot paths, array
// indexes, literal dotted keys), request (method, remote-addr), string, raw-request-body,
// entire-payload, entire-headers, entire-query — and what a missing value becomes.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { removeDir, tempDir } from "../helpers.js";
import { fixture, parseDump, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const dump = fixture("dump.mjs");
let dir = "";
let s: Server;

const hook = (id: string, args: unknown[], extra: Record<string, unknown> = {}) => ({
  id,
  "execute-command": dump,
  "include-command-output-in-response": true,
  "pass-arguments-to-command": args,
  ...extra,
});

before(async () => {
  dir = await tempDir("webhook-values-");
  const hooks = await writeHooks(dir, [
    hook("header", [
      { source: "header", name: "x-custom-thing" },
      { source: "header", name: "X-CUSTOM-THING" },
      { source: "header", name: "user-agent" },
    ]),
    hook("query", [
      { source: "url", name: "a" },
      { source: "query", name: "b" },
      { source: "url", name: "encoded" },
    ]),
    hook("payload", [
      { source: "payload", name: "commits.0.commit.id" },
      { source: "payload", name: "commits.1.commit.id" },
      { source: "payload", name: "matrix.1.0" },
      { source: "payload", name: "obj" },
      { source: "payload", name: "list" },
    ]),
    hook("dotted", [{ source: "payload", name: "commits.0.commit.id" }]),
    hook("numbers", [
      { source: "payload", name: "big" },
      { source: "payload", name: "price" },
      { source: "payload", name: "small" },
    ]),
    hook("request", [
      { source: "request", name: "method" },
      { source: "request", name: "remote-addr" },
      { source: "request", name: "Method" },
    ]),
    hook("string", [{ source: "string", name: "a literal; $(not run) `nor this`" }]),
    hook("raw", [{ source: "raw-request-body" }]),
    hook("entire", [{ source: "entire-payload" }, { source: "entire-headers" }, { source: "entire-query" }]),
    hook("missing", [
      { source: "payload", name: "present" },
      { source: "payload", name: "absent.deeply" },
      { source: "header", name: "X-Absent" },
      { source: "url", name: "absent" },
      { source: "payload", name: "list.9" },
      { source: "string", name: "last" },
    ]),
  ]);
  s = await startServer(["-hooks", hooks, "-verbose"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

const argv = (text: string): string[] => parseDump(text).argv;

describe("request values", { concurrency: true }, () => {
  test("header: names are case-insensitive", async () => {
    const r = await send(`${s.base}/hooks/header`, { headers: { "x-CUSTOM-thing": "hv", "User-Agent": "tester/1.0" } });
    assert.equal(r.status, 200);
    assert.deepEqual(argv(r.text), ["hv", "hv", "tester/1.0"]);
  });

  test("header: of a header sent twice, the first value", async () => {
    const r = await send(`${s.base}/hooks/header`, { headers: { "X-Custom-Thing": ["first", "second"], "User-Agent": "ua" } });
    assert.deepEqual(argv(r.text), ["first", "first", "ua"]);
  });

  test("url: a parameter without a value is an empty string", async () => {
    const r = await send(`${s.base}/hooks/query?a&b=&encoded=x`);
    assert.deepEqual(argv(r.text), ["", "", "x"]);
  });

  test("url and query: the first of repeated parameters, percent-decoded", async () => {
    const r = await send(`${s.base}/hooks/query?a=1&a=2&b=x+y&encoded=${encodeURIComponent("sp ace&é")}`);
    assert.deepEqual(argv(r.text), ["1", "x y", "sp ace&é"]);
  });

  test("payload: dot paths with array indexes; objects and arrays are passed as JSON", async () => {
    const r = await send(`${s.base}/hooks/payload`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        commits: [{ commit: { id: 1 } }, { commit: { id: "two" } }],
        matrix: [
          ["a", "b"],
          ["c", "d"],
        ],
        obj: { k: "v" },
        list: [1, "x"],
      }),
    });
    const [first, second, cell, obj, list] = argv(r.text);
    assert.equal(first, "1");
    assert.equal(second, "two");
    assert.equal(cell, "c");
    assert.deepEqual(JSON.parse(obj!), { k: "v" });
    assert.deepEqual(JSON.parse(list!), [1, "x"]);
  });

  test("payload: a literal key containing dots wins over the dot path", async () => {
    const r = await send(`${s.base}/hooks/dotted`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ "commits.0.commit.id": "literal", commits: [{ commit: { id: "nested" } }] }),
    });
    assert.deepEqual(argv(r.text), ["literal"]);
  });

  test("payload: numbers keep their JSON text (large integers and trailing zeros are not rounded)", async () => {
    const r = await send(`${s.base}/hooks/numbers`, {
      headers: { "Content-Type": "application/json" },
      body: '{"big": 12345678901234567890, "price": 1.50, "small": 7}',
    });
    assert.deepEqual(argv(r.text), ["12345678901234567890", "1.50", "7"]);
  });

  test("request: method and remote-addr (ip:port)", async () => {
    const post = await send(`${s.base}/hooks/request`, { method: "POST" });
    const [method, addr, method2] = argv(post.text);
    assert.equal(method, "POST");
    assert.match(addr!, /^127\.0\.0\.1:\d+$/);
    assert.equal(method2, "POST", "the request key is case-insensitive");
    const get = await send(`${s.base}/hooks/request`, { method: "GET" });
    assert.equal(argv(get.text)[0], "GET");
  });

  test("string: the name itself, never run through a shell", async () => {
    const r = await send(`${s.base}/hooks/string`);
    assert.deepEqual(argv(r.text), ["a literal; $(not run) `nor this`"]);
  });

  test("raw-request-body: the body byte for byte", async () => {
    const body = 'line one\n  "quoted" \\ back\r\nλ end';
    const r = await send(`${s.base}/hooks/raw`, { headers: { "Content-Type": "text/plain" }, body });
    assert.deepEqual(argv(r.text), [body]);
  });

  test("raw-request-body is kept for a JSON body too", async () => {
    const body = '{ "spaced" :  true }';
    const r = await send(`${s.base}/hooks/raw`, { headers: { "Content-Type": "application/json" }, body });
    assert.deepEqual(argv(r.text), [body]);
  });

  test("entire-payload, entire-headers and entire-query as JSON", async () => {
    const r = await send(`${s.base}/hooks/entire?q=1&q=2&other=x`, {
      headers: { "Content-Type": "application/json", "x-lower-case": "lc" },
      body: JSON.stringify({ a: [1, { b: "c" }] }),
    });
    const [payload, headers, query] = argv(r.text).map((a) => JSON.parse(a) as Record<string, unknown>);
    assert.deepEqual(payload, { a: [1, { b: "c" }] });
    assert.equal(headers!["X-Lower-Case"], "lc", "header names in canonical form");
    assert.equal(headers!["Content-Type"], "application/json");
    assert.deepEqual(query, { q: "1", other: "x" });
  });

  test("entire-payload byte for byte as the reference prints it: keys sorted, numbers as sent, <>& escaped", async () => {
    const r = await send(`${s.base}/hooks/entire?b=2&a=1`, {
      headers: { "Content-Type": "application/json" },
      body: '{"b":"<x>&","a":[1.50,{"d":1,"c":12345678901234567890}]}',
    });
    const [payload, , query] = argv(r.text);
    assert.equal(payload, '{"a":[1.50,{"c":12345678901234567890,"d":1}],"b":"\\u003cx\\u003e\\u0026"}');
    assert.equal(query, '{"a":"1","b":"2"}');
  });

  test("entire-payload of an empty body is null", async () => {
    const r = await send(`${s.base}/hooks/entire`);
    assert.equal(argv(r.text)[0], "null");
  });

  test("a missing value becomes an empty argument, keeps its position, and is logged", async () => {
    const r = await send(`${s.base}/hooks/missing`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ present: "here", list: [1] }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(argv(r.text), ["here", "", "", "", "", "last"]);
    await s.proc.waitFor(/error extracting command arguments/);
  });
});
