// A command dies with its instance (issue 38 item 2): kill -9 the real bin/webhook while a hook's
// command runs, and the command's whole process group is gone soon after, whichever way it was
// started (spawn helper, child_process); with -queue, the job redelivered to another instance
// never runs beside an orphan of its first attempt.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, repoRoot, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";
import { startNats } from "./fixtures/nats.js";

const helperBuilt = existsSync(join(repoRoot, "dist", "native", "spawn-helper"));

interface Proc {
  pid: number;
  comm: string;
  ppid: number;
  pgrp: number;
}

/** The live (not zombie) processes, from /proc. */
function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      if (fields[0] === "Z") continue;
      out.push({ pid: Number(name), comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(") ")), ppid: Number(fields[1]), pgrp: Number(fields[2]) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The live processes in process group `pgid`. */
const groupMembers = (pgid: number): number[] =>
  processes()
    .filter((p) => p.pgrp === pgid)
    .map((p) => p.pid);

/** Ends a group this test started, if a failure left it behind. */
function cleanUp(pgids: number[]): void {
  for (const pgid of pgids) if (groupMembers(pgid).length > 0) process.kill(-pgid, "SIGKILL");
}

/** A hook whose command (a group of sh and a background sleep) appends "start <pid> $INSTANCE" to `log`. */
function sleeper(id: string, log: string, extra: Record<string, unknown> = {}): unknown {
  return {
    id,
    "execute-command": "/bin/sh",
    "pass-arguments-to-command": [
      { source: "string", name: "-c" },
      { source: "string", name: 'sleep 30 & echo "start $$ $INSTANCE" >> "$1"; wait' },
      { source: "string", name: "sh" },
      { source: "string", name: log },
    ],
    ...extra,
  };
}

async function starts(log: string): Promise<{ pid: number; instance: string }[]> {
  const text = await readFile(log, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split(" "))
    .map(([, pid, instance]) => ({ pid: Number(pid), instance: instance ?? "" }));
}

describe("a command dies with its instance", () => {
  const started: number[] = [];
  after(() => cleanUp(started));

  for (const mode of ["helper", "child_process"] as const) {
    test(`kill -9 of the server ends its command's whole process group (${mode})`, {
      skip: mode === "helper" && !helperBuilt ? "the spawn helper was not built" : false,
    }, async () => {
      const dir = await tempDir("webhook-orphan-");
      const log = join(dir, "log");
      const env = { ...process.env, INSTANCE: "a", WEBHOOK_SPAWN_HELPER: mode === "helper" ? "on" : "off" };
      const s = await startServer(["-hooks", await writeHooks(dir, [sleeper("sleep", log)])], { env });
      try {
        const answer = send(`${s.base}/hooks/sleep`).catch(() => undefined);
        const { pid } = (await eventually(async () => (await starts(log))[0], 10_000))!;
        started.push(pid);
        assert.equal(groupMembers(pid).length, 2, "sh and sleep run in the command's group");
        s.proc.child.kill("SIGKILL");
        await s.proc.exited;
        await answer;
        await eventually(() => groupMembers(pid).length === 0, 15_000);
      } finally {
        await s.stop();
        await removeDir(dir);
      }
    });
  }

  /** Starts a server whose command runs through the spawn helper; returns it, the command's pid and the helper's. */
  async function withCommand(dir: string, args: string[] = []): Promise<{ s: Server; pid: number; helper: number }> {
    const log = join(dir, "log");
    const env = { ...process.env, INSTANCE: "a", WEBHOOK_SPAWN_HELPER: "on" };
    const s = await startServer(["-hooks", await writeHooks(dir, [sleeper("sleep", log)]), ...args], { env });
    void send(`${s.base}/hooks/sleep`).catch(() => undefined);
    const { pid } = (await eventually(async () => (await starts(log))[0], 10_000))!;
    started.push(pid);
    const helper = processes().find((p) => p.ppid === s.proc.child.pid && p.comm === "spawn-helper")!.pid;
    return { s, pid, helper };
  }

  const helperOnly = { skip: helperBuilt ? false : "the spawn helper was not built" };

  test(
    "signals sent to the server's whole process group (Ctrl-C) leave the spawn helper to the server, which ends the command at shutdown",
    helperOnly,
    async () => {
      const dir = await tempDir("webhook-orphan-group-");
      const { s, pid, helper } = await withCommand(dir, ["-shutdown-timeout", "100ms"]);
      try {
        for (const signal of ["SIGINT", "SIGHUP", "SIGQUIT", "SIGTERM"] as const) process.kill(helper, signal);
        s.proc.child.kill("SIGINT");
        assert.equal(await s.proc.exited, 0);
        await eventually(() => groupMembers(pid).length === 0, 15_000);
      } finally {
        await s.stop();
        await removeDir(dir);
      }
    },
  );

  test("kill -9 of the spawn helper ends its commands; the server goes on", helperOnly, async () => {
    const dir = await tempDir("webhook-orphan-helper-");
    const { s, pid, helper } = await withCommand(dir);
    try {
      process.kill(helper, "SIGKILL");
      await eventually(() => groupMembers(pid).length === 0, 15_000);
      assert.equal((await send(`${s.base}/`, { method: "GET" })).status, 200);
    } finally {
      await s.stop();
      await removeDir(dir);
    }
  });

  test("-queue: the job redelivered after kill -9 does not run beside the first attempt", async () => {
    const dir = await tempDir("webhook-orphan-queue-");
    const nats = await startNats();
    const log = join(dir, "log");
    const servers: Server[] = [];
    try {
      const hooks = join(dir, "hooks.json");
      await writeFile(hooks, JSON.stringify([sleeper("sleep", log)]));
      const instance = async (name: string): Promise<Server> => {
        const s = await startServer(["-hooks", hooks, "-queue", nats.url, "-queue-ack-wait", "2s"], { env: { ...process.env, INSTANCE: name } });
        servers.push(s);
        return s;
      };
      const a = await instance("a");
      assert.equal((await send(`${a.base}/hooks/sleep`)).status, 200);
      const first = (await eventually(async () => (await starts(log))[0], 10_000))!;
      started.push(first.pid);
      a.proc.child.kill("SIGKILL");
      await a.proc.exited;
      await instance("b");
      const second = (await eventually(async () => (await starts(log)).find((x) => x.instance === "b"), 20_000))!;
      started.push(second.pid);
      assert.deepEqual(groupMembers(first.pid), [], "the first attempt still runs beside the second");
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await nats.close();
      await removeDir(dir);
    }
  });
});
