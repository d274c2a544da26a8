// Seeded, bounded fuzzing of hooks-file loading: mutated JSON and YAML hooks files (truncations, flipped
// bytes, YAML anchors, aliases, merge keys, tags, deep nesting, odd scalars). In process, each file either
// loads or is refused with a HooksFileError (the one-line message the server prints) — never another
// exception, never a hang. A few of them are then started with the real bin/webhook: it serves or exits 1
// with a message, never crashes. FUZZ_SEED replays a run; `npm run fuzz` runs many more cases.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { HooksFileError, parseHooks } from "../../src/webhook/hooks/config.js";
import { bin, freePort, run, removeDir, tempDir } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";

let dir = "";
before(async () => {
  dir = await tempDir("webhook-fuzz-hooks-");
});
after(async () => {
  await removeDir(dir);
});

const JSON_SEED = JSON.stringify(
  [
    {
      id: "deploy",
      "execute-command": "/bin/echo",
      "command-working-directory": "/tmp",
      "response-message": "ok",
      "pass-arguments-to-command": [
        { source: "payload", name: "head_commit.id" },
        { source: "string", name: "x" },
      ],
      "pass-environment-to-command": [{ source: "header", name: "X-Token", envname: "TOKEN" }],
      "trigger-rule": {
        and: [
          { match: { type: "payload-hmac-sha256", secret: "s3cr3t", parameter: { source: "header", name: "X-Hub-Signature-256" } } },
          {
            or: [
              { match: { type: "value", value: "refs/heads/main", parameter: { source: "payload", name: "ref" } } },
              { not: { match: { type: "regex", regex: "^v[0-9]+", parameter: { source: "url", name: "tag" } } } },
            ],
          },
        ],
      },
    },
  ],
  null,
  2,
);

const YAML_SEED = `- id: deploy
  execute-command: /bin/echo
  response-message: &msg ok
  include-command-output-in-response: yes
  pass-arguments-to-command:
    - source: payload
      name: ref
  trigger-rule:
    match:
      type: value
      value: 0x1F
      parameter: {source: url, name: token}
- <<: {id: other, execute-command: /bin/true}
  response-message: *msg
`;

const INSERTS = [
  "&a ",
  "*a",
  "<<: ",
  "!!binary ",
  "!!str ",
  "~",
  "null",
  ".inf",
  "-.nan",
  "1e400",
  "0x",
  "[",
  "]",
  "{",
  "}",
  '"',
  "'",
  "\n- ",
  ": ",
  "\t",
  "\ufeff",
  "---\n",
  "...\n",
  "[[[[[[[[[[[[[[[[[[[[",
  "\\u0000",
  "\x00",
  "#",
];

function mutate(rnd: Random, text: string): string {
  let s = text;
  const ops = 1 + rnd.int(4);
  for (let k = 0; k < ops; k++) {
    const at = rnd.int(s.length + 1);
    switch (rnd.int(5)) {
      case 0:
        s = s.slice(0, at);
        break;
      case 1:
        s = s.slice(0, at) + String.fromCharCode(rnd.int(128)) + s.slice(at + 1);
        break;
      case 2:
        s = s.slice(0, at) + rnd.pick(INSERTS) + s.slice(at);
        break;
      case 3:
        s = s.slice(0, at) + s.slice(at + 1 + rnd.int(20));
        break;
      default:
        s = s.slice(0, at) + s.slice(rnd.int(s.length + 1)) + s.slice(at);
    }
  }
  return s;
}

test("seeded random hooks files: each loads or is refused with a HooksFileError; the server never crashes on them", async () => {
  const seed = fuzzSeed(0x686f6f6b);
  const rnd = seeded(seed);
  const cases = fuzzCases(600);
  const started: Array<{ name: string; text: string }> = [];
  for (let i = 0; i < cases; i++) {
    const yaml = rnd.int(2) === 0;
    const name = yaml ? `case-${i}.yaml` : `case-${i}.json`;
    const text = mutate(rnd, yaml ? YAML_SEED : JSON_SEED);
    try {
      parseHooks(join(dir, name), text);
    } catch (e) {
      if (!(e instanceof HooksFileError)) assert.fail(`case ${i} (FUZZ_SEED=${seed}) ${name}: ${String(e)}\n${JSON.stringify(text)}`);
      assert.doesNotMatch(e.message, /\n/, `case ${i}: the message is one line`);
      assert.ok(!e.message.includes("s3cr3t"), `case ${i}: the message quotes a secret`);
    }
    if (i % Math.max(1, Math.floor(cases / 6)) === 0) started.push({ name, text });
  }
  for (const { name, text } of started) {
    const file = join(dir, name);
    await writeFile(file, text);
    // -validate loads the file as a start would and exits 0 (it loads) or 1 (each problem on a line).
    const r = await run(bin("webhook"), ["-hooks", file, "-ip", "127.0.0.1", "-port", String(await freePort()), "-validate"], { timeoutMs: 60_000 });
    assert.ok(r.code === 0 || r.code === 1, `${name} (FUZZ_SEED=${seed}): exit ${r.code}\n${r.stderr}`);
    assert.doesNotMatch(r.stderr + r.stdout, /\n\s+at .+:\d+:\d+\)?\n/, `${name}: a stack trace`);
  }
});
