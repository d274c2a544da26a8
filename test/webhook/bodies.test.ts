// Request bodies — JSON (top-level arrays too), url-encoded forms, multipart
// (values, JSON file parts, -max-multipart-mem), XML, incoming-payload-content-type,
// parse-parameters-as-json, and unsupported content types.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { removeDir, tempDir } from "../helpers.js";
import { fixture, parseEcho, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { multipart } from "../fixtures/http.js";

const echo = fixture("echo.sh");
let dir = "";
let s: Server;

const payloadArgs = (...names: string[]) => names.map((name) => ({ source: "payload", name }));
const captured = (id: string, extra: Record<string, unknown>) => ({
  id,
  "execute-command": echo,
  "include-command-output-in-response": true,
  ...extra,
});

before(async () => {
  dir = await tempDir("webhook-bodies-");
  const hooks = await writeHooks(dir, [
    captured("json", { "pass-arguments-to-command": payloadArgs("a.b", "list.1", "flag", "n") }),
    captured("json-array", {
      "pass-arguments-to-command": [...payloadArgs("root.0.name", "root.1.name"), { source: "entire-payload" }],
    }),
    captured("form", { "pass-arguments-to-command": payloadArgs("name", "multi", "spaced", "symbols") }),
    captured("multipart", {
      "pass-arguments-to-command": payloadArgs("field", "meta.kind", "meta.count", "forced.x", "thumb", "plain-file"),
      "parse-parameters-as-json": [{ source: "payload", name: "forced" }],
    }),
    captured("xml", {
      "pass-arguments-to-command": payloadArgs(
        "app.users.user.0.-name",
        "app.users.user.1.-id",
        "app.messages.message.#text",
        "app.messages.message.-id",
        "app.title",
      ),
    }),
    captured("override", {
      "incoming-payload-content-type": "application/json",
      "pass-arguments-to-command": payloadArgs("forced"),
    }),
    captured("form-json", {
      "parse-parameters-as-json": [{ source: "payload", name: "payload" }],
      "pass-arguments-to-command": payloadArgs("payload.state", "payload.branch"),
      "trigger-rule": { match: { type: "value", value: "passed", parameter: { source: "payload", name: "payload.state" } } },
    }),
    captured("query-json", {
      "parse-parameters-as-json": [
        { source: "url", name: "data" },
        { source: "header", name: "x-meta" },
      ],
      "pass-arguments-to-command": [
        { source: "url", name: "data.k" },
        { source: "header", name: "X-Meta.nested.v" },
      ],
    }),
    captured("unsupported", {
      "pass-arguments-to-command": [{ source: "payload", name: "a" }, { source: "raw-request-body" }],
      "trigger-rule": { match: { type: "value", value: "yes", parameter: { source: "header", name: "X-Ok" } } },
    }),
    captured("unsupported-payload-rule", {
      "trigger-rule": { match: { type: "value", value: "1", parameter: { source: "payload", name: "a" } } },
    }),
  ]);
  s = await startServer(["-hooks", hooks, "-verbose", "-max-multipart-mem", "4096"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

const args = (text: string): string[] => parseEcho(text).args;

describe("JSON bodies", { concurrency: true }, () => {
  test("nested values, array indexes, booleans and numbers", async () => {
    const r = await send(`${s.base}/hooks/json`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ a: { b: "deep" }, list: ["zero", "one"], flag: true, n: 42 }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["deep", "one", "true", "42"]);
  });

  test("a chunked body (no Content-Length) is read whole", async () => {
    const r = await send(`${s.base}/hooks/json`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ a: { b: "chunked" }, list: ["x", "y"], flag: false, n: 1, pad: "p".repeat(10_000) }),
      chunked: true,
    });
    assert.deepEqual(args(r.text), ["chunked", "y", "false", "1"]);
  });

  test("any content type containing 'json' is parsed as JSON", async () => {
    const r = await send(`${s.base}/hooks/json`, {
      headers: { "Content-Type": "application/vnd.github+json; charset=utf-8" },
      body: JSON.stringify({ a: { b: "vendor" } }),
    });
    assert.equal(args(r.text)[0], "vendor");
  });

  test("only the first JSON value is read; anything after it is ignored (Go's json.Decoder)", async () => {
    const r = await send(`${s.base}/hooks/json`, {
      headers: { "Content-Type": "application/json" },
      body: '{"a":{"b":"first value"},"list":[0,1]}\n{"a":{"b":"second"}} trailing words',
    });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text).slice(0, 2), ["first value", "1"]);
  });

  test("a top-level array is reachable under 'root'", async () => {
    const r = await send(`${s.base}/hooks/json-array`, {
      headers: { "Content-Type": "application/json" },
      body: ' \n [{"name":"first"},{"name":"second"}]',
    });
    assert.equal(r.status, 200);
    const [first, second, entire] = args(r.text);
    assert.equal(first, "first");
    assert.equal(second, "second");
    assert.deepEqual(JSON.parse(entire!), { root: [{ name: "first" }, { name: "second" }] });
  });
});

describe("url-encoded forms", { concurrency: true }, () => {
  test("values, the first of repeated keys, + and %20 as spaces, escaped symbols", async () => {
    const r = await send(`${s.base}/hooks/form`, {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "name=alice&multi=first&multi=second&spaced=a+b%20c&symbols=%26%3D%3F%2F%E2%9C%93",
    });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["alice", "first", "a b c", "&=?/✓"]);
  });
});

