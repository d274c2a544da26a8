// `npm run bench -- webhook`: throughput of the real hook server (bin/webhook) under wrk.
//   (a) POST to a hook whose url `secret` does not match its trigger rule, 32 connections;
//   (b) POST to a hook that runs /bin/true with include-command-output-in-response, 8 connections;
//   (c) as (a), but the rule is a regex (RE2, re2js) that does not match, 32 connections;
//   (d) an ip-whitelist whose ip-list-file holds 50 000 ranges, none the client's, 32 connections.
// Then (a) and (b) again with -jobs (every execution a job, kept in memory): the cost of jobs.
// Also measures, in the same run, a bare node:http server answering "ok" (the machine's ceiling
// for one Node process), because this shared 2-core machine's speed varies by 2x from minute to minute.
// Every row also gives the server's CPU per request (with its spawn helpers) and its commands'
// (fork, exec and run of /bin/true), from /proc. Before the cases: what fork+exec+wait of /bin/true
// costs on this machine (from /bin/sh, a small process). After them, with WEBHOOK_REFERENCE: (b),
// and (e) a hook whose command costs about 5 ms of CPU (what starting /bin/true costs where that is
// slow), with ours and the reference each held to half of one core by a cgroup v1 cpu group
// (commands included; WEBHOOK_BENCH_CAPPED=0 skips it) after a warm-up without the cap,
// alternating, best of 3: where CPU, mostly the commands', sets the rate.
// Environment:
//   WEBHOOK_BENCH_SECONDS  measured seconds per case (default 10; a 3 s warm-up precedes each)
//   WEBHOOK_BENCH_CMD      server command instead of bin/webhook; {port} and {hooks} are replaced
//                          (e.g. another build: "/work/main/bin/webhook -hooks {hooks} -ip 127.0.0.1 -port {port}")
//   WEBHOOK_BENCH_CEILING  "0" skips the ceiling case
//   WEBHOOK_BENCH_JOBS     "0" skips the -jobs cases
//   WEBHOOK_BENCH_CAPPED   "0" skips the capped case (it needs WEBHOOK_REFERENCE)
//   WEBHOOK_BENCH_WARMUP   seconds of uncapped load before a server is capped (default 10; 0: capped from its start)
//   WEBHOOK_REFERENCE      path of a Go adnanh/webhook binary: measured in the same run with the
//                          same hooks, and each case printed with ours / reference
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, freePort, removeDir, repoRoot, tempDir } from "../test/helpers.js";
import { cpuCap, NO_CGROUP } from "./cgroup.js";
import { haveWrk, peakRssMiB, processTree, runWrk, treeCpuUs, waitForPort, type WrkResult } from "./wrk.js";

const body = '{"ref":"refs/heads/main","repository":{"name":"photos"},"pusher":{"name":"ann"}}';

/** The hooks; `ipList` is the path of the ip-list-file of case (d). */
const hooks = (ipList: string): unknown[] => [
  {
    id: "deploy",
    "execute-command": "/bin/true",
    "trigger-rule": { match: { type: "value", value: "s3cret", parameter: { source: "url", name: "secret" } } },
  },
  { id: "run-true", "execute-command": "/bin/true", "include-command-output-in-response": true },
  {
    id: "deploy-re",
    "execute-command": "/bin/true",
    "trigger-rule": { match: { type: "regex", regex: "^(?i)refs/heads/(main|release-[0-9]+)$", parameter: { source: "url", name: "ref" } } },
  },
  { id: "deploy-ips", "execute-command": "/bin/true", "trigger-rule": { match: { type: "ip-whitelist", "ip-list-file": ipList } } },
  {
    id: "run-slow",
    "execute-command": "/bin/sh",
    "pass-arguments-to-command": [
      { source: "string", name: "-c" },
      { source: "string", name: `i=0; while [ $i -lt ${SLOW_LOOPS} ]; do i=$((i+1)); done` },
    ],
    "include-command-output-in-response": true,
  },
];

/** Turns of the shell loop of the hook run-slow: about 5 ms of CPU here, what starting /bin/true costs on a machine where that is slow. */
export const SLOW_LOOPS = 2000;

