// The rest of issue 33, through the real bin/webhook: a regex's pattern is printed in an explanation
// unless it compares a token (or has "redact": true); an explanation is one line of at most 400
// characters however large the rule; -record-requests skips a body over 1 MiB (and says so) and keeps
// the newest 100 files; secret-file rotation on the Standard Webhooks and Slack types; SIGUSR1 reads
// the secret-files again; -test-request agrees with the running server on a -template hooks file and
// on XML, form and multipart bodies.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, eventually, removeDir, run, tempDir } from "../helpers.js";
import { multipart } from "../fixtures/http.js";
import { fixture, parseEcho, rawExchange, send, startServer, statusOf, writeHooks, type Server } from "./fixtures/harness.js";

const PATTERN = "^refs/heads/(main|release-[0-9]+)$";
const TOKEN_PATTERN = "^tok-7f3a[0-9]{4}$";
const STD_OLD = `whsec_${Buffer.from("standard-old-key-1111").toString("base64")}`;
const STD_NEW = `whsec_${Buffer.from("standard-new-key-2222").toString("base64")}`;
const SLACK_OLD = "slack-old-secret-3333";
const SLACK_NEW = "slack-new-secret-4444";
const SLACK_NEWER = "slack-newer-secret-5555";
const SECRETS = [STD_OLD, STD_NEW, SLACK_OLD, SLACK_NEW, SLACK_NEWER, "standard-old-key-1111", "standard-new-key-2222"];

const echo = (id: string, extra: Record<string, unknown>) => ({
  id,
  "execute-command": fixture("echo.sh"),
  "include-command-output-in-response": true,
  "pass-arguments-to-command": [{ source: "string", name: "ran" }],
  ...extra,
});
const payloadRef = { source: "payload", name: "ref" };

let dir = "";
let s: Server;
const post = (id: string, body: string, headers: Record<string, string> = {}) =>
  send(`${s.base}/hooks/${id}`, { body, headers: { "Content-Type": "application/json", ...headers } });
/** The JSON log lines so far. */
const lines = (): Record<string, string>[] =>
  s
    .logs()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, string>);
const explanation = (id: string) => eventually(() => lines().find((l) => l["event"]?.startsWith(`hook ${id}: rule not satisfied: `)));

