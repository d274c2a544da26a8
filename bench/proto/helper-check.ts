// Checks that the C spawn helper hands a command its argv, env and cwd, captures stdout and
// stderr combined in order, and reports exit codes, signals and spawn failures.
//   node dist/bench/proto/helper-check.js   (needs /tmp/spawn-helper or SPAWN_HELPER)
import assert from "node:assert/strict";
import { makeSpawner } from "./spawners.js";

const s = makeSpawner("helper-c");
const script = 'echo "argv:$*"; echo "env:$HOOK_A"; pwd; echo err >&2; echo out; exit 3';
const r = await s.run("/bin/sh", ["-c", script, "sh", "one", "two words"], { cwd: "/usr", env: { HOOK_A: "x=y" } });
assert.equal(r.code, 3);
assert.equal(r.output.toString(), "argv:one two words\nenv:x=y\n/usr\nerr\nout\n");
const k = await s.run("/bin/sh", ["-c", "kill -9 $$"], { cwd: "/", env: {} });
assert.deepEqual([k.code, k.signal], [null, "SIGKILL"]);
await assert.rejects(s.run("/nonexistent/cmd", [], { cwd: "/", env: {} }), /errno 2/);
await assert.rejects(s.run("/bin/true", [], { cwd: "/nonexistent", env: {} }), /errno 2/);
const big = await s.run("/bin/sh", ["-c", "head -c 1000000 /dev/zero"], { cwd: "/", env: {} });
assert.equal(big.output.length, 1_000_000);
const many = await Promise.all(
  Array.from({ length: 200 }, (_, i) => s.run("/bin/sh", ["-c", `echo ${i}`], { cwd: "/", env: {} })),
);
many.forEach((m, i) => assert.equal(m.output.toString(), `${i}\n`));
console.log("spawn helper: argv, env, cwd, combined output order, exit code, signal, ENOENT, 1 MB output, 200 parallel: ok");
process.exit(0);