/** 50 000 ranges of 10.0.0.0/8, none holding 127.0.0.1. */
const ipListText = Array.from({ length: 50_000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/28`).join("\n") + "\n";

interface Case {
  name: string;
  path: string;
  connections: number;
  target: number;
  expect: { status: number; body: string };
}

const cases: Case[] = [
  {
    name: "(a) url secret mismatch",
    path: "/hooks/deploy?secret=wrong",
    connections: 32,
    target: 25_000,
    expect: { status: 200, body: "Hook rules were not satisfied." },
  },
  { name: "(b) /bin/true + output", path: "/hooks/run-true", connections: 8, target: 1_300, expect: { status: 200, body: "" } },
  {
    name: "(c) url regex mismatch",
    path: "/hooks/deploy-re?ref=refs/tags/v1",
    connections: 32,
    target: 25_000,
    expect: { status: 200, body: "Hook rules were not satisfied." },
  },
  {
    name: "(d) ip-list-file mismatch",
    path: "/hooks/deploy-ips",
    connections: 32,
    target: 25_000,
    expect: { status: 200, body: "Hook rules were not satisfied." },
  },
];

function startServer([program, ...args]: [string, ...string[]]): { child: ChildProcess; stderr: () => string } {
  const child = spawn(program, args, { cwd: repoRoot, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr!.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  return { child, stderr: () => err };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

/** CPU per request of a server and of the commands it ran, in ms. */
interface CpuPerRequest {
  server: number;
  commands: number;
}

/** fork+exec+wait of /bin/true from /bin/sh, `count` times: wall time and CPU (the shell's and the commands') per start, in ms. */
function execCost(count = 1000): { wallMs: number; cpuMs: number } {
  const began = process.hrtime.bigint();
  // The shell is a reaped child of this process: its CPU and its commands' count in our children's (cutime, cstime).
  const before = treeCpuUs(process.pid).children;
  spawnSync("/bin/sh", ["-c", `i=0; while [ $i -lt ${count} ]; do /bin/true; i=$((i+1)); done`]);
  return { wallMs: Number(process.hrtime.bigint() - began) / 1e6 / count, cpuMs: (treeCpuUs(process.pid).children - before) / 1000 / count };
}

function row(name: string, r: WrkResult, rss: number, target: number | null, cpu?: CpuPerRequest): string {
  const verdict = target === null ? "" : r.rps >= target && r.non2xx === 0 ? "meets target" : "BELOW target";
  return [
    name.padEnd(26),
    `${Math.round(r.rps)}`.padStart(7) + " req/s",
    `p50 ${r.p50Ms.toFixed(2)} ms`.padStart(14),
    `p99 ${r.p99Ms.toFixed(2)} ms`.padStart(14),
    `non-2xx ${r.non2xx}`.padStart(12),
    `sock-err ${r.socketErrors}`.padStart(12),
    `peak RSS ${rss} MiB`.padStart(19),
    cpu ? `CPU/req ${cpu.server.toFixed(2)} ms + commands ${cpu.commands.toFixed(2)} ms`.padStart(38) : "",
    target === null ? "" : `  target ${target}: ${verdict}`,
  ].join(" ");
}

/** wrk's result after a warm-up, and, given the server's pid, its CPU per request and its commands'. */
async function measure(url: string, connections: number, seconds: number, pid?: number): Promise<{ result: WrkResult; cpu?: CpuPerRequest }> {
  const opts = { connections, threads: 2, body, contentType: "application/json" };
  await runWrk(url, { ...opts, seconds: 3 });
  const before = pid === undefined ? undefined : treeCpuUs(pid);
  const result = await runWrk(url, { ...opts, seconds });
  if (pid === undefined || before === undefined || result.requests === 0) return { result };
  const after = treeCpuUs(pid);
  // The spawn helpers are live children (own); the commands are reaped by the helpers or the server (children).
  return { result, cpu: { server: (after.own - before.own) / 1000 / result.requests, commands: (after.children - before.children) / 1000 / result.requests } };
}

async function ceiling(seconds: number): Promise<void> {
  const port = await freePort();
  const code = "require('http').createServer((q,s)=>{q.resume();s.writeHead(200,{'content-type':'text/plain'}).end('ok')})" + `.listen(${port},'127.0.0.1')`;
  const { child } = startServer([process.execPath, "-e", code]);
  try {
    await waitForPort(port);
    const { result: r } = await measure(`http://127.0.0.1:${port}/`, 32, seconds);
    console.log(row("ceiling: node:http 'ok'", r, peakRssMiB(child.pid!), null));
  } finally {
    await stopServer(child);
  }
}

