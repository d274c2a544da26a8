// Behaviours a migrating user meets, pinned to what the Go reference (adnanh/webhook 2.8.2)
// answers and hands its command, byte for byte: RE2 regular expressions, request bytes that are
// not UTF-8, Go's JSON escapes, strict base64, mxj's XML, Go's multipart reader, HTTP details.
// The command is fixtures/hex.sh, which prints every argument, HOOK_* variable and FILE_* file
// content as hex.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, rawExchange, send, startServer, statusOf, writeHooks, type Server } from "./fixtures/harness.js";
import { peakRssMiB } from "../fixtures/memory.js";

let dir = "";
let s: Server;

const hex = (b: string | Buffer): string => Buffer.from(typeof b === "string" ? Buffer.from(b, "latin1") : b).toString("hex");
const utf8hex = (t: string): string => Buffer.from(t, "utf8").toString("hex");

/** What hex.sh printed: name → hex. */
function printed(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

const cmd = { "execute-command": fixture("hex.sh"), "include-command-output-in-response": true };

before(async () => {
  dir = await tempDir("webhook-go-compat-");
  const hooks = await writeHooks(dir, [
    {
      id: "args",
      ...cmd,
      "pass-arguments-to-command": [
        { source: "raw-request-body" },
        { source: "url", name: "q" },
        { source: "header", name: "X-A" },
        { source: "entire-query" },
        { source: "entire-headers" },
        { source: "entire-payload" },
      ],
      "pass-environment-to-command": [
        { source: "url", name: "q", envname: "HOOK_Q" },
        { source: "header", name: "X-A", envname: "HOOK_A" },
      ],
      "pass-file-to-command": [
        { source: "url", name: "q", envname: "FILE_Q" },
        { source: "url", name: "b64", envname: "FILE_B", base64decode: true },
      ],
    },
    { id: "mp", ...cmd, "pass-arguments-to-command": [{ source: "payload", name: "a" }, { source: "payload", name: "f.x" }, { source: "entire-payload" }] },
    { id: "mpct", ...cmd, "incoming-payload-content-type": "multipart/form-data; boundary=X", "pass-arguments-to-command": [{ source: "payload", name: "a" }] },
    { id: "xml", ...cmd, "pass-arguments-to-command": [{ source: "entire-payload" }] },
    { id: "re", ...cmd, "trigger-rule": { match: { type: "regex", regex: "^(a+)+$", parameter: { source: "url", name: "q" } } } },
    { id: "re-form", ...cmd, "trigger-rule": { match: { type: "regex", regex: "^(a+)+$", parameter: { source: "payload", name: "a" } } } },
    { id: "bad-re", ...cmd, "trigger-rule": { match: { type: "regex", regex: "(a)\\1", parameter: { source: "url", name: "q" } } } },
    {
      id: "sig",
      ...cmd,
      "pass-arguments-to-command": [{ source: "payload", name: "a" }],
      "trigger-rule": { match: { type: "payload-hmac-sha256", secret: "s3cret", parameter: { source: "header", name: "X-Sig" } } },
    },
    { id: "early", ...cmd, "success-http-response-code": 103, "response-headers": [{ name: "Link", value: "</a>; rel=preload" }] },
  ]);
  s = await startServer(["-hooks", hooks, "-verbose"]);
});

after(async () => {
  await s.stop();
  await removeDir(dir);
});

/** One raw request (bytes as latin1) on its own connection; the whole answer as latin1. */
const exchange = (head: string, body = ""): Promise<string> =>
  rawExchange(s.port, Buffer.from(`${head}Host: x\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body, "latin1")}\r\n\r\n${body}`, "latin1"));
const bodyOf = (raw: string): string => raw.slice(raw.lastIndexOf("\r\n\r\n") + 4);

describe("regular expressions are Go's RE2", { concurrency: true }, () => {
  const regexes: [string, string, boolean][] = [
    ["ab(?i)cd", "abCD", true],
    ["ab(?i)cd", "ABcd", false],
    ["(?i:x)y", "Xy", true],
    ["^[[:alnum:]]+$", "ab1", true],
    ["^\\pL+$", "éa", true],
    ["\\p{Greek}", "α", true],
    ["^\\Qa.b\\E$", "a.b", true],
    ["^\\Qa.b\\E$", "axb", false],
    ["^\\x{41}$", "A", true],
    ["^.$", "😀", true],
    ["^.$", "\r", true],
    ["^.$", "\n", false],
    ["^\\z", "", true],
  ];
  let hooks = "";
  let rs: Server;
  before(async () => {
    hooks = await writeHooks(
      dir,
      regexes.map(([regex], i) => ({
        id: `r${i}`,
        "execute-command": "/bin/true",
        "trigger-rule": { match: { type: "regex", regex, parameter: { source: "url", name: "q" } } },
      })),
      "regex-hooks.json",
    );
    rs = await startServer(["-hooks", hooks, "-verbose"]);
  });
  after(async () => void (await rs.stop()));

  test("inline flags mid-pattern, POSIX classes, Unicode classes, \\Q…\\E, \\x{…}, '.' as one code point", async () => {
    for (const [i, [regex, input, want]] of regexes.entries()) {
      const r = await send(`${rs.base}/hooks/r${i}?q=${encodeURIComponent(input)}`, { method: "GET" });
      assert.equal(r.status, 200, regex);
      assert.equal(r.text === "", want, `${regex} against ${JSON.stringify(input)}: ${r.text}`);
    }
  });

  test("a backreference (refused by Go) answers 500 with Go's error in the log", async () => {
    const r = await send(`${s.base}/hooks/bad-re?q=aa`, { method: "GET" });
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while evaluating hook rules.");
    await eventually(() => /error evaluating hook: error parsing regexp: invalid escape sequence: `\\1`/.test(s.logs()));
  });

  test("^(a+)+$ against a long near-match does not block the server: both requests are answered", async () => {
    const evil = "a".repeat(40_000) + "!";
    const [slow, other] = await Promise.all([
      send(`${s.base}/hooks/re?q=${evil}`, { method: "GET", timeoutMs: 5_000 }),
      send(`${s.base}/`, { method: "GET", timeoutMs: 5_000 }),
    ]);
    assert.equal(slow.status, 200);
    assert.equal(slow.text, "Hook rules were not satisfied.");
    assert.equal(other.text, "OK");
  });
});

describe("bytes are bytes", { concurrency: true }, () => {
  test("%FF in the query reaches argv, environment and files as the byte 0xFF; entire-query escapes it as \\ufffd", async () => {
    const out = printed(bodyOf(await exchange("GET /hooks/args?q=%FF%FEa&b64=QUJD HTTP/1.1\r\n")));
    assert.equal(out["arg2"], "fffe61");
    assert.equal(out["HOOK_Q"], "fffe61");
    assert.equal(out["FILE_Q"], "fffe61");
    assert.equal(out["FILE_B"], utf8hex("ABC"));
    assert.equal(out["arg4"], utf8hex('{"b64":"QUJD","q":"\\ufffd\\ufffda"}'));
  });

  test("raw UTF-8 and a stray byte in the URL are kept as sent", async () => {
    const out = printed(bodyOf(await exchange("GET /hooks/args?q=\xc3\xa9\xff HTTP/1.1\r\n")));
    assert.equal(out["arg2"], "c3a9ff");
    assert.equal(out["arg4"], utf8hex('{"q":"é\\ufffd"}'));
  });

  test("header bytes reach the command unchanged; entire-headers escapes <, >, & and invalid UTF-8 as Go does", async () => {
    const out = printed(bodyOf(await exchange("GET /hooks/args HTTP/1.1\r\nX-A: a\xffb\xc3\xa9<>&\r\n")));
    assert.equal(out["arg3"], hex("a\xffb\xc3\xa9<>&"));
    assert.equal(out["HOOK_A"], hex("a\xffb\xc3\xa9<>&"));
    assert.equal(out["arg5"], utf8hex('{"Connection":"close","Content-Length":"0","X-A":"a\\ufffdbé\\u003c\\u003e\\u0026"}'));
  });

  test("raw-request-body is the body's bytes", async () => {
    const out = printed(bodyOf(await exchange("POST /hooks/args HTTP/1.1\r\nContent-Type: text/plain\r\n", "a\xff\xfe\r\nz")));
    assert.equal(out["arg1"], hex("a\xff\xfe\r\nz"));
  });

  test("JSON: invalid UTF-8 and lone surrogate escapes read as U+FFFD, pairs joined, U+2028 escaped on output", async () => {
    const body = '{"a":"x\xff\xe2\x82y","b":"\\ud83d\\ude00\\ud800","c":"\xe2\x80\xa8<&>"}';
    const out = printed(bodyOf(await exchange("POST /hooks/args HTTP/1.1\r\nContent-Type: application/json\r\n", body)));
    assert.equal(out["arg6"], utf8hex('{"a":"x\ufffd\ufffd\ufffdy","b":"😀\ufffd","c":"\\u2028\\u003c\\u0026\\u003e"}'));
  });

  test("3 MB of bytes that are not UTF-8 against a regex rule: answered at once, memory bounded", async () => {
    const peakRss = (): number => peakRssMiB(s.proc.child.pid!) * 1024 * 1024;
    const before = await peakRss();
    const body = Buffer.concat([Buffer.from("a="), Buffer.alloc(3 * 1024 * 1024, 0xff)]);
    const r = await send(`${s.base}/hooks/re-form`, { body, headers: { "Content-Type": "application/x-www-form-urlencoded" }, timeoutMs: 10_000 });
    assert.equal(r.text, "Hook rules were not satisfied.");
    const grew = (await peakRss()) - before;
    assert.ok(grew < 200 * 1024 * 1024, `peak RSS grew by ${(grew / 1024 / 1024).toFixed(0)} MiB`);
  });

  test("a form body keeps its bytes", async () => {
    const out = printed(bodyOf(await exchange("POST /hooks/args HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n", "a=%FF\xfe&b=+")));
    assert.equal(out["arg6"], utf8hex('{"a":"\\ufffd\\ufffd","b":" "}'));
  });
});

describe("base64decode is as strict as Go's", { concurrency: true }, () => {
  const cases: [string, string, string | undefined][] = [
    ["QUJD", "ABC", undefined],
    ["QUI%3D", "AB", undefined],
    ["QU%0AJD", "ABC", undefined],
    ["QUI", "", "illegal base64 data at input byte 0"],
    ["QU%21D", "", "illegal base64 data at input byte 2"],
    ["QQ%3D%3DQQ%3D%3D", "A", "illegal base64 data at input byte 4"],
    ["QUJDRA", "ABC", "illegal base64 data at input byte 4"],
  ];
  for (const [input, want, error] of cases) {
    test(`${decodeURIComponent(input)} → ${JSON.stringify(want)}${error ? ` and "${error}" in the log` : ""}`, async () => {
      const out = printed(bodyOf(await exchange(`GET /hooks/args?b64=${input} HTTP/1.1\r\n`)));
      assert.equal(out["FILE_B"], utf8hex(want));
      if (error) await eventually(() => s.logs().includes(`error decoding string [${error}]`));
    });
  }
});

describe("XML as the reference's mxj reads it", { concurrency: true }, () => {
  test("character references decoded, namespace attributes kept by local name, the last text run kept", async () => {
    const body = '<a xmlns:x="urn:x" x:b="1&amp;">t&#65;&#x42;<c>d&#x263A;</c>tail</a>';
    const out = printed(bodyOf(await exchange("POST /hooks/xml HTTP/1.1\r\nContent-Type: application/xml\r\n", body)));
    assert.equal(out["arg1"], utf8hex('{"a":{"#text":"tail","-b":"1\\u0026","-x":"urn:x","c":"d☺"}}'));
  });

  test("an element without attributes keeps its first text run next to its children", async () => {
    const out = printed(bodyOf(await exchange("POST /hooks/xml HTTP/1.1\r\nContent-Type: text/xml\r\n", "<r><a>one<b>x</b>two</a><b>1</b><b>2</b></r>")));
    assert.equal(out["arg1"], utf8hex('{"r":{"a":{"#text":"one","b":"x"},"b":["1","2"]}}'));
  });
});

describe("multipart as Go's mime/multipart reads it", { concurrency: true }, () => {
  const mp = (body: string, type = "multipart/form-data; boundary=X", path = "/hooks/mp") =>
    exchange(`POST ${path} HTTP/1.1\r\nContent-Type: ${type}\r\n`, body);

  test("bare LF line endings (the reference's own plex case) are read", async () => {
    const raw = await mp(
      '--X\nContent-Disposition: form-data; name="a"\n\nv1\n--X\nContent-Disposition: form-data; name="f"; filename="f.json"\nContent-Type: application/json\n\n{"x":"y"}\n--X--\n',
    );
    const out = printed(bodyOf(raw));
    assert.equal(out["arg1"], utf8hex("v1"));
    assert.equal(out["arg2"], utf8hex("y"));
  });

  test("a closing boundary first is an empty form, and what follows it is not read", async () => {
    const raw = await mp(
      '--XyZ--\r\n--XyZ\r\n--XyZ\r\nContent-Disposition: form-data; name="f"; filename="x.json"\r\n\r\n\r\n',
      "multipart/form-data; boundary=XyZ",
    );
    assert.equal(statusOf(raw), 200);
    assert.equal(printed(bodyOf(raw))["arg3"], utf8hex("null"));
  });

  test("a preamble is skipped, a closing boundary without line break ends the form, field bytes are kept", async () => {
    const out = printed(bodyOf(await mp('junk\r\n--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\xff\r\n--X--')));
    assert.equal(out["arg1"], "76ff");
  });

  test("quoted-printable parts are decoded, '=' before non-hex kept", async () => {
    const out = printed(
      bodyOf(await mp('--X\r\nContent-Disposition: form-data; name="a"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\na=3Db=\r\nc=ZZ\r\n--X--\r\n')),
    );
    assert.equal(out["arg1"], utf8hex("a=bc=ZZ"));
  });

  test("RFC 2231 names; a JSON file part needs exactly application/json", async () => {
    const raw = await mp(
      "--X\r\nContent-Disposition: form-data; name*=utf-8''%C3%A9\r\n\r\nv\r\n" +
        '--X\r\nContent-Disposition: form-data; name="f"; filename="f.json"\r\nContent-Type: application/json; charset=utf-8\r\n\r\n{"x":"y"}\r\n--X--\r\n',
    );
    assert.equal(printed(bodyOf(raw))["arg3"], utf8hex('{"é":"v"}'));
  });

  test("a boundary inside the data that is not followed by space, '-' or a line break is data", async () => {
    const out = printed(bodyOf(await mp('--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--Xa\r\n--X--\r\n')));
    assert.equal(out["arg1"], hex("v\r\n--Xa"));
  });

  for (const [name, body, type, path] of [
    ["a body cut off in a part", '--X\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nabc', undefined, undefined],
    ["a stray line after a part", '--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--X-x\r\n', undefined, undefined],
    ["no boundary parameter", "abc", "multipart/form-data; charset=x", undefined],
    ["a malformed query", "--X--\r\n", undefined, "/hooks/mp?a=%zz"],
    ["incoming-payload-content-type multipart on a JSON request", '{"a":1}', "application/json", "/hooks/mpct"],
  ] as const) {
    test(`${name}: 500 "Error occurred while parsing multipart form."`, async () => {
      const raw = await mp(body, type, path);
      assert.equal(statusOf(raw), 500, raw);
      assert.equal(bodyOf(raw), "Error occurred while parsing multipart form.");
    });
  }

  test("incoming-payload-content-type multipart on a multipart request reads the form", async () => {
    const raw = await mp('--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--X--\r\n', undefined, "/hooks/mpct");
    assert.equal(printed(bodyOf(raw))["arg1"], utf8hex("v"));
  });
});

describe("signatures cover the raw body of every content type (a deliberate difference)", { concurrency: true }, () => {
  const body = '--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nchosen\r\n--X--\r\n';
  const sign = (b: string): string => "sha256=" + createHmac("sha256", "s3cret").update(b).digest("hex");

  test("a multipart body signed over its bytes runs the command", async () => {
    const raw = await exchange(`POST /hooks/sig HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=X\r\nX-Sig: ${sign(body)}\r\n`, body);
    assert.equal(statusOf(raw), 200, raw);
    assert.equal(printed(bodyOf(raw))["arg1"], utf8hex("chosen"));
  });

  test("the signature of an empty payload no longer lets anyone choose the form values", async () => {
    const raw = await exchange(`POST /hooks/sig HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=X\r\nX-Sig: ${sign("")}\r\n`, body);
    assert.equal(statusOf(raw), 500);
    assert.equal(bodyOf(raw), "Error occurred while evaluating hook rules.");
  });
});

describe("HTTP details as Go's net/http answers them", { concurrency: true }, () => {
  test("an HTTP/1.0 request gets an HTTP/1.0 status line and no Connection header", async () => {
    const raw = await rawExchange(s.port, "GET / HTTP/1.0\r\n\r\n");
    assert.match(raw, /^HTTP\/1\.0 200 OK\r\n/);
    assert.doesNotMatch(raw, /Connection:/);
  });

  test("obsolete line folding is joined with single spaces", async () => {
    const raw = await rawExchange(s.port, "GET /hooks/args HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  b\r\n\tc\r\nConnection: close\r\n\r\n");
    assert.equal(printed(bodyOf(raw))["arg3"], utf8hex("a b c"));
  });

  test("a head of half a million folded lines is answered at once (linear unfolding)", async () => {
    const folds = " \n".repeat(500_000);
    const raw = await rawExchange(s.port, `GET /hooks/args HTTP/1.1\r\nHost: x\r\nX-A: a\r\n${folds}Connection: close\r\n\r\n`);
    assert.equal(statusOf(raw), 200, raw.slice(0, 200));
    assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
  });

  test("a folded first header line: 400", async () => {
    assert.equal(statusOf(await rawExchange(s.port, "GET / HTTP/1.1\r\n Host: x\r\n\r\n")), 400);
  });

  test("OPTIONS * gets 200 with an empty body; GET * is redirected to /%2A", async () => {
    const raw = await rawExchange(s.port, "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.match(raw, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(raw, /Content-Length: 0\r\n/);
    const star = await rawExchange(s.port, "GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.equal(statusOf(star), 301);
    assert.match(star, /Location: \/%2A\r\n/);
  });

  test("a 1xx success-http-response-code: the 1xx with the headers set so far, then 200 with the output", async () => {
    const raw = await exchange("POST /hooks/early HTTP/1.1\r\n");
    assert.match(raw, /^HTTP\/1\.1 103 Early Hints\r\nLink: <\/a>; rel=preload\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    assert.match(raw, /Content-Length: 0\r\n/);
  });
});