before(async () => {
  dir = await tempDir("webhook-explain-bounds-");
  await writeFile(join(dir, "std-old"), `${STD_OLD}\n`);
  await writeFile(join(dir, "std-new"), STD_NEW);
  await writeFile(join(dir, "slack-old"), SLACK_OLD);
  await writeFile(join(dir, "slack-new"), `${SLACK_NEW}\n`);
  const explain = { "trigger-rule-mismatch-response": "explain" };
  const value = (i: number) => ({ match: { type: "value", value: `v${i}`, parameter: { source: "payload", name: `field-number-${i}` } } });
  const hooks = await writeHooks(dir, [
    echo("re-payload", { ...explain, "trigger-rule": { match: { type: "regex", regex: PATTERN, parameter: payloadRef } } }),
    echo("re-header", { ...explain, "trigger-rule": { match: { type: "regex", regex: TOKEN_PATTERN, parameter: { source: "header", name: "X-Token" } } } }),
    echo("re-url", { ...explain, "trigger-rule": { match: { type: "regex", regex: TOKEN_PATTERN, parameter: { source: "url", name: "token" } } } }),
    echo("re-redact", { ...explain, "trigger-rule": { match: { type: "regex", regex: PATTERN, redact: true, parameter: payloadRef } } }),
    echo("big-or", { ...explain, "trigger-rule": { or: Array.from({ length: 200 }, (_, i) => value(i)) } }),
    echo("big-nested", { ...explain, "trigger-rule": { and: [{ or: Array.from({ length: 40 }, (_, i) => ({ or: [value(i), { and: [value(i + 1)] }] })) }] } }),
    echo("std", { "trigger-rule": { match: { type: "standard-webhooks", "secret-file": [join(dir, "std-old"), join(dir, "std-new")] } } }),
    echo("slack", { "trigger-rule": { match: { type: "slack-signature", "secret-file": [join(dir, "slack-old"), join(dir, "slack-new")] } } }),
    echo("rec", {}),
  ]);
  s = await startServer(["-hooks", hooks, "-verbose", "-log-format", "json", "-record-requests", join(dir, "rec")]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

describe("regex patterns in explanations", () => {
  test("a regex on a payload value prints its pattern, in the log and the answer", async () => {
    const r = await post("re-payload", JSON.stringify({ ref: "refs/heads/dev" }));
    const failed = `match regex on payload ref: does not match ${JSON.stringify(PATTERN)}`;
    assert.equal(JSON.parse(r.text).failed, failed);
    assert.equal((await explanation("re-payload"))["event"], `hook re-payload: rule not satisfied: ${failed}`);
  });

  test("a regex compared with a token header or a url parameter, or marked redact, never shows its pattern", async () => {
    for (const [id, headers, query] of [
      ["re-header", { "X-Token": "tok-guess" }, ""],
      ["re-url", {}, "?token=tok-guess"],
      ["re-redact", {}, ""],
    ] as const) {
      const r = await send(`${s.base}/hooks/${id}${query}`, {
        body: JSON.stringify({ ref: "x" }),
        headers: { "Content-Type": "application/json", ...headers },
      });
      assert.match(JSON.parse(r.text).failed, /: does not match the pattern$/, id);
      assert.ok(!r.text.includes("7f3a") && !r.text.includes("release-"), r.text);
      await explanation(id);
    }
    assert.ok(!s.logs().includes("7f3a"), "no part of the token's pattern in the log");
    for (const l of lines().filter((l) => (l["event"] ?? "").startsWith("hook re-redact:"))) assert.ok(!l["event"]!.includes("release-"), l["event"]);
  });
});

describe("an explanation is one bounded line", () => {
  test("an or of 200 rules, and ors nested in an and: one line, cut at 400 characters with …", async () => {
    for (const id of ["big-or", "big-nested"]) {
      const body = JSON.stringify({});
      const r = await post(id, body);
      const failed = JSON.parse(r.text).failed as string;
      assert.equal(failed.length, 400, `${id}: ${failed}`);
      assert.ok(failed.endsWith("…"), failed);
      assert.ok(!failed.includes("\n"));
      const line = (await explanation(id))["event"]!;
      assert.equal(line, `hook ${id}: rule not satisfied: ${failed}`);
      // The server's own text output: the whole explanation sits on one line.
      const raw = s
        .logs()
        .split("\n")
        .filter((l) => l.includes(`hook ${id}: rule not satisfied`));
      assert.equal(raw.length, 1, raw.join("\n"));
    }
  });
});

describe("-record-requests bounds", () => {
  test("a body over 1 MiB is not recorded and the log says so; only the newest 100 files are kept", async () => {
    const rec = join(dir, "rec");
    const before = (await readdir(rec)).filter((f) => f.endsWith("-rec.json")).length;
    const big = JSON.stringify({ pad: "x".repeat(1 << 20) });
    const r = await post("rec", big);
    assert.equal(r.status, 200);
    await eventually(() => lines().some((l) => l["event"] === `request to rec not recorded: its body of ${big.length} bytes is over 1048576`));
    assert.equal((await readdir(rec)).filter((f) => f.endsWith("-rec.json")).length, before, "no file for the big body");
    for (let i = 0; i < 105; i++) assert.equal((await post("rec", JSON.stringify({ i }))).status, 200);
    const files = await eventually(async () => {
      const all = (await readdir(rec)).filter((f) => f.endsWith(".json"));
      return all.length === 100 ? all : undefined;
    });
    const kept = await Promise.all(files.map(async (f) => JSON.parse(JSON.parse(await readFile(join(rec, f), "utf8")).body as string).i as number));
    assert.deepEqual(
      kept.sort((a, b) => a - b),
      Array.from({ length: 100 }, (_, k) => k + 5),
    );
    assert.deepEqual(
      (await readdir(rec)).filter((f) => f.endsWith(".tmp")),
      [],
      "no partial file left",
    );
  });
});

describe("secret-file rotation on the Standard Webhooks and Slack types", () => {
  const body = JSON.stringify({ event: "push" });
  const now = () => String(Math.floor(Date.now() / 1000));
  const standard = (secret: string) => {
    const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
    const ts = now();
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const sig = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
    return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` };
  };
  const slack = (secret: string) => {
    const ts = now();
    return { "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": `v0=${createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex")}` };
  };
  const held = (id: string, i: number) =>
    eventually(() =>
      lines().some(
        (l) =>
          l["event"]?.startsWith(`hook ${id}: rule satisfied with match ${id === "std" ? "standard-webhooks" : "slack-signature"}`) &&
          l["event"].endsWith(`secret[${i}]`),
      ),
    );

  test("either secret-file's secret holds, the log names which by index, a wrong one does not run", async () => {
    for (const [id, sign, secrets] of [
      ["std", standard, [STD_OLD, STD_NEW]],
      ["slack", slack, [SLACK_OLD, SLACK_NEW]],
    ] as const) {
      for (const i of [0, 1]) {
        const r = await post(id, body, sign(secrets[i]!));
        assert.equal(r.status, 200, `${id} secret ${i}: ${r.text}`);
        assert.match(r.text, /arg1=ran/);
        await held(id, i);
      }
      const wrong = await post(id, body, sign(id === "std" ? `whsec_${Buffer.from("a-wrong-key").toString("base64")}` : "a-wrong-secret"));
      assert.equal(wrong.status, 500, wrong.text);
      assert.doesNotMatch(wrong.text, /arg1=ran/);
    }
    for (const secret of SECRETS) assert.ok(!s.logs().includes(secret), `no ${secret} in the log`);
  });

  test("SIGUSR1 reads the secret-files again", async () => {
    await writeFile(join(dir, "slack-new"), SLACK_NEWER);
    s.proc.child.kill("SIGUSR1");
    await eventually(() => lines().some((l) => l["event"] === "caught USR1 signal"));
    await eventually(async () => (await post("slack", body, slack(SLACK_NEWER))).status === 200, 10_000);
    await held("slack", 1);
    assert.equal((await post("slack", body, slack(SLACK_NEW))).status, 500, "the replaced secret no longer holds");
    for (const secret of SECRETS) assert.ok(!s.logs().includes(secret), `no ${secret} in the log`);
  });
});

describe("-test-request agrees with the server", () => {
  /** What -test-request prints for `raw`, and what the server running the same hooks does with it. */
  async function both(hooksFile: string, args: string[], raw: string, env: NodeJS.ProcessEnv = process.env) {
    const file = join(dir, `req-${Math.random().toString(36).slice(2)}.http`);
    await writeFile(file, raw);
    const offline = await run(bin("webhook"), ["-hooks", hooksFile, ...args, "-test-request", file], { env });
    const server = await startServer(["-hooks", hooksFile, ...args], { env });
    try {
      const answer = await rawExchange(server.port, raw);
      return { offline, status: statusOf(answer), served: parseEcho(answer.slice(answer.indexOf("\r\n\r\n") + 4)) };
    } finally {
      await server.stop();
    }
  }
  const argvOf = (stdout: string, id: string): string[] => {
    const m = new RegExp(`^${id}: would run[^\\n]*\\n  command: [^\\n]*\\n  argv: (.*)$`, "m").exec(stdout);
    assert.ok(m, stdout);
    return (JSON.parse(m[1]!) as string[]).slice(1);
  };
  const request = (path: string, contentType: string, body: string) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body, "latin1")}\r\nConnection: close\r\n\r\n${body}`;
  const hook = (id: string, names: string[], rule?: unknown) => ({
    id,
    "execute-command": fixture("echo.sh"),
    "include-command-output-in-response": true,
    "pass-arguments-to-command": names.map((name) => ({ source: "payload", name })),
    ...(rule ? { "trigger-rule": rule } : {}),
  });

  test("a -template hooks file: the value from the environment, the same argv; exit 0 runs, 1 does not", async () => {
    const tmpl = join(dir, "hooks.json.tmpl");
    await writeFile(tmpl, JSON.stringify([hook("t", ["ref"], { match: { type: "value", value: "{{ getenv `WANTED_REF` }}", parameter: payloadRef } })]));
    const env = { ...process.env, WANTED_REF: "refs/heads/live" };
    const yes = await both(tmpl, ["-template"], request("/hooks/t", "application/json", JSON.stringify({ ref: "refs/heads/live" })), env);
    assert.equal(yes.offline.code, 0, yes.offline.stdout + yes.offline.stderr);
    assert.deepEqual(argvOf(yes.offline.stdout, "t"), ["refs/heads/live"]);
    assert.deepEqual(yes.served.args, ["refs/heads/live"]);
    const no = await both(tmpl, ["-template"], request("/hooks/t", "application/json", JSON.stringify({ ref: "refs/heads/dev" })), env);
    assert.equal(no.offline.code, 1);
    assert.match(no.offline.stdout, /^t: would not run \(answer 200\): match value on payload ref: value differs$/m);
    assert.equal(no.status, 200);
    assert.deepEqual(no.served.args, [], "the server did not run it either");
  });

  test("XML, form and multipart bodies give the offline test the argv the server gives the command", async () => {
    const hooks = await writeHooks(
      dir,
      [hook("xml", ["app.title", "app.users.user.1.-name"]), hook("form", ["name", "count"]), hook("multi", ["name", "note"])],
      "bodies.json",
    );
    const xml = `<?xml version="1.0"?>\n<app><title>Frames</title><users><user id="1" name="Jeff"/><user id="2" name="Sally"/></users></app>`;
    const parts = multipart([
      { name: "name", value: "anna" },
      { name: "note", value: "two words" },
    ]);
    for (const [id, contentType, body, want] of [
      ["xml", "application/xml", xml, ["Frames", "Sally"]],
      ["form", "application/x-www-form-urlencoded", "name=anna&count=3", ["anna", "3"]],
      ["multi", parts.contentType, parts.body.toString("latin1"), ["anna", "two words"]],
    ] as const) {
      const r = await both(hooks, [], request(`/hooks/${id}`, contentType, body));
      assert.equal(r.offline.code, 0, `${id}: ${r.offline.stdout}${r.offline.stderr}`);
      assert.equal(r.status, 200);
      assert.deepEqual(argvOf(r.offline.stdout, id), want, id);
      assert.deepEqual(r.served.args, want, id);
    }
  });
});
