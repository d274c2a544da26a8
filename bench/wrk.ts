// Load-generation plumbing for benchmarks: run wrk, parse its report, and read the peak RSS of a
// process tree from /proc.
import { execFile, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";

export interface WrkResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  socketErrors: number;
}

export interface WrkOptions {
  connections: number;
  threads: number;
  seconds: number;
  method?: string;
  body?: string;
  contentType?: string;
  /** Run wrk under `taskset -c <cpus>`. */
  cpus?: string;
}

/** True when wrk is on PATH. */
export function haveWrk(): boolean {
  return spawnSync("wrk", ["--version"]).error === undefined;
}

function luaScript(opts: WrkOptions): string {
  const file = join(tmpdir(), `wrk-${process.pid}-${Date.now()}.lua`);
  const lines = [`wrk.method = ${JSON.stringify(opts.method ?? "POST")}`];
  if (opts.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(opts.body)}`);
  if (opts.contentType) lines.push(`wrk.headers["Content-Type"] = ${JSON.stringify(opts.contentType)}`);
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

export function parseWrk(out: string): WrkResult {
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? "0");
  const se = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p50Ms: toMs(/\n\s+50%\s+(\S+)/.exec(out)?.[1] ?? ""),
    p99Ms: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ""),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: se ? se.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

export async function runWrk(url: string, opts: WrkOptions): Promise<WrkResult> {
  const script = luaScript(opts);
  const args = ["-t", String(opts.threads), "-c", String(opts.connections), "-d", `${opts.seconds}s`, "--latency", "-s", script, url];
  const [cmd, argv] = opts.cpus ? ["taskset", ["-c", opts.cpus, "wrk", ...args]] : ["wrk", args];
  const out = await new Promise<string>((resolve, reject) =>
    execFile(cmd, argv, { timeout: (opts.seconds + 30) * 1000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  return parseWrk(out);
}

/** The process and all its descendants, from /proc. */
export function processTree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parent) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/**
 * CPU time used so far by a process tree, in µs: `own` is user+system of the live processes,
 * `children` what the commands they already reaped used (cutime+cstime).
 */
export function treeCpuUs(root: number): { own: number; children: number } {
  let own = 0;
  let children = 0;
  for (const pid of processTree(root)) {
    try {
      const f = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
      own += (Number(f[11]) + Number(f[12])) * 10_000;
      children += (Number(f[13]) + Number(f[14])) * 10_000;
    } catch {
      // gone
    }
  }
  return { own, children };
}

/** Sum of VmHWM (peak resident set) over a process tree, in MiB. Short-lived commands are skipped. */
export function peakRssMiB(root: number): number {
  let kib = 0;
  for (const pid of processTree(root)) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      const comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
      if (m && comm !== "true") kib += Number(m[1]);
    } catch {
      // gone
    }
  }
  return Math.round(kib / 102.4) / 10;
}

/** Resolves once something accepts connections on 127.0.0.1:port. */
export async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
