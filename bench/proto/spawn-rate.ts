// Spawn throughput without HTTP: keeps N commands in flight through one spawner for a few seconds.
//   node dist/bench/proto/spawn-rate.js <spawner> [inFlight=8] [seconds=5]
// Prints spawns/s; per spawn the CPU of the parent, of the helpers, and of the commands
// (helper and command CPU are whole-run totals, warm-up included); peak RSS of parent plus helpers.
import { makeSpawner } from "./spawners.js";
import { readFileSync } from "node:fs";
import { peakRssMiB, processTree } from "../wrk.js";

const [kind = "pipes", inFlightText = "8", secondsText = "5"] = process.argv.slice(2);
const spawner = makeSpawner(kind);
const inFlight = Number(inFlightText);
const until = Date.now() + Number(secondsText) * 1000;
let done = 0;
let failures = 0;
await spawner.run("/bin/true", [], { cwd: "/tmp", env: {} }); // warm the helper
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
async function lane(): Promise<void> {
  while (Date.now() < until) {
    const r = await spawner.run("/bin/true", [], { cwd: "/tmp", env: { HOOK_X: "1" } });
    if (r.code === 0) done++;
    else failures++;
  }
}
await Promise.all(Array.from({ length: inFlight }, lane));
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
// CPU of the helpers (utime+stime) and of the commands they reaped (cutime+cstime), in µs.
// For in-process spawners the commands are the server's own children.
const ticks = (pid: number, from: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[from]) + Number(f[from + 1])) * 10_000;
};
let helperUs = 0;
let childUs = ticks(process.pid, 13);
for (const pid of processTree(process.pid).slice(1)) {
  try {
    helperUs += ticks(pid, 11);
    childUs += ticks(pid, 13);
  } catch {
    // a command that just ended
  }
}
const rss = peakRssMiB(process.pid);
console.log(
  `| ${kind} | ${inFlight} | ${Math.round(done / secs)} | ${((cpu.user + cpu.system) / done).toFixed(0)} µs | ${(helperUs / done).toFixed(0)} µs | ${(childUs / done).toFixed(0)} µs | ${failures} | ${rss} |`,
);
process.exit(0);
