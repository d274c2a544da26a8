// Measures one prototype: starts the server command, warms up, runs wrk, prints one table row:
// | name | case | conns | req/s | p50 ms | p99 ms | non-2xx | socket errors | peak RSS MiB |
//   server CPU µs/request | command CPU µs/request |
//   node dist/bench/proto/measure.js <name> <a|b|ok> <connections> <seconds> -- <server command...>
// Env WRK_THREADS (default 2), WRK_CPUS (taskset list for wrk), PORT (default 9100).
import { spawn } from "node:child_process";
import { peakRssMiB, runWrk, treeCpuUs, waitForPort } from "../wrk.js";

const [name, kind, conns, secs, sep, ...cmd] = process.argv.slice(2);
if (sep !== "--" || cmd.length === 0) throw new Error("usage: measure <name> <a|b|ok> <conns> <secs> -- <cmd...>");
const port = Number(process.env.PORT ?? "9100");
const path = kind === "b" ? "/hooks/run-true" : kind === "ok" ? "/" : "/hooks/deploy?secret=wrong";
const body = '{"ref":"refs/heads/main","repository":{"name":"photos"},"pusher":{"name":"ann"}}';

const server = spawn(cmd[0], cmd.slice(1).map((a) => a.replace("{port}", String(port))), { stdio: "inherit" });
try {
  await waitForPort(port);
  const opts = {
    connections: Number(conns),
    threads: Number(process.env.WRK_THREADS ?? "2"),
    body,
    contentType: "application/json",
    cpus: process.env.WRK_CPUS,
  };
  await runWrk(`http://127.0.0.1:${port}${path}`, { ...opts, seconds: 2 });
  const cpu0 = treeCpuUs(server.pid!);
  const r = await runWrk(`http://127.0.0.1:${port}${path}`, { ...opts, seconds: Number(secs) });
  const cpu1 = treeCpuUs(server.pid!);
  // CPU per request: server processes (and helpers), and, for (b), the commands they reaped.
  const perReq = (us: number) => (r.requests > 0 ? (us / r.requests).toFixed(1) : "-");
  const rss = peakRssMiB(server.pid!);
  console.log(
    `| ${name} | ${kind} | ${conns} | ${Math.round(r.rps)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.non2xx} | ${r.socketErrors} | ${rss} | ${perReq(cpu1.own - cpu0.own)} | ${perReq(cpu1.children - cpu0.children)} |`,
  );
} finally {
  server.kill("SIGTERM");
}
