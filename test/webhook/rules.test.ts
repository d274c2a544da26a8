// Trigger rules — and/or/not nesting, value, regex, payload-hmac-sha1/256/512
// (prefix, several signatures), ip-whitelist (IPv4 and IPv6), scalr-signature (with freshness),
// trigger-signature-soft-failures, and missing parameters.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { removeDir, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
const RULE_ERROR = "Error occurred while evaluating hook rules.";
const NOT_SATISFIED = "Hook rules were not satisfied.";
const SECRET = "shh-hmac-secret";
const SCALR_KEY = "scalr-signing-key";
let dir = "";
let s: Server;
let v6: Server;

const ok = (id: string, rule: unknown, extra: Record<string, unknown> = {}) => ({
  id,
  "execute-command": echo,
  "response-message": "triggered",
  "trigger-rule": rule,
  ...extra,
});
const value = (source: string, name: string, v: string) => ({ match: { type: "value", value: v, parameter: { source, name } } });
const hmacRule = (type: string, header = "X-Signature") => ({
  match: { type, secret: SECRET, parameter: { source: "header", name: header } },
});
const sign = (algo: "sha1" | "sha256" | "sha512", body: string, key = SECRET): string => createHmac(algo, key).update(body).digest("hex");

before(async () => {
  dir = await tempDir("webhook-rules-");
  const hooks = await writeHooks(dir, [
    ok("nested", {
      and: [
        value("payload", "ref", "refs/heads/master"),
        {
          or: [value("header", "X-Event", "push"), { not: { match: { type: "regex", regex: "^bot-", parameter: { source: "payload", name: "user" } } } }],
        },
      ],
    }),
    ok("regex", { match: { type: "regex", regex: "v[0-9]+\\.[0-9]+", parameter: { source: "url", name: "tag" } } }),
    ok("number-value", value("payload", "n", "5")),
    ok("regex-go-flags", { match: { type: "regex", regex: "(?i)^release-(?P<num>\\d+)\\z", parameter: { source: "url", name: "tag" } } }),
    ok("empty-rule", {}),
    {
      id: "remote",
      "execute-command": echo,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "request", name: "remote-addr" }],
    },
    ok("hmac-sha1", hmacRule("payload-hmac-sha1")),
    ok("hmac-sha256", hmacRule("payload-hmac-sha256")),
    ok("hmac-sha512", hmacRule("payload-hmac-sha512")),
    ok("hash-sha1-deprecated", hmacRule("payload-hash-sha1", "X-Hub-Signature")),
    ok("or-hmac-hard", { or: [hmacRule("payload-hmac-sha256"), value("url", "token", "fallback")] }),
    ok(
      "or-hmac-soft",
      { or: [hmacRule("payload-hmac-sha256"), value("url", "token", "fallback")] },
      {
        "trigger-signature-soft-failures": true,
      },
    ),
    ok("ip-v4-single", { match: { type: "ip-whitelist", "ip-range": "127.0.0.1" } }),
    ok("ip-v4-cidr", { match: { type: "ip-whitelist", "ip-range": "127.0.0.0/8" } }),
    ok("ip-v4-elsewhere", { match: { type: "ip-whitelist", "ip-range": "10.0.0.0/8 192.168.0.0/16" } }),
    ok("ip-v4-list", { match: { type: "ip-whitelist", "ip-range": "10.0.0.0/8   127.0.0.0/24" } }),
    ok("ip-v6", { match: { type: "ip-whitelist", "ip-range": "::1/128" } }),
    ok("ip-v6-elsewhere", { match: { type: "ip-whitelist", "ip-range": "fe80::/10 2001:db8::/32" } }),
    ok("scalr", { match: { type: "scalr-signature", secret: SCALR_KEY } }),
    ok("missing-value", value("payload", "absent", "x")),
    ok("missing-not", { not: value("payload", "absent", "x") }),
    ok("missing-or", { or: [value("payload", "absent", "x"), value("url", "token", "yes")] }),
    ok("missing-and", { and: [value("payload", "absent", "x"), value("url", "token", "yes")] }),
  ]);
  s = await startServer(["-hooks", hooks]);
  v6 = await startServer(["-hooks", hooks], { ip: "::1" });
});

