// -test-request through the real bin/webhook: the examples of docs/webhook/debugging.md (the reference's
// documented GitHub and query-token hooks) run as written and print what the page shows; a file that is
// not a request, or an unknown -test-hook, is refused with exit 2; a value a rule compares is masked;
// a request as `curl --trace` saw it sent to the server replays to the server's own verdict.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { bin, removeDir, repoRoot, run, tempDir } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";
import { startServer, writeHooks } from "./fixtures/harness.js";
import { curl } from "../fixtures/http.js";

const PAGE = "docs/webhook/debugging.md";
let dir = "";

before(async () => {
  dir = await tempDir("webhook-test-request-");
});

after(async () => {
  await removeDir(dir);
});

test("the page's examples run as written and print what it shows", async () => {
  const blocks = docBlocks(PAGE, { heading: "Testing a request offline (`-test-request`)" });
  const [hooks, push, pushCommand, pushOutput, token, tokenCommand, tokenOutput] = blocks;
  assert.deepEqual(
    blocks.map((b) => b.lang),
    ["json", "http", "sh", "text", "json", "sh", "text"],
  );
  await writeFile(join(dir, "hooks.json"), hooks!.body);
  await writeFile(join(dir, "push.http"), push!.body);
  await writeFile(join(dir, "token.json"), token!.body);
  const env = { ...process.env, PATH: `${join(repoRoot, "bin")}${delimiter}${process.env["PATH"] ?? ""}` };
  for (const [command, output] of [
    [pushCommand!.body, pushOutput!.body],
    [tokenCommand!.body, tokenOutput!.body],
  ] as const) {
    const r = await run("/bin/sh", ["-c", command], { cwd: dir, env });
    assert.equal(r.stdout, output, r.stderr);
  }
});

test("a file that is not a request, or an unknown -test-hook, exits with 2 and says why", async () => {
  const hooks = await writeHooks(dir, [{ id: "a", "execute-command": "/bin/true" }], "one.json");
  await writeFile(join(dir, "bad.http"), "POST /hooks/a HTTP/1.1\nContent-Length: 10\n\nshort");
  const bad = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "bad.http")]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /bad\.http \(-test-request\) is not a saved request: the body has 5 bytes, Content-Length says 10/);
  const unknown = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "bad.http"), "-test-hook", "nope"]);
  assert.equal(unknown.code, 2);
  const missing = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "none.http")]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read the request file .*none\.http \(-test-request\): no such file or directory/);
  await writeFile(join(dir, "ok.json"), '{"url": "/hooks/a"}');
  const unknownHook = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "ok.json"), "-test-hook", "nope"]);
  assert.equal(unknownHook.code, 2);
  assert.match(unknownHook.stderr, /no hook "nope" in the hooks files \(-test-hook\); the ids are: a/);
});

test("environment values are shown, a value a rule compares masked, and files given by size", async () => {
  const hooks = await writeHooks(
    dir,
    [
      {
        id: "env",
        "execute-command": "/bin/true",
        "pass-environment-to-command": [
          { source: "url", name: "token", envname: "TOKEN" },
          { source: "payload", name: "ref", envname: "REF" },
        ],
        "pass-file-to-command": [{ source: "payload", name: "ref", envname: "REF_FILE" }],
        "trigger-rule": { match: { type: "value", value: "t0k3n-xyz", parameter: { source: "url", name: "token" } } },
      },
    ],
    "env.json",
  );
  await writeFile(
    join(dir, "env.json.req"),
    JSON.stringify({ method: "POST", url: "/hooks/env?token=t0k3n-xyz", headers: { "Content-Type": "application/json" }, body: '{"ref":"main"}' }),
  );
  const r = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "env.json.req")]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const lines = r.stdout.split("\n");
  assert.equal(lines[0], "env: would run (answer 200)");
  assert.match(lines[1]!, /^ {2}command: \/.*true$/);
  assert.deepEqual(lines.slice(2, 5), ['  argv: ["/bin/true"]', '  env TOKEN="***"', '  env REF="main"']);
  assert.match(lines[5]!, /^ {2}env REF_FILE=".*\/REF_FILE…"$/);
  assert.equal(lines[6], "  file REF_FILE: a temporary file of 4 bytes");
  assert.ok(!r.stdout.includes("t0k3n-xyz"));
});

test("what curl --trace wrote of a request sent to the server replays to the server's verdict", async () => {
  const hooks = await writeHooks(
    dir,
    [
      {
        id: "traced",
        "execute-command": "/bin/true",
        "trigger-rule-mismatch-response": "explain",
        "trigger-rule": { match: { type: "value", value: "refs/heads/main", parameter: { source: "payload", name: "ref" } } },
      },
    ],
    "traced.json",
  );
  const s = await startServer(["-hooks", hooks]);
  try {
    const trace = join(dir, "trace.txt");
    const sent = await curl(["--trace", trace, "-H", "Content-Type: application/json", "-d", '{"ref":"refs/heads/dev"}', `${s.base}/hooks/traced`]);
    const r = await run(bin("webhook"), ["-hooks", hooks, "-test-request", trace]);
    assert.equal(r.code, 1, r.stderr);
    const failed = "match value on payload ref: value differs";
    assert.equal(JSON.parse(sent.body).failed, failed, "the server's own answer");
    assert.equal(r.stdout, `traced: would not run (answer 200): ${failed}\n`);
  } finally {
    await s.stop();
  }
});
