// Secrets reach the log in no form — raw, percent-encoded (either case of hex, "+"
// for a space, partly encoded), JSON-escaped (argv, JSON bodies), in the text and the JSON log
// format — and nothing but secrets is hidden: the value "push" compared with X-GitHub-Event leaves
// every "frame-push" in the log alone.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { bin, eventually, removeDir, run, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

// Every character that has a second form somewhere: "+", "/", "=", a space, a quote, a backslash.
const TOKEN = 'Zm9v+YmFy/cX"V4\\ q=';
const HMAC_SECRET = 'hm+ac/se"cr\\et 42=';
const PAYLOAD_TOKEN = "payload-token-6731";
/** TOKEN with JSON's \u escape for every character. */
const U_ESCAPED = [...TOKEN].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");

/** `s` percent-encoded with lower-case hex. */
const lowerHex = (s: string): string => encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
/** As an HTML form encodes it: "+" for a space. */
const formEncoded = (s: string): string => encodeURIComponent(s).replace(/%20/g, "+");
/** Only some characters encoded, as a sloppy client does. */
const partlyEncoded = (s: string): string => s.replace(/\+/g, "%2B").replace(/"/g, "%22").replace(/\\/g, "%5c").replace(/ /g, "+");

/** Every form of `s` a log could show. */
function forms(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const all = [s, encodeURIComponent(s), lowerHex(s), formEncoded(s), partlyEncoded(s), json, JSON.stringify(json).slice(1, -1)];
  return s === TOKEN ? [...all, U_ESCAPED] : all;
}

let dir = "";
let text: Server;
let json: Server;

before(async () => {
  dir = await tempDir("webhook-secrets-");
  const hooks = await writeHooks(dir, [
    {
      id: "deploy",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "url", name: "token" },
        { source: "header", name: "X-Token" },
      ],
      "trigger-rule": {
        or: [
          { match: { type: "value", value: TOKEN, parameter: { source: "url", name: "token" } } },
          { match: { type: "value", value: TOKEN, parameter: { source: "header", name: "X-Token" } } },
          { match: { type: "value", value: PAYLOAD_TOKEN, parameter: { source: "payload", name: "t" }, redact: true } },
        ],
      },
    },
    {
      id: "frame-push",
      "execute-command": "/bin/true",
      "response-message": "Push received",
      "trigger-rule": {
        and: [
          { match: { type: "payload-hmac-sha256", secret: HMAC_SECRET, parameter: { source: "header", name: "X-Hub-Signature-256" } } },
          { match: { type: "value", value: "push", parameter: { source: "header", name: "X-GitHub-Event" } } },
          { match: { type: "value", value: "refs/heads/main", parameter: { source: "payload", name: "ref" } } },
        ],
      },
    },
  ]);
  [text, json] = await Promise.all([startServer(["-hooks", hooks, "-debug"]), startServer(["-hooks", hooks, "-debug", "-log-format", "json"])]);
});

after(async () => {
  await Promise.all([text?.stop(), json?.stop()]);
  await removeDir(dir);
});

/** Sends the secrets in every encoding to `s`; resolves once the log holds every request's summary line. */
async function attack(s: Server): Promise<void> {
  const sent: Promise<unknown>[] = [];
  for (const encode of [encodeURIComponent, lowerHex, formEncoded, partlyEncoded]) {
    sent.push(send(`${s.base}/hooks/deploy?token=${encode(TOKEN)}`));
    sent.push(send(`${s.base}/hooks/deploy?token=${encode(HMAC_SECRET)}`));
    sent.push(send(`${s.base}/hooks/deploy`, { headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: `t=${encode(TOKEN)}` }));
  }
  sent.push(send(`${s.base}/hooks/deploy`, { headers: { "X-Token": TOKEN } }));
  sent.push(send(`${s.base}/hooks/deploy`, { headers: { "Content-Type": "application/json" }, body: JSON.stringify({ t: PAYLOAD_TOKEN, u: TOKEN }) }));
  sent.push(send(`${s.base}/hooks/deploy`, { headers: { "Content-Type": "application/json" }, body: `{"u":"${U_ESCAPED}"}` }));
  const push = JSON.stringify({ ref: "refs/heads/main" });
  const sig = "sha256=" + createHmac("sha256", HMAC_SECRET).update(push).digest("hex");
  sent.push(
    send(`${s.base}/hooks/frame-push`, { headers: { "Content-Type": "application/json", "X-GitHub-Event": "push", "X-Hub-Signature-256": sig }, body: push }),
  );
  const replies = (await Promise.all(sent)) as { status: number; text: string }[];
  // The token in the url or the header ran the command, so its argv (JSON-quoted) was logged.
  assert.ok(replies.some((r) => r.status === 200 && r.text.includes(TOKEN)));
  assert.equal(replies.at(-1)!.text, "Push received");
  await eventually(() => (s.logs().match(/\| (GET|POST) \/hooks\//g) ?? []).length >= sent.length, 15_000);
  await eventually(() => s.logs().includes("finished handling frame-push"), 15_000);
}

describe("secrets in the log", () => {
  for (const [name, server] of [
    ["text", (): Server => text],
    ["json", (): Server => json],
  ] as const) {
    test(`-debug -log-format ${name}: no secret in any encoding, and nothing else hidden`, async () => {
      const s = server();
      await attack(s);
      const logs = s.logs();
      for (const secret of [TOKEN, HMAC_SECRET, PAYLOAD_TOKEN]) {
        for (const form of forms(secret)) assert.equal(logs.includes(form), false, `${JSON.stringify(form)} appears in the log:\n${logs}`);
      }
      assert.match(logs, /\*\*\*/);
      // Values compared with an event header or a payload field are not secrets.
      assert.match(logs, /frame-push got matched/);
      assert.match(logs, /refs\/heads\/main/);
      assert.match(logs, /X-Github-Event: push/);
      assert.equal(logs.includes("frame-***"), false);
    });
  }
});

test('"redact" other than true or false stops the start with a clear message', async () => {
  const bad = await writeHooks(
    dir,
    [
      {
        id: "a",
        "execute-command": "/bin/true",
        "trigger-rule": { match: { type: "value", value: "x", redact: "no", parameter: { source: "url", name: "t" } } },
      },
    ],
    "bad.json",
  );
  const r = await run(bin("webhook"), ["-hooks", bad, "-port", "1"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /bad\.json: hook #1 \(id "a"\): "trigger-rule\.match\.redact" must be true or false/);
});
