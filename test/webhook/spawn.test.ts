// Starting commands, both ways the server can: through the posix_spawn helper (when `prepare`
// built it) and through child_process.spawn (WEBHOOK_SPAWN_HELPER=off). Each way must give a
// command stdout and stderr combined in write order, report how it ended and why it could not
// start in Go's words, and kill its whole process group on shutdown.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, repoRoot, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const helperBuilt = existsSync(join(repoRoot, "dist", "native", "spawn-helper"));

function alive(pid: number): boolean {
  try {
    // A zombie waiting for init to reap it counts as gone.
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]![0] !== "Z";
  } catch {
    return false;
  }
}

/** The pids of a process's children, from /proc. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").split(" ").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

for (const mode of ["helper", "child_process"] as const) {
  describe(`starting commands through ${mode}`, { skip: mode === "helper" && !helperBuilt ? "the spawn helper was not built" : false }, () => {
    let dir = "";
    let s: Server;
    const env = { ...process.env, WEBHOOK_SPAWN_HELPER: mode === "helper" ? "on" : "off" };

    before(async () => {
      dir = await tempDir("webhook-spawn-");
      const noFormat = join(dir, "no-format");
      await writeFile(noFormat, "echo this file has no #! line\n");
      await chmod(noFormat, 0o755);
      const sh = (id: string, script: string, extra: Record<string, unknown> = {}) => ({
        id,
        "execute-command": "/bin/sh",
        "include-command-output-in-response": true,
        "include-command-output-in-response-on-error": true,
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: script },
        ],
        ...extra,
      });
      const hooks = await writeHooks(dir, [
        sh("order", "echo 1; echo 2 >&2; echo 3; echo 4 >&2; kill -TERM $$"),
        sh("big", "head -c 300000 /dev/zero | tr '\\0' x; echo; echo done >&2"),
        sh("fds", "ls -l /proc/self/fd"),
        { id: "no-format", "execute-command": noFormat, "include-command-output-in-response": true },
        {
          id: "nul",
          "execute-command": "/bin/echo",
          "include-command-output-in-response": true,
          "pass-arguments-to-command": [{ source: "payload", name: "a" }],
        },
        sh("group", `sleep 60 & echo $! > ${join(dir, "grandchild")}; wait`),
      ]);
      s = await startServer(["-hooks", hooks, "-verbose", "-shutdown-timeout", "1s"], { env });
    });

    after(async () => {
      await s?.stop();
      await removeDir(dir);
    });

    test("stdout and stderr arrive combined in write order; a death by signal is reported", async () => {
      const r = await send(`${s.base}/hooks/order`);
      assert.equal(r.status, 500);
      assert.equal(r.text, "1\n2\n3\n4\n");
      await s.proc.waitFor(/error occurred: signal: terminated/);
    });

    test("300 kB of output arrives whole", async () => {
      const r = await send(`${s.base}/hooks/big`);
      assert.equal(r.status, 200);
      assert.equal(r.text, "x".repeat(300_000) + "\ndone\n");
    });

    test("a command gets stdin from /dev/null and none of the server's sockets", async () => {
      const r = await send(`${s.base}/hooks/fds`);
      assert.equal(r.status, 200);
      assert.match(r.text, / 0 -> \/dev\/null\n/);
      assert.doesNotMatch(r.text, /socket:/);
    });

    test("a file the kernel cannot execute: 500 and Go's 'exec format error', nothing runs", async () => {
      const r = await send(`${s.base}/hooks/no-format`);
      assert.equal(r.status, 500);
      assert.doesNotMatch(r.text, /no #! line/);
      await s.proc.waitFor(/error occurred: fork\/exec \S+no-format: exec format error/);
    });

    test("a NUL byte in an argument: Go's 'invalid argument', nothing runs", async () => {
      const r = await send(`${s.base}/hooks/nul`, { headers: { "Content-Type": "application/json" }, body: '{"a":"x\\u0000y"}' });
      assert.equal(r.status, 500);
      await s.proc.waitFor(/error occurred: fork\/exec \/bin\/echo: invalid argument/);
    });

    if (mode === "helper") {
      test("a spawn helper that dies is replaced: the next command runs", async () => {
        const serverPid = s.proc.child.pid!;
        const helpers = childrenOf(serverPid).filter((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "spawn-helper");
        assert.ok(helpers.length > 0, "no spawn helper runs");
        for (const pid of helpers) process.kill(pid, "SIGKILL");
        await eventually(() => helpers.every((pid) => !alive(pid)), 10_000);
        const r = await send(`${s.base}/hooks/big`);
        assert.equal(r.status, 200);
        assert.equal(r.text.length, 300_006);
      });
    }

    test("shutdown kills a running command's whole process group after -shutdown-timeout", async () => {
      const answer = send(`${s.base}/hooks/group`, { timeoutMs: 20_000 }).catch(() => undefined);
      const file = join(dir, "grandchild");
      await eventually(async () => (await readFile(file, "utf8").catch(() => "")).trim() !== "", 10_000);
      const grandchild = Number((await readFile(file, "utf8")).trim());
      assert.ok(alive(grandchild));
      s.proc.child.kill("SIGTERM");
      assert.equal(await s.proc.exited, 0);
      await eventually(() => !alive(grandchild), 10_000);
      await answer;
    });
  });
}
