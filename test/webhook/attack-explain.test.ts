// Attacks on issue 33's surface (rule explanations, -test-request, -record-requests, secret-file,
// ip-list-file) through the real bin/webhook, each a fixed hole: a file that is not a regular file
// (/dev/zero, a FIFO) named as a secret-file, an ip-list-file or the -test-request file is refused
// at once instead of filling memory or blocking for ever.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { bin, removeDir, run, tempDir } from "../helpers.js";
import { writeHooks } from "./fixtures/harness.js";

let dir = "";

before(async () => {
  dir = await tempDir("webhook-attack-explain-");
});

after(async () => {
  await removeDir(dir);
});

test("/dev/zero or a FIFO as a secret-file, ip-list-file or -test-request file is refused, not read for ever", async () => {
  const fifo = join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const hook = (id: string, match: unknown) => ({ id, "execute-command": "/bin/true", "trigger-rule": { match } });
  const hmac = { type: "payload-hmac-sha256", parameter: { source: "header", name: "X-Sig" } };
  const hooks = await writeHooks(dir, [
    hook("zero", { ...hmac, "secret-file": "/dev/zero" }),
    hook("fifo", { ...hmac, "secret-file": fifo }),
    hook("ips", { type: "ip-whitelist", "ip-list-file": fifo }),
  ]);
  const plain = await writeHooks(dir, [{ id: "h", "execute-command": "/bin/true" }], "plain.json");
  const [validated, ...tested] = await Promise.all([
    run(bin("webhook"), ["-hooks", hooks, "-validate"], { timeoutMs: 10_000 }),
    ...["/dev/zero", fifo].map((file) => run(bin("webhook"), ["-hooks", plain, "-test-request", file], { timeoutMs: 10_000 })),
  ]);
  assert.equal(validated!.code, 1, validated!.stderr);
  const said = validated!.stdout + validated!.stderr;
  assert.match(said, /"zero"\): cannot read "secret-file" \/dev\/zero: not a regular file/);
  assert.match(said, /"fifo"\): cannot read "secret-file" .*fifo: not a regular file/);
  assert.match(said, /"ips"\): cannot read "ip-list-file" .*fifo: not a regular file/);
  for (const r of tested) {
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /\(-test-request\): not a regular file/);
  }
});
