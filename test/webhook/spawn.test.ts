// Starting commands, both ways the server can: through the posix_spawn helper (when `prepare`
// built it) and through child_process.spawn (WEBHOOK_SPAWN_HELPER=off). Each way must give a
// command stdout and stderr combined in write order, report how it ended and why it could not
// start in Go's words, and kill its whole process group on shutdown.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { eventually, processAlive, removeDir, repoRoot, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const helperBuilt = existsSync(join(repoRoot, "dist", "native", "spawn-helper"));

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
        sh("stream", `echo first; n=0; while [ ! -e ${join(dir, "gate")} ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done; echo second >&2; exit 3`, {
          "stream-command-output": true,
        }),
        sh("stream-long", `echo start; i=0; while [ $i -lt 15 ]; do sleep 0.1; echo $i; i=$((i + 1)); done; echo done > ${join(dir, "stream-long-done")}`, {
          "stream-command-output": true,
        }),
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
        await eventually(() => helpers.every((pid) => !processAlive(pid)), 10_000);
        const r = await send(`${s.base}/hooks/big`);
        assert.equal(r.status, 200);
        assert.equal(r.text.length, 300_006);
      });
    }

    test("stream-command-output: the first line arrives while the command still runs; a failure ends the stream with a last line", async () => {
      const sock = connect(s.port, "127.0.0.1");
      let got = "";
      sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
      await new Promise((r) => sock.once("connect", r));
      sock.write("GET /hooks/stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      // The command waits for the gate, which is opened only once its first line has arrived.
      await eventually(() => got.includes("first\n"), 10_000);
      assert.match(got, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(got, /Transfer-Encoding: chunked\r\n/);
      assert.doesNotMatch(got, /second/);
      await writeFile(join(dir, "gate"), "");
      await new Promise((r) => sock.once("close", r));
      assert.ok(got.endsWith("\r\n0\r\n\r\n"), JSON.stringify(got.slice(-20)));
      let chunked = got.slice(got.indexOf("\r\n\r\n") + 4);
      let body = "";
      for (;;) {
        const eol = chunked.indexOf("\r\n");
        const size = parseInt(chunked.slice(0, eol), 16);
        if (size === 0) break;
        body += chunked.slice(eol + 2, eol + 2 + size);
        chunked = chunked.slice(eol + 2 + size + 2);
      }
      assert.equal(body, "first\nsecond\nthe command failed: exit status 3\n");
    });

    test("a client that leaves in the middle of a stream: the command still finishes, the server carries on", async () => {
      const sock = connect(s.port, "127.0.0.1");
      let got = "";
      sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
      await new Promise((r) => sock.once("connect", r));
      sock.write("GET /hooks/stream-long HTTP/1.1\r\nHost: x\r\n\r\n");
      await eventually(() => got.includes("start\n"), 10_000);
      sock.destroy();
      await eventually(() => existsSync(join(dir, "stream-long-done")), 15_000);
      const r = await send(`${s.base}/`);
      assert.equal(r.status, 200);
    });

    test("shutdown kills a running command's whole process group after -shutdown-timeout", async () => {
      const answer = send(`${s.base}/hooks/group`, { timeoutMs: 20_000 }).catch(() => undefined);
      const file = join(dir, "grandchild");
      await eventually(async () => (await readFile(file, "utf8").catch(() => "")).trim() !== "", 10_000);
      const grandchild = Number((await readFile(file, "utf8")).trim());
      assert.ok(processAlive(grandchild));
      s.proc.child.kill("SIGTERM");
      assert.equal(await s.proc.exited, 0);
      await eventually(() => !processAlive(grandchild), 10_000);
      await answer;
    });
  });
}
