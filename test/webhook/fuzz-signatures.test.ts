// Fuzz: signature headers of every scheme, mangled at random (a valid one with bytes changed, cut,
// repeated, random text, odd separators, huge or negative timestamps), against bin/webhook. Each
// request gets 200 or 500 and never takes the server down; the command runs only when the mangled
// header still holds the whole valid value (a repeated signature is still the sender's, as the
// providers' own libraries agree). FUZZ_SEED replays a run.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { removeDir, tempDir } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET = "fuzz-signing-secret";
const body = '{"event":"fuzz"}';

let dir = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-fuzz-signatures-");
  const hook = (id: string, match: Record<string, unknown>) => ({
    id,
    "execute-command": fixture("echo.sh"),
    "include-command-output-in-response": true,
    "pass-arguments-to-command": [{ source: "string", name: "ran" }],
    "trigger-rule": { match },
  });
  const hooks = await writeHooks(dir, [
    hook("sw", { type: "standard-webhooks", secret: SW_SECRET }),
    hook("stripe", { type: "stripe-signature", secret: SECRET }),
    hook("slack", { type: "slack-signature", secret: SECRET }),
    hook("shopify", { type: "payload-hmac-sha256-base64", secret: SECRET, parameter: { source: "header", name: "X-Shopify-Hmac-Sha256" } }),
  ]);
  s = await startServer(["-hooks", hooks]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

/** A header value made from a valid one: bytes flipped, cut, doubled, replaced, or random. */
function mangle(r: Random, valid: string): string {
  switch (r.int(6)) {
    case 0: {
      const i = r.int(valid.length);
      return valid.slice(0, i) + String.fromCharCode(33 + r.int(94)) + valid.slice(i + 1);
    }
    case 1:
      return valid.slice(0, r.int(valid.length));
    case 2:
      return `${valid}${r.pick([",", " ", ";", "="])}${valid}`;
    case 3:
      return r
        .bytes(1 + r.int(80))
        .toString("latin1")
        .replace(/[\x00-\x08\x0a-\x1f\x7f]/g, "x");
    case 4:
      return valid.replace(/\d{6,}/, r.pick(["-1", "0", "99999999999999999999", "1e9", "", " 1"]));
    default:
      return r.pick(["", "v1,", "t=,v1=", "v0=", "=", ",,,", "v1,====", "t=1,v1=zz"]);
  }
}

test("mangled signatures of every scheme: never a run, never anything but 200 or 500", async () => {
  const seed = fuzzSeed(1515);
  const r = seeded(seed);
  const now = Math.floor(Date.now() / 1000);
  const sw =
    "v1," +
    createHmac("sha256", Buffer.from(SW_SECRET.slice(6), "base64"))
      .update(`msg_1.${now}.${body}`)
      .digest("base64");
  const stripe = `t=${now},v1=${createHmac("sha256", SECRET).update(`${now}.${body}`).digest("hex")}`;
  const slack = "v0=" + createHmac("sha256", SECRET).update(`v0:${now}:${body}`).digest("hex");
  const shopify = createHmac("sha256", SECRET).update(body).digest("base64");
  const cases: [string, Record<string, string>][] = [
    ["sw", { "webhook-id": "msg_1", "webhook-timestamp": String(now), "webhook-signature": sw }],
    ["stripe", { "Stripe-Signature": stripe }],
    ["slack", { "X-Slack-Request-Timestamp": String(now), "X-Slack-Signature": slack }],
    ["shopify", { "X-Shopify-Hmac-Sha256": shopify }],
  ];
  for (let i = 0; i < fuzzCases(200); i++) {
    const [id, valid] = r.pick(cases);
    const headers = { ...valid };
    const names = Object.keys(headers);
    const name = r.pick(names);
    headers[name] = mangle(r, headers[name]!);
    const reply = await send(`${s.base}/hooks/${id}`, { body, headers: { "Content-Type": "application/json", ...headers } });
    const context = `seed ${seed}, case ${i}: ${id} ${name}: ${JSON.stringify(headers[name])}`;
    assert.ok([200, 500].includes(reply.status), `${context} → ${reply.status}`);
    if (reply.text.includes("arg1=ran")) assert.ok(headers[name]!.includes(valid[name]!), `${context}: the command ran on a changed signature`);
  }
  const health = await send(`${s.base}/`, { method: "GET" });
  assert.equal(health.status, 200);
});
