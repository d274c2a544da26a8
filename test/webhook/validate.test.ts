// `webhook -validate` checks hooks files for CI and pre-commit (every problem with
// file, line and hook id; exit 0 or 1), and -options-file reads flags from a file (adnanh #326).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, removeDir, run, tempDir } from "../helpers.js";
import { send, startServer, writeHooks } from "./fixtures/harness.js";

let dir = "";
before(async () => {
  dir = await tempDir("webhook-validate-");
});
after(async () => {
  await removeDir(dir);
});

const validate = (...args: string[]) => run(bin("webhook"), ["-validate", ...args], { cwd: dir });

describe("-validate", () => {
  test("good files: exit 0 and a one-line summary, nothing started", async () => {
    const json = await writeHooks(
      dir,
      [
        { id: "a", "execute-command": "/bin/true" },
        { id: "b", "execute-command": "/bin/true" },
      ],
      "good.json",
    );
    await writeFile(join(dir, "good.yaml"), "- id: c\n  execute-command: /bin/true\n  trigger-rule:\n    match: { type: slack-signature, secret: s3cr3t }\n");
    const r = await validate("-hooks", json, "-hooks", join(dir, "good.yaml"));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, "ok: 3 hook(s) in 2 files\n");
    assert.doesNotMatch(r.stderr, /serving hooks/);
  });

  test("every problem of every file, with file, line and hook id; exit 1", async () => {
    await writeFile(
      join(dir, "bad.yaml"),
      [
        "# hooks of the frame",
        "- id: sync",
        "  execute-command: /bin/true",
        "- id: typo",
        "  execute-command: /bin/true",
        "  trigger_rule:",
        "    match: { type: value, value: x, parameter: { source: url, name: token } }",
        "- id: never",
        "  execute-command: /bin/true",
        "  trigger-rule:",
        "    match: { type: payload-hmac-sha257, secret: s3cr3t }",
        "- id: quoted",
        "  execute-command: /bin/true",
        '  include-command-output-in-response: "yes"',
        "- id: stripe",
        "  execute-command: /bin/true",
        "  trigger-rule: { match: { type: stripe-signature, secret: s3cr3t, tolerance: soon } }",
        "- id: sync",
        "  response-message: again",
        "",
      ].join("\n"),
    );
    await writeFile(join(dir, "other.json"), '[\n  {"id": "a", "execute-command": "/bin/true"},\n  {"id": "sync", "execute-command": "/bin/true"}\n]\n');
    await writeFile(join(dir, "broken.json"), '[{"id": "x",\n "execute-command": "/bin/true"');
    const r = await validate("-hooks", "bad.yaml", "-hooks", "other.json", "-hooks", "broken.json", "-hooks", "missing.json");
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.deepEqual(lines, [
      'bad.yaml:4: hook #2 (id "typo"): "trigger_rule" is not a hook field, so it is ignored (a typo?)',
      'bad.yaml:8: hook #3 (id "never"): match type "payload-hmac-sha257" does not exist, so the match is never true',
      'bad.yaml:12: hook #4 (id "quoted"): "include-command-output-in-response" must be true or false, not a string',
      'bad.yaml:15: hook #5 (id "stripe"): "tolerance" must be a duration of a second or more, such as "5m" or "1h", not "soon"',
      'bad.yaml:18: hook #6 (id "sync"): the hook has no "execute-command"',
      'bad.yaml:18: hook #6 (id "sync"): the id is already defined at bad.yaml:2',
      'other.json:3: hook #2 (id "sync"): the id is already defined at bad.yaml:2',
      lines.find((l) => l.startsWith("broken.json:"))!,
      "missing.json: cannot read the hooks file (no such file or directory)",
      "9 problem(s) in 4 files",
    ]);
    assert.match(lines[7]!, /^broken\.json: line 2, column \d+: invalid JSON/);
    assert.equal(r.stdout.includes("s3cr3t"), false, "no secret in the output");
  });

  test("with -template, the rendered file is checked; a template error is a problem", async () => {
    await writeFile(join(dir, "t.json"), '[{"id": "{{ getenv "HOOK_NAME" }}", "execute-command": "/bin/true"}]');
    const ok = await run(bin("webhook"), ["-validate", "-template", "-hooks", "t.json"], { cwd: dir, env: { ...process.env, HOOK_NAME: "deploy" } });
    assert.equal(ok.code, 0, ok.stdout);
    await writeFile(join(dir, "t2.json"), '[{"id": "{{ nosuchfunc }}", "execute-command": "/bin/true"}]');
    const bad = await validate("-template", "-hooks", "t2.json");
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /template: t2\.json:1: function "nosuchfunc" not defined/);
    const untemplated = await validate("-hooks", "t.json");
    assert.equal(untemplated.code, 1, "without -template the file is not JSON");
    assert.match(untemplated.stdout, /^t\.json: line 1, column \d+: invalid JSON/);
  });

  test("without -template, a file that fails to decode and holds {{ }} actions: the problem says to give -template; other bad files do not", async () => {
    await writeFile(join(dir, "t3.json"), '[{"id": "{{ getenv "HOOK_NAME" }}", "execute-command": "/bin/true"}]');
    await writeFile(join(dir, "broken.json"), '[{"id": "a", "execute-command": "/bin/true"');
    const r = await validate("-hooks", "t3.json", "-hooks", "broken.json");
    assert.equal(r.code, 1);
    const [templated, broken] = r.stdout.split("\n");
    assert.match(templated!, /^t3\.json: line 1, column \d+: invalid JSON: .* \(the file holds \{\{ \}\} template actions: validate it with -template\)$/);
    assert.match(broken!, /^broken\.json: .*invalid JSON/);
    assert.doesNotMatch(broken!, /-template/);
  });
});

