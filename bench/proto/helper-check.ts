// Checks that the C spawn helper hands a command its argv, env and cwd, captures stdout and
// stderr combined in order, and reports exit codes, signals and spawn failures.
//   node dist/bench/proto/helper-check.js   (needs /tmp/spawn-helper or SPAWN_HELPER)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
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
// Kill frame: SIGTERM to the command's process group reaches a grandchild too.
const helper = spawn(process.env.SPAWN_HELPER ?? "/tmp/spawn-helper", [], { stdio: ["pipe", "pipe", "inherit"] });
const frame = (type: string, id: number, payload: Buffer): Buffer => {
  const head = Buffer.alloc(9);
  head.writeUInt32LE(5 + payload.length, 0);
  head[4] = type.charCodeAt(0);
  head.writeUInt32LE(id, 5);
  return Buffer.concat([head, payload]);
};
const counts = Buffer.alloc(8);
counts.writeUInt32LE(3, 0);
counts.writeUInt32LE(0, 4);
const killScript = "sleep 30 & echo $!; wait";
helper.stdin.write(frame("S", 7, Buffer.concat([counts, Buffer.from(`/\0/bin/sh\0sh\0-c\0${killScript}\0`)])));
let got = Buffer.alloc(0);
const grandchild = await new Promise<number>((resolve) =>
  helper.stdout.on("data", (d: Buffer) => {
    got = Buffer.concat([got, d]);
    const m = /(\d+)\n/.exec(got.subarray(9).toString());
    if (m) resolve(Number(m[1]));
  }),
);
const sig = Buffer.alloc(4);
sig.writeInt32LE(15, 0);
helper.stdin.write(frame("K", 7, sig));
await new Promise((r) => setTimeout(r, 300));
const last = got.subarray(got.length - 13);
assert.equal(String.fromCharCode(last[4]), "X");
assert.equal(last.readInt32LE(9), -15);
// Gone, or a zombie waiting for init to reap it (this machine's init is slow to).
const state = (() => {
  try {
    return readFileSync(`/proc/${grandchild}/stat`, "utf8").split(") ")[1][0];
  } catch {
    return "gone";
  }
})();
assert.ok(state === "gone" || state === "Z", `grandchild ${grandchild} still running (state ${state})`);
helper.stdin.end();
console.log("spawn helper: argv, env, cwd, combined output order, exit code, signal, ENOENT, 1 MB output, 200 parallel, kill of the process group: ok");
process.exit(0);