describe("multipart forms", { concurrency: true }, () => {
  test("values, JSON file parts, forced JSON parts; other file parts are left out", async () => {
    const { body, contentType } = multipart([
      { name: "field", value: "plain value" },
      { name: "meta", filename: "meta.json", contentType: "application/json", value: '{"kind":"photo","count":3}' },
      { name: "forced", filename: "forced.txt", contentType: "text/plain", value: '{"x":"forced json"}' },
      { name: "thumb", filename: "thumb.jpg", contentType: "image/jpeg", value: Buffer.from([0xff, 0xd8, 0xff, 0xe0]) },
      { name: "plain-file", filename: "notes.txt", contentType: "text/plain", value: "not json" },
    ]);
    const r = await send(`${s.base}/hooks/multipart`, { headers: { "Content-Type": contentType }, body });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["plain value", "photo", "3", "forced json", "", ""]);
  });

  test("a JSON file part larger than -max-multipart-mem is still parsed", async () => {
    const big = { kind: "big", count: 7, filler: "x".repeat(300_000) };
    const { body, contentType } = multipart([
      { name: "field", value: "with a big part" },
      { name: "meta", filename: "meta.json", contentType: "application/json", value: JSON.stringify(big) },
    ]);
    const r = await send(`${s.base}/hooks/multipart`, { headers: { "Content-Type": contentType }, body });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text).slice(0, 3), ["with a big part", "big", "7"]);
  });

  test("the form logs the values it found", async () => {
    const { body, contentType } = multipart([{ name: "logged-field", value: "v" }]);
    await send(`${s.base}/hooks/multipart`, { headers: { "Content-Type": contentType }, body });
    await s.proc.waitFor(/found multipart form value "logged-field"/);
  });
});

describe("XML bodies", { concurrency: true }, () => {
  const xml = `<?xml version="1.0"?>
<app>
  <title>Frames</title>
  <users>
    <user id="1" name="Jeff" />
    <user id="2" name="Sally" />
  </users>
  <messages>
    <message id="7" from_user="1" to_user="2">Hello!!</message>
  </messages>
</app>`;

  test("attributes as -name, text as #text, repeated elements as arrays", async () => {
    const r = await send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "application/xml" }, body: xml });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["Jeff", "2", "Hello!!", "7", "Frames"]);
  });

  test("text/xml is parsed as XML too", async () => {
    const r = await send(`${s.base}/hooks/xml`, { headers: { "Content-Type": "text/xml; charset=utf-8" }, body: xml });
    assert.deepEqual(args(r.text), ["Jeff", "2", "Hello!!", "7", "Frames"]);
  });
});

describe("incoming-payload-content-type and parse-parameters-as-json", { concurrency: true }, () => {
  test("incoming-payload-content-type overrides the request's Content-Type", async () => {
    const r = await send(`${s.base}/hooks/override`, {
      headers: { "Content-Type": "text/plain" },
      body: '{"forced":"parsed as json"}',
    });
    assert.deepEqual(args(r.text), ["parsed as json"]);
  });

  test("incoming-payload-content-type applies when the request has no Content-Type", async () => {
    const r = await send(`${s.base}/hooks/override`, { body: '{"forced":"no header"}' });
    assert.deepEqual(args(r.text), ["no header"]);
  });

  test("a form field holding JSON is decoded and usable in rules and arguments", async () => {
    const payload = JSON.stringify({ state: "passed", branch: "master" });
    const r = await send(`${s.base}/hooks/form-json`, {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "payload=" + encodeURIComponent(payload),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["passed", "master"]);
  });

  test("a form field whose JSON says otherwise fails the rule", async () => {
    const payload = JSON.stringify({ state: "failed", branch: "master" });
    const r = await send(`${s.base}/hooks/form-json`, {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "payload=" + encodeURIComponent(payload),
    });
    assert.equal(r.text, "Hook rules were not satisfied.");
  });

  test("a field that is not JSON is logged, and the rule just does not hold", async () => {
    const r = await send(`${s.base}/hooks/form-json`, {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "payload=%7Bnot-json",
    });
    assert.equal(r.status, 200);
    assert.equal(r.text, "Hook rules were not satisfied.");
    await s.proc.waitFor(/error parsing JSON parameters/);
  });

  test("query and header parameters can be decoded as JSON", async () => {
    const r = await send(`${s.base}/hooks/query-json?data=${encodeURIComponent('{"k":"from query"}')}`, {
      headers: { "X-Meta": '{"nested":{"v":"from header"}}' },
    });
    assert.deepEqual(args(r.text), ["from query", "from header"]);
  });
});

describe("unsupported content types", { concurrency: true }, () => {
  test("are logged, leave the payload empty, and the rules still run", async () => {
    const r = await send(`${s.base}/hooks/unsupported`, {
      headers: { "Content-Type": "text/plain", "X-Ok": "yes" },
      body: '{"a":"would be json"}',
    });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["", '{"a":"would be json"}']);
    await s.proc.waitFor(/error parsing body payload due to unsupported content type header: text\/plain/);
  });

  test("a rule on the payload does not hold when the body was not parsed", async () => {
    const r = await send(`${s.base}/hooks/unsupported-payload-rule`, {
      headers: { "Content-Type": "text/plain" },
      body: '{"a":"1"}',
    });
    assert.equal(r.status, 200);
    assert.equal(r.text, "Hook rules were not satisfied.");
  });

  test("a request without Content-Type still runs its rules", async () => {
    const r = await send(`${s.base}/hooks/unsupported`, { headers: { "X-Ok": "yes" }, body: "a=1" });
    assert.equal(r.status, 200);
    assert.deepEqual(args(r.text), ["", "a=1"]);
  });
});
