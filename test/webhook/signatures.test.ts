// Signature schemes with replay protection as match types — Standard Webhooks,
// Stripe, Slack and base64 HMAC headers (Shopify) — each checked against signatures computed the
// way its provider documents (the published vectors where there are some), through real HTTP to
// bin/webhook running a real command. Old and future timestamps are refused; secrets never logged.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { bin, eventually, removeDir, run, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
const RULE_ERROR = "Error occurred while evaluating hook rules.";
const NOT_SATISFIED = "Hook rules were not satisfied.";

// The Standard Webhooks specification's test vector (standard-webhooks/standard-webhooks).
const SW = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
// Slack's example in "Verifying requests from Slack".
const SLACK = {
  secret: "8f742231b10e8888abcd99yyyzzz85a5",
  timestamp: "1531420618",
  body: "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
  signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
};
const STRIPE_SECRET = "whsec_stripe-endpoint-secret-0123";
const SHOPIFY_SECRET = "shopify-app-secret-4567";
// A second Standard Webhooks key, as a sender rotating its key signs with both.
const SW_NEW = "whsec_c2Vjb25kLWtleS1hZnRlci1yb3RhdGlvbg==";

const now = (): number => Math.floor(Date.now() / 1000);
const keyOf = (whsec: string): Buffer => Buffer.from(whsec.slice("whsec_".length), "base64");
const standardSig = (secret: string, id: string, ts: string | number, body: string): string =>
  "v1," + createHmac("sha256", keyOf(secret)).update(`${id}.${ts}.${body}`).digest("base64");
const stripeSig = (ts: string | number, body: string, secret = STRIPE_SECRET): string => createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex");
const slackSig = (ts: string | number, body: string, secret = SLACK.secret): string =>
  "v0=" + createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex");
const shopifySig = (body: string, secret = SHOPIFY_SECRET): string => createHmac("sha256", secret).update(body).digest("base64");

const hook = (id: string, match: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id,
  "execute-command": echo,
  "include-command-output-in-response": true,
  "pass-arguments-to-command": [{ source: "string", name: "ran" }],
  "trigger-rule": { match },
  ...extra,
});

let dir = "";
let s: Server;
const url = (id: string): string => `${s.base}/hooks/${id}`;
const ran = (text: string): boolean => text.includes("arg1=ran");