/** Starts one server, measures every case against it, prints a row per case; the rates by case name (NaN when it failed). */
async function measureServer(label: string, command: [string, ...string[]], port: number, seconds: number, only: Case[] = cases): Promise<Map<string, number>> {
  const rates = new Map<string, number>();
  console.log(`${label}: ${command.join(" ")}`);
  const server = startServer(command);
  try {
    const exited = new Promise<never>((_, reject) =>
      server.child.once("close", (code, signal) =>
        reject(new Error(`the server exited (${code ?? signal}) before listening; its stderr:\n${server.stderr()}`)),
      ),
    );
    exited.catch(() => {});
    await Promise.race([waitForPort(port), exited]);
    for (const c of only) {
      const url = `http://127.0.0.1:${port}${c.path}`;
      const probe = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } });
      const text = await probe.text();
      if (probe.status !== c.expect.status || text !== c.expect.body) {
        console.log(`${label} ${c.name}: unexpected answer ${probe.status} ${JSON.stringify(text)} (want ${c.expect.status} ${JSON.stringify(c.expect.body)})`);
        rates.set(c.name, NaN);
        continue;
      }
      const { result: r, cpu } = await measure(url, c.connections, seconds, server.child.pid!);
      rates.set(c.name, r.non2xx > 0 ? NaN : r.rps);
      console.log(row(`${label} ${c.name}, ${c.connections} conns`, r, peakRssMiB(server.child.pid!), label === "ours" ? c.target : null, cpu));
    }
  } finally {
    await stopServer(server.child);
  }
  return rates;
}

/** Share of one core each server gets in the capped case. */
const CAP_SHARE = 0.5;
/** Seconds of uncapped load each server gets before it is capped (WEBHOOK_BENCH_WARMUP). */
const CAP_WARMUP_S = Number(process.env.WEBHOOK_BENCH_WARMUP ?? "10");

/** The capped cases: (b), and a command that costs as much CPU as starting one does where that is slow. */
const cappedCases: Case[] = [
  cases[1]!,
  { name: "(e) a 5 ms command + output", path: "/hooks/run-slow", connections: 8, target: 0, expect: { status: 200, body: "" } },
];

/**
 * (b) with ours and the reference each in a cgroup of its own held to CAP_SHARE of one core,
 * commands included: alternating, best of 3. Prints ours / reference.
 */
async function capped(
  c: Case,
  ours: (port: number) => [string, ...string[]],
  reference: (port: number) => [string, ...string[]],
  seconds: number,
): Promise<void> {
  const best = { ours: 0, reference: 0 };
  for (let round = 0; round < 3; round++) {
    const order = round % 2 === 0 ? (["ours", "reference"] as const) : (["reference", "ours"] as const);
    for (const label of order) {
      const cap = await cpuCap(`webhook-bench-${process.pid}-${label}`, CAP_SHARE);
      if (!cap) {
        console.log(`no capped case: ${NO_CGROUP}`);
        return;
      }
      const port = await freePort();
      const server = startServer((label === "ours" ? ours : reference)(port));
      try {
        await waitForPort(port);
        // Warmed up uncapped, then capped with everything it started (our spawn helpers): the steady
        // state a long-running server is in. Capped from the start, ours spent its first seconds
        // compiling (V8's JIT), which the reference, compiled ahead, never pays.
        const url = `http://127.0.0.1:${port}${c.path}`;
        if (CAP_WARMUP_S > 0) await runWrk(url, { connections: c.connections, threads: 2, body, contentType: "application/json", seconds: CAP_WARMUP_S });
        // A command may end between the listing and its move.
        for (const pid of processTree(server.child.pid!)) await cap.add(pid).catch(() => undefined);
        const { result: r, cpu } = await measure(url, c.connections, seconds, server.child.pid!);
        if (r.non2xx === 0) best[label] = Math.max(best[label], r.rps);
        console.log(row(`${label} ${c.name.slice(0, 3)} capped, round ${round + 1}`, r, peakRssMiB(server.child.pid!), null, cpu));
      } finally {
        await stopServer(server.child);
        await cap.remove();
      }
    }
  }
  console.log(
    `${c.name} each server held to ${CAP_SHARE} of a core, best of 3: ours ${Math.round(best.ours)} req/s, reference ${Math.round(best.reference)} req/s: ${(best.ours / best.reference).toFixed(2)}x`,
  );
}

