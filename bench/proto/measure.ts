// Measures one prototype: starts the server command, warms up, runs wrk, prints one table row.
//   node dist/bench/proto/measure.js <name> <a|b|ok> <connections> <seconds> -- <server command...>
// Env WRK_THREADS (default 2), WRK_CPUS (taskset list for wrk), PORT (default 9100).
import { spawn } from "node:child_process";
import { peakRssMiB, runWrk, waitForPort } from "../wrk.js";

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
  const r = await runWrk(`http://127.0.0.1:${port}${path}`, { ...opts, seconds: Number(secs) });
  const rss = peakRssMiB(server.pid!);
  console.log(
    `| ${name} | ${kind} | ${conns} | ${Math.round(r.rps)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.non2xx} | ${r.socketErrors} | ${rss} |`,
  );
} finally {
  server.kill("SIGTERM");
}