after(async () => {
  await Promise.all([s?.stop(), v6?.stop()]);
  await removeDir(dir);
});

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  headers: { "Content-Type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

describe("and / or / not", { concurrency: true }, () => {
  const cases: [string, Record<string, string>, unknown, string][] = [
    ["all hold via the first or-branch", { "X-Event": "push" }, { ref: "refs/heads/master", user: "bot-x" }, "triggered"],
    ["the or holds via not", { "X-Event": "pull" }, { ref: "refs/heads/master", user: "alice" }, "triggered"],
    ["neither or-branch holds", { "X-Event": "pull" }, { ref: "refs/heads/master", user: "bot-1" }, NOT_SATISFIED],
    ["the first and-branch fails", { "X-Event": "push" }, { ref: "refs/heads/dev", user: "alice" }, NOT_SATISFIED],
  ];
  for (const [name, headers, body, expected] of cases) {
    test(name, async () => {
      const r = await send(`${s.base}/hooks/nested`, json(body, headers));
      assert.equal(r.status, 200);
      assert.equal(r.text, expected);
    });
  }
});

describe("match value and regex", { concurrency: true }, () => {
  test("regex matches anywhere in the value (unanchored, Go syntax)", async () => {
    assert.equal((await send(`${s.base}/hooks/regex?tag=release-v1.2-final`)).text, "triggered");
    assert.equal((await send(`${s.base}/hooks/regex?tag=release-1.2`)).text, NOT_SATISFIED);
  });

  test("Go regex syntax: (?i) flags, (?P<name>…) groups, \\z", async () => {
    assert.equal((await send(`${s.base}/hooks/regex-go-flags?tag=RELEASE-12`)).text, "triggered");
    assert.equal((await send(`${s.base}/hooks/regex-go-flags?tag=release-12x`)).text, NOT_SATISFIED);
  });

  test("an empty trigger-rule object never holds", async () => {
    const r = await send(`${s.base}/hooks/empty-rule`);
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("a JSON number compares with a quoted value", async () => {
    assert.equal((await send(`${s.base}/hooks/number-value`, json('{"n": 5}'))).text, "triggered");
    assert.equal((await send(`${s.base}/hooks/number-value`, json('{"n": 6}'))).text, NOT_SATISFIED);
  });
});

describe("payload HMAC signatures", { concurrency: true }, () => {
  const body = JSON.stringify({ ref: "refs/heads/master", note: "signed body" });
  for (const algo of ["sha1", "sha256", "sha512"] as const) {
    test(`${algo}: a signature with the ${algo}= prefix holds`, async () => {
      const r = await send(`${s.base}/hooks/hmac-${algo}`, json(body, { "X-Signature": `${algo}=${sign(algo, body)}` }));
      assert.equal(r.status, 200);
      assert.equal(r.text, "triggered");
    });

    test(`${algo}: a bare hex signature holds`, async () => {
      const r = await send(`${s.base}/hooks/hmac-${algo}`, json(body, { "X-Signature": sign(algo, body) }));
      assert.equal(r.text, "triggered");
    });

    test(`${algo}: one good signature among several comma-separated ones holds`, async () => {
      const bad = sign(algo, body, "other-key");
      const r = await send(`${s.base}/hooks/hmac-${algo}`, json(body, { "X-Signature": `${algo}=${bad},${algo}=${sign(algo, body)}` }));
      assert.equal(r.text, "triggered");
    });

    test(`${algo}: a wrong signature answers 500 '${RULE_ERROR}'`, async () => {
      const r = await send(`${s.base}/hooks/hmac-${algo}`, json(body, { "X-Signature": `${algo}=${sign(algo, body, "wrong-key")}` }));
      assert.equal(r.status, 500);
      assert.equal(r.text, RULE_ERROR);
    });

    test(`${algo}: a tampered body answers 500`, async () => {
      const r = await send(`${s.base}/hooks/hmac-${algo}`, json(body.replace("master", "evil"), { "X-Signature": sign(algo, body) }));
      assert.equal(r.status, 500);
      assert.equal(r.text, RULE_ERROR);
    });
  }

  test("several signatures, none good: 500", async () => {
    const r = await send(`${s.base}/hooks/hmac-sha256`, json(body, { "X-Signature": `sha256=${"0".repeat(64)},sha256=${"1".repeat(64)}` }));
    assert.equal(r.status, 500);
  });

  test("a missing signature header: the rule does not hold (200), no error", async () => {
    const r = await send(`${s.base}/hooks/hmac-sha256`, json(body));
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("a signature of a different length (truncated) answers 500, not a crash", async () => {
    const r = await send(`${s.base}/hooks/hmac-sha256`, json(body, { "X-Signature": sign("sha256", body).slice(0, 10) }));
    assert.equal(r.status, 500);
    assert.equal(r.text, RULE_ERROR);
  });

  test("the deprecated payload-hash-sha1 still checks an HMAC", async () => {
    const good = await send(`${s.base}/hooks/hash-sha1-deprecated`, json(body, { "X-Hub-Signature": `sha1=${sign("sha1", body)}` }));
    assert.equal(good.text, "triggered");
    const bad = await send(`${s.base}/hooks/hash-sha1-deprecated`, json(body, { "X-Hub-Signature": "sha1=deadbeef" }));
    assert.equal(bad.status, 500);
  });
});

describe("trigger-signature-soft-failures", { concurrency: true }, () => {
  const body = '{"a":1}';
  const badSig = { "X-Signature": `sha256=${sign("sha256", body, "nope")}` };

  test("without it, a bad signature in an or-rule is an error (500)", async () => {
    const r = await send(`${s.base}/hooks/or-hmac-hard?token=fallback`, json(body, badSig));
    assert.equal(r.status, 500);
    assert.equal(r.text, RULE_ERROR);
  });

  test("with it, a bad signature is a plain failure and the other or-branch can hold", async () => {
    const r = await send(`${s.base}/hooks/or-hmac-soft?token=fallback`, json(body, badSig));
    assert.equal(r.status, 200);
    assert.equal(r.text, "triggered");
  });

  test("with it, a bad signature and no other branch: not satisfied, not an error", async () => {
    const r = await send(`${s.base}/hooks/or-hmac-soft?token=other`, json(body, badSig));
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("with it, a good signature still holds", async () => {
    const r = await send(`${s.base}/hooks/or-hmac-soft`, json(body, { "X-Signature": sign("sha256", body) }));
    assert.equal(r.text, "triggered");
  });
});

describe("ip-whitelist", { concurrency: true }, () => {
  test("IPv4: a single address", async () => {
    assert.equal((await send(`${s.base}/hooks/ip-v4-single`)).text, "triggered");
  });

  test("IPv4: a CIDR range", async () => {
    assert.equal((await send(`${s.base}/hooks/ip-v4-cidr`)).text, "triggered");
  });

  test("IPv4: ranges that do not contain the client", async () => {
    const r = await send(`${s.base}/hooks/ip-v4-elsewhere`);
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("IPv4: several ranges separated by spaces", async () => {
    assert.equal((await send(`${s.base}/hooks/ip-v4-list`)).text, "triggered");
  });

  test("IPv6: a client on ::1 matches ::1/128 and not other ranges", async () => {
    assert.equal((await send(`${v6.base}/hooks/ip-v6`)).text, "triggered");
    assert.equal((await send(`${v6.base}/hooks/ip-v6-elsewhere`)).text, NOT_SATISFIED);
    assert.equal((await send(`${v6.base}/hooks/ip-v4-cidr`)).text, NOT_SATISFIED);
  });

  test("IPv6: remote-addr is [::1]:port", async () => {
    const r = await send(`${v6.base}/hooks/remote`);
    assert.match(r.text, /^arg1=\[::1\]:\d+$/m);
  });

  test("IPv6: an IPv4 client does not match an IPv6 range", async () => {
    assert.equal((await send(`${s.base}/hooks/ip-v6`)).text, NOT_SATISFIED);
  });
});

describe("scalr-signature", { concurrency: true }, () => {
  const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const pad = (n: number) => String(n).padStart(2, "0");
  // Scalr's format: "Fri 08 Sep 2017 11:24:32 UTC"
  const scalrDate = (d: Date) =>
    `${days[d.getUTCDay()]} ${pad(d.getUTCDate())} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
  const body = JSON.stringify({ eventName: "HostUp", data: { SCALR_SERVER_HOSTNAME: "web-1" } });
  const headersFor = (date: string, key = SCALR_KEY) => ({
    "X-Signature": createHmac("sha1", key).update(body).update(date).digest("hex"),
    Date: date,
  });

  test("a fresh, correct signature holds", async () => {
    const r = await send(`${s.base}/hooks/scalr`, json(body, headersFor(scalrDate(new Date()))));
    assert.equal(r.status, 200);
    assert.equal(r.text, "triggered");
  });

  test("a correct signature older than 5 minutes is refused (500)", async () => {
    const r = await send(`${s.base}/hooks/scalr`, json(body, headersFor(scalrDate(new Date(Date.now() - 10 * 60_000)))));
    assert.equal(r.status, 500);
    assert.equal(r.text, RULE_ERROR);
  });

  test("a date 10 minutes in the future is refused too", async () => {
    const r = await send(`${s.base}/hooks/scalr`, json(body, headersFor(scalrDate(new Date(Date.now() + 10 * 60_000)))));
    assert.equal(r.status, 500);
  });

  test("a wrong key is refused (500)", async () => {
    const r = await send(`${s.base}/hooks/scalr`, json(body, headersFor(scalrDate(new Date()), "wrong-key")));
    assert.equal(r.status, 500);
    assert.equal(r.text, RULE_ERROR);
  });

  test("without the X-Signature and Date headers the rule does not hold (200)", async () => {
    const r = await send(`${s.base}/hooks/scalr`, json(body));
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });
});

describe("missing parameters", { concurrency: true }, () => {
  test("a match on a missing parameter is false, not an error", async () => {
    const r = await send(`${s.base}/hooks/missing-value`, json({ other: 1 }));
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("a missing parameter with no body at all", async () => {
    const r = await send(`${s.base}/hooks/missing-value`);
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });

  test("not of a match on a missing parameter holds", async () => {
    const r = await send(`${s.base}/hooks/missing-not`, json({ other: 1 }));
    assert.equal(r.text, "triggered");
  });

  test("an or-rule skips a missing parameter and tries the next branch", async () => {
    assert.equal((await send(`${s.base}/hooks/missing-or?token=yes`, json({}))).text, "triggered");
    assert.equal((await send(`${s.base}/hooks/missing-or?token=no`, json({}))).text, NOT_SATISFIED);
  });

  test("an and-rule with a missing parameter does not hold", async () => {
    const r = await send(`${s.base}/hooks/missing-and?token=yes`, json({}));
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });
});
