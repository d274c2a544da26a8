// Why a hook did not fire, and secrets and address lists from files, through the real bin/webhook:
// the failed node of a rule in the log (level "debug" in JSON logs) and, with
// "trigger-rule-mismatch-response": "explain", in the answer; never a secret or a signature. Secrets
// rotated across two secret-files (the log says which index held), re-read when a file changes
// (-hotreload) or on SIGHUP; an ip-list-file change picked up without a restart, a bad line refused
// with file and line. -record-requests files (0600) replay through -test-request.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, eventually, removeDir, run, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const GH_SECRET = "gh-right-secret-7f3a";
const WRONG = "gh-wrong-secret-c0de";
const OLD = "rotation-old-1111";
const NEW = "rotation-new-2222";
const NEWER = "rotation-newer-3333";
const URL_TOKEN = "url-token-5e5e";
const STRIPE = "whsec_stripe-rotated-4444";
const body = JSON.stringify({ ref: "refs/heads/main" });
const sign = (secret: string, b = body): string => "sha256=" + createHmac("sha256", secret).update(b).digest("hex");

const ran = (extra: Record<string, unknown> = {}) => ({
  "execute-command": fixture("echo.sh"),
  "include-command-output-in-response": true,
  "pass-arguments-to-command": [{ source: "string", name: "ran" }],
  ...extra,
});
const hmac = (secrets: Record<string, unknown>) => ({
  match: { type: "payload-hmac-sha256", ...secrets, parameter: { source: "header", name: "X-Hub-Signature-256" } },
});

let dir = "";
let s: Server;
const url = (id: string, q = ""): string => `${s.base}/hooks/${id}${q}`;
const post = (id: string, headers: Record<string, string>, q = "", b = body) =>
  send(url(id, q), { body: b, headers: { "Content-Type": "application/json", ...headers } });
/** The JSON log lines so far. */
const lines = (): Record<string, string>[] =>
  s
    .logs()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, string>);