describe("-options-file", () => {
  test("flags from a file, one per line; a flag after it on the command line wins", async () => {
    const hooks = await writeHooks(
      dir,
      [
        {
          id: "hi",
          "execute-command": "/bin/echo",
          "include-command-output-in-response": true,
          "pass-arguments-to-command": [{ source: "string", name: "hello" }],
        },
      ],
      "ff.json",
    );
    const flags = join(dir, "webhook.flags");
    await writeFile(flags, `# the frame's hook server\n-hooks ${hooks}\n\nheader X-Served-By=frame hooks\n-http-methods=PUT\nverbose\n`);
    const s = await startServer(["-options-file", flags, "-http-methods", "POST"]);
    try {
      const r = await send(`${s.base}/hooks/hi`);
      assert.equal(r.status, 200);
      assert.equal(r.text, "hello\n");
      assert.equal(r.headers["x-served-by"], "frame hooks");
      assert.match(s.logs(), /serving hooks on/, "verbose came from the file");
    } finally {
      await s.stop();
    }
  });

  test("a line that is not a flag, an unknown flag, a bad value, a value missing or a missing file: Go's exit 2 with the file and line", async () => {
    await writeFile(join(dir, "bad.flags"), "-port 9000\n'-verbose'\n");
    const r = await run(bin("webhook"), ["-options-file", "bad.flags"], { cwd: dir });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^invalid value "bad.flags" for flag -options-file: bad\.flags:2: a line holds one flag/);
    await writeFile(join(dir, "unknown.flags"), "-no-such-flag 1\n");
    const u = await run(bin("webhook"), ["-options-file", "unknown.flags"], { cwd: dir });
    assert.equal(u.code, 2);
    assert.match(u.stderr, /^unknown\.flags:1: flag provided but not defined: -no-such-flag/);
    await writeFile(join(dir, "value.flags"), "# the port\nport abc\n");
    const v = await run(bin("webhook"), ["-options-file", "value.flags"], { cwd: dir });
    assert.equal(v.code, 2);
    assert.match(v.stderr, /^value\.flags:2: invalid value "abc" for flag -port: parse error/);
    await writeFile(join(dir, "alone.flags"), "port\n-hooks h.json\n");
    const alone = await run(bin("webhook"), ["-options-file", "alone.flags"], { cwd: dir });
    assert.equal(alone.code, 2);
    assert.match(alone.stderr, /^alone\.flags:1: flag needs an argument: -port/, "the next line is not the value");
    const m = await run(bin("webhook"), ["-options-file", "none.flags"], { cwd: dir });
    assert.equal(m.code, 2);
    assert.match(m.stderr, /cannot read none\.flags \(no such file or directory\)/);
  });
});
