// Shared test plumbing: start the real programs, find free ports, make temp folders.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (tests run from dist/test, two levels below it). */
export const repoRoot = resolve(fileURLToPath(import.meta.url), "../../..");
export const bin = (name: "webhook" | "framefi-device" | "framefi"): string => join(repoRoot, "bin", name);

/**
 * A TCP port that was free a moment ago on 127.0.0.1. It is drawn from 20000–32767, below Linux's
 * ephemeral range, so that the source ports of outgoing connections and the servers that listen on
 * port 0 (FTP passive ports) cannot take it between this check and the program's own bind.
 */
/**
 * Test files run two at a time: a port one of them found free may be found free by the other before either listens
 * on it (seen: a device's FTP port taken, EADDRINUSE). Each port handed out is claimed with an exclusive file; a
 * claim older than ten minutes (a run that ended) no longer counts.
 */
const CLAIMS = join(tmpdir(), "framefi-test-ports");

async function claimPort(port: number): Promise<boolean> {
  const file = join(CLAIMS, String(port));
  await mkdir(CLAIMS, { recursive: true });
  for (let tries = 0; tries < 2; tries++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: "wx" });
      return true;
    } catch {
      const claimed = await stat(file).catch(() => undefined);
      if (claimed && Date.now() - claimed.mtimeMs < 600_000) return false;
      await rm(file, { force: true });
    }
  }
  return false;
}

export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (!(await claimPort(port))) continue;
    const free = await new Promise<boolean>((res) => {
      const srv = createServer();
      srv.once("error", () => res(false));
      srv.listen(port, "127.0.0.1", () => srv.close(() => res(true)));
    });
    if (free) return port;
  }
}

/**
 * Whether something accepts connections on 127.0.0.1:`port`. A connection is the probe: one that binds the port to
 * see whether it is taken can take it just before the server binds it.
 */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** A fresh temp folder; remove it with the returned cleanup. */
export async function tempDir(prefix = "framefi-test-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export interface RunningProgram {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves when stdout+stderr matches `pattern`; rejects after `timeoutMs` or if the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
  stop(graceMs?: number): Promise<number | string>;
}

export interface StartOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  stdin?: "ignore" | "pipe";
}

/** Starts a real program and captures its output. */
export function start(command: string, args: string[], opts: StartOptions = {}): RunningProgram {
  const child = spawn(command, args, {
    cwd: opts.cwd ?? repoRoot,
    env: opts.env ?? process.env,
    stdio: [opts.stdin ?? "ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const l of listeners) l();
  };
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    notify();
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    err += d;
    notify();
  });
  // 'close' (not 'exit'): it fires only after stdout and stderr are fully read.
  const exited = new Promise<number | string>((res) => {
    child.once("close", (code, signal) => {
      res(code ?? signal ?? -1);
      notify();
    });
  });
  let exitCode: number | string | undefined;
  void exited.then((c) => (exitCode = c));

  const waitFor = (pattern: RegExp, timeoutMs = 10_000): Promise<RegExpMatchArray> =>
    new Promise((res, rej) => {
      const check = (): void => {
        const m = (out + err).match(pattern);
        if (m) {
          done();
          res(m);
        } else if (exitCode !== undefined) {
          done();
          rej(new Error(`${command} exited (${exitCode}) before printing ${pattern}\nstdout:\n${out}\nstderr:\n${err}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        rej(new Error(`timed out waiting for ${pattern} from ${command}\nstdout:\n${out}\nstderr:\n${err}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const stop = async (graceMs = 5_000): Promise<number | string> => {
    if (exitCode !== undefined) return exitCode;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };

  return { child, stdout: () => out, stderr: () => err, waitFor, exited, stop };
}

/** Runs a program to completion and returns its exit code and output. */
export async function run(
  command: string,
  args: string[],
  opts: StartOptions & { input?: string; timeoutMs?: number } = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = start(command, args, { ...opts, stdin: opts.input === undefined ? "ignore" : "pipe" });
  if (opts.input !== undefined) p.child.stdin!.end(opts.input);
  const timer = setTimeout(() => p.child.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/**
 * `promise`'s value, or `otherwise` once `ms` pass first. The timer is cleared either way: a bare
 * `Promise.race` with `setTimeout` keeps the test file's process alive until the timer fires.
 */
export async function within<T, U>(promise: Promise<T>, ms: number, otherwise: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<U>((resolve) => (timer = setTimeout(() => resolve(otherwise), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; resolves with that value. */
export async function eventually<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 5_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A running `bin/framefi-device` on free ports with its own card and state folders. */
export interface RunningDevice {
  program: RunningProgram;
  /** Base URL of the web API, without a trailing slash. */
  url: string;
  port: number;
  setupPort: number;
  ftpPort: number;
  card: string;
  state: string;
  /** Stops the process; removes the card and state folders unless they were given. */
  stop(): Promise<void>;
}

export interface DeviceOptions {
  /** Extra command-line arguments, after the ones startDevice sets. */
  args?: string[];
  /** Extra environment variables. */
  env?: NodeJS.ProcessEnv;
  /** Reuse these folders (kept on stop) instead of fresh temp folders. */
  card?: string;
  state?: string;
  port?: number;
  setupPort?: number;
  ftpPort?: number;
  /** Do not pass --host/--port/--card/--state/--setup-port/--ftp-port (for env or config tests). */
  bare?: boolean;
  /** How long to wait for the API to answer; default 15 s. */
  readyMs?: number;
  /** Working folder of the process; default the repository root. */
  cwd?: string;
  /** The program; default bin/framefi-device (another copy of the install, say). */
  program?: string;
}

/** Starts `bin/framefi-device` and resolves once its API answers any HTTP request. */
export async function startDevice(opts: DeviceOptions = {}): Promise<RunningDevice> {
  const card = opts.card ?? (await tempDir("framefi-card-"));
  const state = opts.state ?? (await tempDir("framefi-state-"));
  const port = opts.port ?? (await freePort());
  const setupPort = opts.setupPort ?? (await freePort());
  const ftpPort = opts.ftpPort ?? (await freePort());
  const base = opts.bare
    ? []
    : ["--host", "127.0.0.1", "--port", String(port), "--card", card, "--state", state, "--setup-port", String(setupPort), "--ftp-port", String(ftpPort)];
  const program = start(opts.program ?? bin("framefi-device"), [...base, ...(opts.args ?? [])], {
    env: { ...process.env, ...(opts.env ?? {}) },
    cwd: opts.cwd,
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    await program.stop();
    if (!opts.card) await removeDir(card);
    if (!opts.state) await removeDir(state);
  };
  try {
    await Promise.race([
      eventually(
        async () => {
          const res = await fetch(url + "/", { signal: AbortSignal.timeout(2_000) });
          await res.arrayBuffer();
          return true;
        },
        opts.readyMs ?? 15_000,
        50,
      ),
      program.exited.then((code) => {
        throw new Error(`framefi-device exited (${code}) before answering\nstdout:\n${program.stdout()}\nstderr:\n${program.stderr()}`);
      }),
    ]);
  } catch (e) {
    await stop();
    throw e;
  }
  return { program, url, port, setupPort, ftpPort, card, state, stop };
}

/** Whether a process with this pid exists; a zombie waiting to be reaped counts as gone. */
export function processAlive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}