export async function run(): Promise<void> {
  if (!haveWrk()) {
    console.error("wrk is not installed; this benchmark needs it. Install it with: apt-get install wrk");
    process.exit(1);
  }
  const seconds = Number(process.env.WEBHOOK_BENCH_SECONDS ?? "10");
  const dir = await tempDir("webhook-bench-");
  const hooksFile = join(dir, "hooks.json");
  await writeFile(join(dir, "ips.txt"), ipListText);
  await writeFile(hooksFile, JSON.stringify(hooks(join(dir, "ips.txt")), null, 2));
  const port = await freePort();
  const custom = process.env.WEBHOOK_BENCH_CMD;
  const [program = bin("webhook"), ...args] = custom
    ? custom
        .split(/\s+/)
        .filter(Boolean)
        .map((a) => a.replace("{port}", String(port)).replace("{hooks}", hooksFile))
    : [bin("webhook"), "-hooks", hooksFile, "-ip", "127.0.0.1", "-port", String(port)];
  const command: [string, ...string[]] = [program, ...args];
  const reference = process.env.WEBHOOK_REFERENCE;
  console.log(`load: wrk -t2 (unpinned, same machine), POST ${body.length}-byte JSON body, ${seconds} s after a 3 s warm-up`);
  const exec = execCost();
  console.log(`fork+exec+wait of /bin/true from /bin/sh here: ${exec.wallMs.toFixed(2)} ms wall, ${exec.cpuMs.toFixed(2)} ms CPU per command`);
  let failed = false;
  try {
    if (process.env.WEBHOOK_BENCH_CEILING !== "0") await ceiling(seconds);
    const ours = await measureServer("ours", command, port, seconds);
    for (const c of cases) if (!((ours.get(c.name) ?? NaN) >= c.target)) failed = true;
    if (process.env.WEBHOOK_BENCH_JOBS !== "0" && !custom) {
      const jobsPort = await freePort();
      const jobsCommand: [string, ...string[]] = [bin("webhook"), "-hooks", hooksFile, "-ip", "127.0.0.1", "-port", String(jobsPort), "-jobs"];
      const withJobs = await measureServer("ours -jobs", jobsCommand, jobsPort, seconds, cases.slice(0, 2));
      console.log("-jobs / without:");
      for (const c of cases.slice(0, 2)) console.log(`  ${c.name.padEnd(26)} ${((withJobs.get(c.name) ?? NaN) / (ours.get(c.name) ?? NaN)).toFixed(2)}x`);
    }
    if (reference) {
      const refPort = await freePort();
      const ref = await measureServer("reference", [reference, "-hooks", hooksFile, "-ip", "127.0.0.1", "-port", String(refPort)], refPort, seconds);
      console.log("ours / reference:");
      for (const c of cases) {
        const ratio = (ours.get(c.name) ?? NaN) / (ref.get(c.name) ?? NaN);
        console.log(`  ${c.name.padEnd(26)} ${Number.isFinite(ratio) ? ratio.toFixed(2) + "x" : "n/a"}${ratio < 1 ? "  (slower than the reference)" : ""}`);
      }
      if (process.env.WEBHOOK_BENCH_CAPPED !== "0" && !custom) {
        const oursAt = (p: number): [string, ...string[]] => [bin("webhook"), "-hooks", hooksFile, "-ip", "127.0.0.1", "-port", String(p)];
        for (const c of cappedCases) await capped(c, oursAt, (p) => [reference, "-hooks", hooksFile, "-ip", "127.0.0.1", "-port", String(p)], seconds);
      }
    }
  } finally {
    await removeDir(dir);
  }
  if (failed) console.log("webhook: at least one case is below its target (see above); the machine is noisy, so repeat before concluding.");
}