before(async () => {
  dir = await tempDir("webhook-signatures-");
  const hooks = await writeHooks(dir, [
    hook("sw", { type: "standard-webhooks", secret: SW.secret }),
    hook("sw-vector", { type: "standard-webhooks", secret: SW.secret, tolerance: "87600h" }),
    hook("sw-new", { type: "standard-webhooks", secret: SW_NEW, tolerance: "1m" }),
    hook("stripe", { type: "stripe-signature", secret: STRIPE_SECRET }),
    hook("slack", { type: "slack-signature", secret: SLACK.secret }),
    hook("slack-vector", { type: "slack-signature", secret: SLACK.secret, tolerance: "87600h" }),
    hook("shopify", { type: "payload-hmac-sha256-base64", secret: SHOPIFY_SECRET, parameter: { source: "header", name: "X-Shopify-Hmac-Sha256" } }),
    hook(
      "soft",
      { type: "value", value: "x" },
      {
        "trigger-signature-soft-failures": true,
        "trigger-rule": {
          or: [
            { match: { type: "stripe-signature", secret: STRIPE_SECRET } },
            { match: { type: "value", value: "letmein", parameter: { source: "header", name: "X-Token" } } },
          ],
        },
      },
    ),
  ]);
  s = await startServer(["-hooks", hooks, "-verbose", "-debug"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

describe("standard-webhooks", () => {
  const headers = (id: string, ts: string | number, sig: string) => ({ "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": sig });

  test("the specification's test vector runs the command (tolerance long enough for its 2021 timestamp)", async () => {
    const r = await send(url("sw-vector"), { body: SW.body, headers: headers(SW.id, SW.timestamp, SW.signature) });
    assert.equal(r.status, 200, r.text);
    assert.ok(ran(r.text), r.text);
  });

  test("the same vector is refused as outdated with the default tolerance of 5 minutes", async () => {
    const r = await send(url("sw"), { body: SW.body, headers: headers(SW.id, SW.timestamp, SW.signature) });
    assert.equal(r.status, 500);
    assert.equal(r.text, RULE_ERROR);
    await eventually(() => /invalid payload signature outdated: timestamp 1614265330/.test(s.logs()));
  });

  test("a fresh signature passes; a changed body, id or timestamp does not", async () => {
    const ts = now();
    const sig = standardSig(SW.secret, "msg_1", ts, SW.body);
    const good = await send(url("sw"), { body: SW.body, headers: headers("msg_1", ts, sig) });
    assert.equal(good.status, 200, good.text);
    assert.ok(ran(good.text));
    for (const [body, id, t] of [
      [SW.body + " ", "msg_1", ts],
      [SW.body, "msg_2", ts],
      [SW.body, "msg_1", ts - 1],
    ] as const) {
      const r = await send(url("sw"), { body, headers: headers(id, t, sig) });
      assert.equal(r.status, 500, `${id} ${t}`);
      assert.equal(ran(r.text), false);
    }
  });

  test("several signatures (key rotation): one that matches is enough", async () => {
    const ts = now();
    const both = `${standardSig(SW.secret, "msg_r", ts, SW.body)} ${standardSig(SW_NEW, "msg_r", ts, SW.body)}`;
    for (const id of ["sw", "sw-new"]) {
      const r = await send(url(id), { body: SW.body, headers: headers("msg_r", ts, both) });
      assert.equal(r.status, 200, `${id}: ${r.text}`);
      assert.ok(ran(r.text));
    }
    const r = await send(url("sw-new"), { body: SW.body, headers: headers("msg_r", ts, standardSig(SW.secret, "msg_r", ts, SW.body)) });
    assert.equal(r.status, 500);
  });

  test("a timestamp beyond the hook's tolerance either side of now is refused, one inside it passes", async () => {
    for (const [ts, status] of [
      [now() - 90, 500],
      [now() + 90, 500],
      [now() - 20, 200],
      [now() + 20, 200],
    ] as const) {
      const r = await send(url("sw-new"), { body: "{}", headers: headers("msg_t", ts, standardSig(SW_NEW, "msg_t", ts, "{}")) });
      assert.equal(r.status, status, `timestamp ${ts - now()}s from now`);
    }
  });

  test("without the headers the rule is just not satisfied", async () => {
    const r = await send(url("sw"), { body: SW.body });
    assert.equal(r.status, 200);
    assert.equal(r.text, NOT_SATISFIED);
  });
});

describe("stripe-signature", () => {
  test("t= and v1= as Stripe documents; a v0= and other v1= entries are ignored", async () => {
    const ts = now();
    const body = '{"id":"evt_1","type":"checkout.session.completed"}';
    const header = `t=${ts},v1=${"0".repeat(64)},v1=${stripeSig(ts, body)},v0=${"1".repeat(64)}`;
    const r = await send(url("stripe"), { body, headers: { "Content-Type": "application/json", "Stripe-Signature": header } });
    assert.equal(r.status, 200, r.text);
    assert.ok(ran(r.text));
  });

  test("a replay six minutes later, a changed body or the wrong secret is refused", async () => {
    const body = '{"id":"evt_2"}';
    const old = now() - 360;
    for (const header of [
      `t=${old},v1=${stripeSig(old, body)}`,
      `t=${now()},v1=${stripeSig(now(), body + "x")}`,
      `t=${now()},v1=${stripeSig(now(), body, "whsec_other")}`,
      `v1=${stripeSig(now(), body)}`,
      `t=${now()},v1=${stripeSig(now(), body).toUpperCase()}`,
      `t=${now()},v1=${stripeSig(now(), body)}0`,
    ]) {
      const r = await send(url("stripe"), { body, headers: { "Stripe-Signature": header } });
      assert.equal(r.status, 500, header);
      assert.equal(ran(r.text), false);
    }
  });

  test("with trigger-signature-soft-failures, a bad signature inside an or is only false", async () => {
    const bad = await send(url("soft"), { body: "{}", headers: { "Stripe-Signature": `t=${now()},v1=${"0".repeat(64)}` } });
    assert.equal(bad.text, NOT_SATISFIED);
    const token = await send(url("soft"), { body: "{}", headers: { "Stripe-Signature": `t=${now()},v1=${"0".repeat(64)}`, "X-Token": "letmein" } });
    assert.ok(ran(token.text), token.text);
  });
});

describe("slack-signature", () => {
  const headers = (ts: string | number, sig: string) => ({
    "Content-Type": "application/x-www-form-urlencoded",
    "X-Slack-Request-Timestamp": String(ts),
    "X-Slack-Signature": sig,
  });

  test("Slack's documented example verifies (with a tolerance covering its 2018 timestamp)", async () => {
    const r = await send(url("slack-vector"), { body: SLACK.body, headers: headers(SLACK.timestamp, SLACK.signature) });
    assert.equal(r.status, 200, r.text);
    assert.ok(ran(r.text));
    const old = await send(url("slack"), { body: SLACK.body, headers: headers(SLACK.timestamp, SLACK.signature) });
    assert.equal(old.status, 500);
  });

  test("a fresh request passes; a changed body or a signature without v0= does not", async () => {
    const ts = now();
    assert.equal((await send(url("slack"), { body: SLACK.body, headers: headers(ts, slackSig(ts, SLACK.body)) })).status, 200);
    assert.equal((await send(url("slack"), { body: SLACK.body + "&x=1", headers: headers(ts, slackSig(ts, SLACK.body)) })).status, 500);
    assert.equal((await send(url("slack"), { body: SLACK.body, headers: headers(ts, slackSig(ts, SLACK.body).slice(3)) })).status, 500);
  });
});

describe("payload-hmac-sha256-base64 (Shopify)", () => {
  test("the base64 HMAC of the raw body in the named header", async () => {
    const body = '{"id":820982911946154500,"email":"jon@example.com"}';
    const good = await send(url("shopify"), { body, headers: { "Content-Type": "application/json", "X-Shopify-Hmac-Sha256": shopifySig(body) } });
    assert.equal(good.status, 200, good.text);
    assert.ok(ran(good.text));
    const bad = await send(url("shopify"), { body, headers: { "X-Shopify-Hmac-Sha256": shopifySig(body + " ") } });
    assert.equal(bad.status, 500);
    const hex = await send(url("shopify"), { body, headers: { "X-Shopify-Hmac-Sha256": createHmac("sha256", SHOPIFY_SECRET).update(body).digest("hex") } });
    assert.equal(hex.status, 500);
    // Only the sender's spelling of the digest passes (found by fuzz-signatures.test.ts): no cut padding.
    const unpadded = await send(url("shopify"), { body, headers: { "X-Shopify-Hmac-Sha256": shopifySig(body).replace(/=+$/, "") } });
    assert.equal(unpadded.status, 500);
    const none = await send(url("shopify"), { body });
    assert.equal(none.text, NOT_SATISFIED);
  });
});

describe("secrets", () => {
  test("no secret (nor the key inside a whsec_ secret) appears in the -debug log, even when a request carries it", async () => {
    const key = SW.secret.slice("whsec_".length);
    const r = await send(`${url("sw")}?leak=${encodeURIComponent(key)}&s=${encodeURIComponent(STRIPE_SECRET)}`, {
      body: JSON.stringify({ a: SW.secret, b: SLACK.secret, c: SHOPIFY_SECRET, d: SW_NEW }),
      headers: { "Content-Type": "application/json", "X-Echo": key },
    });
    assert.equal(r.status, 200);
    // The log line reaches the test through a pipe: wait for it.
    // The log reaches the test through a pipe: wait for the request's last line (after its dump).
    await eventually(() => /\| POST \/hooks\/sw\?leak=/.test(s.logs()));
    const logs = s.logs();
    assert.match(logs, /X-Echo/);
    for (const secret of [SW.secret, key, SW_NEW, SW_NEW.slice(6), STRIPE_SECRET, SLACK.secret, SHOPIFY_SECRET]) {
      assert.equal(logs.includes(secret), false, `${secret} appears in the log`);
      assert.equal(logs.includes(encodeURIComponent(secret)), false, `${secret} appears percent-encoded in the log`);
    }
  });

  test("a hooks file with a broken signature match stops the start, naming the hook and never the secret", async () => {
    for (const [match, expected] of [
      [{ type: "standard-webhooks", secret: "whsec_not base64 at all!" }, /"whsec_" followed by the base64 key/],
      [{ type: "stripe-signature" }, /a stripe-signature match needs its "secret"/],
      [{ type: "slack-signature", secret: "s3cr3t-value", tolerance: "soon" }, /"tolerance" must be a duration/],
      [{ type: "payload-hmac-sha256-base64", secret: "s3cr3t-value" }, /needs "parameter"/],
    ] as const) {
      const hooks = await writeHooks(dir, [{ id: "broken", "execute-command": echo, "trigger-rule": { match } }], "broken.json");
      const r = await run(bin("webhook"), ["-hooks", hooks, "-port", "0"]);
      const out = r.stdout + r.stderr;
      assert.equal(r.code, 1, out);
      assert.match(out, expected);
      assert.match(out, /hook #1 \(id "broken"\)/);
      assert.equal(out.includes("s3cr3t-value") || out.includes("not base64 at all"), false, out);
    }
  });
});