before(async () => {
  dir = await tempDir("webhook-explain-");
  await writeFile(join(dir, "old.secret"), `${OLD}\n`);
  await writeFile(join(dir, "new.secret"), NEW);
  await writeFile(join(dir, "stripe.secret"), STRIPE);
  await writeFile(join(dir, "ips.txt"), "# nobody yet\n192.0.2.0/24\n");
  const hooks = await writeHooks(dir, [
    ran({
      id: "github",
      "trigger-rule-mismatch-response": "explain",
      "trigger-rule": {
        and: [
          { match: { type: "value", value: URL_TOKEN, parameter: { source: "url", name: "secret" } } },
          hmac({ secret: GH_SECRET }),
          { match: { type: "value", value: "refs/heads/main", parameter: { source: "payload", name: "ref" } } },
        ],
      },
    }),
    ran({ id: "plain", "trigger-rule": hmac({ secret: GH_SECRET }) }),
    ran({ id: "rotate", "trigger-rule": hmac({ "secret-file": [join(dir, "old.secret"), join(dir, "new.secret")] }) }),
    ran({ id: "inline", "trigger-rule": hmac({ secret: [OLD, NEW] }) }),
    ran({ id: "stripe", "trigger-rule": { match: { type: "stripe-signature", "secret-file": [join(dir, "old.secret"), join(dir, "stripe.secret")] } } }),
    ran({
      id: "token",
      "trigger-rule": { match: { type: "value", "secret-file": join(dir, "old.secret"), parameter: { source: "header", name: "X-Token" } } },
    }),
    ran({
      id: "ips",
      "trigger-rule-mismatch-response": "explain",
      "trigger-rule": { match: { type: "ip-whitelist", "ip-range": "10.0.0.0/8", "ip-list-file": join(dir, "ips.txt") } },
    }),
  ]);
  s = await startServer(["-hooks", hooks, "-hotreload", "-verbose", "-log-format", "json", "-record-requests", join(dir, "rec")]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

/** No secret of the hooks, nor the wrong one, anywhere in the log. */
function assertNoSecrets(text: string): void {
  for (const secret of [GH_SECRET, WRONG, OLD, NEW, NEWER, URL_TOKEN, STRIPE]) assert.ok(!text.includes(secret), `no ${secret} in:\n${text}`);
}

describe("why a rule did not hold", () => {
  test("a GitHub-signed request with a wrong secret explains itself, in the answer and the log, without either secret", async () => {
    const sig = sign(WRONG);
    const r = await post("github", { "X-Hub-Signature-256": sig }, `?secret=${URL_TOKEN}`);
    assert.equal(r.status, 500);
    assert.equal(r.headers["content-type"], "application/json");
    const failed = "and[1] match payload-hmac-sha256 on header X-Hub-Signature-256: signature does not match";
    assert.deepEqual(JSON.parse(r.text), { message: "Error occurred while evaluating hook rules.", hook: "github", failed });
    const line = await eventually(() => lines().find((l) => l["event"]?.startsWith("hook github: rule not satisfied")));
    assert.equal(line["level"], "debug");
    assert.equal(line["event"], `hook github: rule not satisfied: ${failed}`);
    assert.ok(!line["event"]!.includes(sig.slice(7)), "the explanation holds no signature");
    assertNoSecrets(s.logs() + r.text);
  });

  test("a wrong URL token says the value differs, never what it is", async () => {
    const r = await post("github", { "X-Hub-Signature-256": sign(GH_SECRET) }, "?secret=guess-9999");
    assert.equal(r.status, 200);
    assert.equal(JSON.parse(r.text).failed, "and[0] match value on url secret: value differs");
    assert.ok(!lines().some((l) => l["event"]?.includes("rule not satisfied") && l["event"].includes("guess-9999")), "the explanation holds no given value");
    assertNoSecrets(s.logs() + r.text);
  });

  test("a missing payload value names its parameter", async () => {
    const b = JSON.stringify({ branch: "main" });
    const r = await post("github", { "X-Hub-Signature-256": sign(GH_SECRET, b) }, `?secret=${URL_TOKEN}`, b);
    assert.equal(JSON.parse(r.text).failed, "and[2] match value on payload ref: parameter payload.ref not found");
  });

  test("without the field the answer stays the reference's", async () => {
    const r = await post("plain", { "X-Hub-Signature-256": sign(WRONG) });
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while evaluating hook rules.");
    await eventually(() =>
      lines().some((l) => l["event"] === "hook plain: rule not satisfied: match payload-hmac-sha256 on header X-Hub-Signature-256: signature does not match"),
    );
  });
});

describe("secrets from files, rotated", () => {
  test("either of two secrets holds, and the log says which by index", async () => {
    for (const [id, i] of [
      ["rotate", 0],
      ["rotate", 1],
      ["inline", 0],
      ["inline", 1],
    ] as const) {
      const r = await post(id, { "X-Hub-Signature-256": sign(i === 0 ? OLD : NEW) });
      assert.equal(r.status, 200, `${id} with secret ${i}: ${r.text}`);
      assert.match(r.text, /arg1=ran/);
      await eventually(() =>
        lines().some((l) => l["event"]?.startsWith(`hook ${id}: rule satisfied with match payload-hmac-sha256`) && l["event"].endsWith(`secret[${i}]`)),
      );
    }
    assert.equal((await post("rotate", { "X-Hub-Signature-256": sign(WRONG) })).status, 500);
    const t = Math.floor(Date.now() / 1000);
    const stripe = (secret: string) => `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
    assert.match((await post("stripe", { "Stripe-Signature": stripe(STRIPE) })).text, /arg1=ran/);
    assert.match((await post("stripe", { "Stripe-Signature": stripe(OLD) })).text, /arg1=ran/);
    assert.equal((await post("stripe", { "Stripe-Signature": stripe(WRONG) })).status, 500);
    assert.match((await post("token", { "X-Token": OLD })).text, /arg1=ran/, "a value match compares with its secret-file");
    assert.equal((await post("token", { "X-Token": NEW })).text, "Hook rules were not satisfied.");
    assertNoSecrets(s.logs());
  });

  test("a secret-file written anew is read again without a restart (-hotreload)", async () => {
    await writeFile(join(dir, "new.secret"), `${NEWER}\n`);
    await eventually(async () => (await post("rotate", { "X-Hub-Signature-256": sign(NEWER) })).status === 200, 10_000);
    assert.equal((await post("rotate", { "X-Hub-Signature-256": sign(NEW) })).status, 500, "the replaced secret no longer holds");
    assertNoSecrets(s.logs());
  });

  test("SIGHUP reads the secret-files again", async () => {
    const secretFile = join(dir, "hup.secret");
    await writeFile(secretFile, OLD);
    const hooks = await writeHooks(dir, [ran({ id: "hup", "trigger-rule": hmac({ "secret-file": secretFile }) })], "hup.json");
    const hup = await startServer(["-hooks", hooks, "-verbose"]);
    try {
      const call = (secret: string) => send(`${hup.base}/hooks/hup`, { body, headers: { "X-Hub-Signature-256": sign(secret) } });
      assert.equal((await call(OLD)).status, 200);
      await writeFile(secretFile, NEW);
      hup.proc.child.kill("SIGHUP");
      await hup.proc.waitFor(/caught HUP signal[\s\S]*loaded: hup/);
      assert.equal((await call(NEW)).status, 200);
      assert.equal((await call(OLD)).status, 500);
      assert.ok(!hup.logs().includes(NEW) && !hup.logs().includes(OLD));
    } finally {
      await hup.stop();
    }
  });
});

describe("ip-list-file", () => {
  test("a change to the list is picked up without a restart; a bad line is refused with file and line", async () => {
    const before = await post("ips", {});
    assert.equal(before.status, 200);
    assert.match(JSON.parse(before.text).failed, /^match ip-whitelist: remote address 127\.0\.0\.1:\d+ is not in the allowed ranges$/);
    await writeFile(join(dir, "ips.txt"), "# the local machine\n127.0.0.1/32   # IPv4\n::1\n2001:db8::/32\n");
    await eventually(async () => /arg1=ran/.test((await post("ips", {})).text), 10_000);
    await writeFile(join(dir, "ips.txt"), "127.0.0.1\n\n10.0.0.300/8\n");
    await eventually(() => s.logs().includes(`${join(dir, "ips.txt")}:3: \\"10.0.0.300/8\\" is not an IP address or CIDR range`), 10_000);
    assert.match((await post("ips", {})).text, /arg1=ran/, "the last good list stays");
    // Written in place, a file is empty for a moment: that moment is not a list of nobody.
    await writeFile(join(dir, "ips.txt"), "");
    await eventually(() => s.logs().includes(`${join(dir, "ips.txt")}, read by hooks file ${join(dir, "hooks.json")}, is empty; keeping its hooks`), 10_000);
    assert.match((await post("ips", {})).text, /arg1=ran/);
  });

  test("-validate names the file and line of a bad range", async () => {
    await writeFile(join(dir, "bad-ips.txt"), "192.0.2.0/24\nexample.com\n");
    const hooks = await writeHooks(
      dir,
      [ran({ id: "x", "trigger-rule": { match: { type: "ip-whitelist", "ip-list-file": join(dir, "bad-ips.txt") } } })],
      "bad.json",
    );
    const r = await run(bin("webhook"), ["-hooks", hooks, "-validate"]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, new RegExp(`${join(dir, "bad-ips.txt")}:2: "example.com" is not an IP address or CIDR range`));
  });
});

describe("-record-requests", () => {
  test("each request to a hook is saved, mode 0600, and replays with -test-request to the same verdict", async () => {
    const rec = join(dir, "rec");
    const files = readdirSync(rec).filter((f) => f.endsWith("-github.json"));
    assert.ok(files.length >= 3, `recorded: ${files.join(" ")}`);
    for (const f of files) assert.equal(statSync(join(rec, f)).mode & 0o777, 0o600);
    await writeFile(join(dir, "ips.txt"), "127.0.0.1\n");
    // The first request to github was signed with the wrong secret.
    const r = await run(bin("webhook"), ["-hooks", join(dir, "hooks.json"), "-test-request", join(rec, files.sort()[0]!)]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^github: would not run \(answer 500\): and\[1\] match payload-hmac-sha256 on header X-Hub-Signature-256: signature does not match$/m,
    );
    assert.match(r.stdout, /^rotate: would not run/m);
    assertNoSecrets(r.stdout + r.stderr);
  });
});
