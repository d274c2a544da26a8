// Starting a command: argv, environment and working directory as given, no shell, in its own
// process group, stdout and stderr combined in the order they were written, delivered as they
// arrive. Two ways to do it, one interface:
//  - the spawn helper (native/spawn-helper.c, built by `prepare`): a small C process that starts
//    commands with posix_spawn. Node's child_process forks the whole server for every command,
//    which costs ~1.3 ms of CPU on this 50 MB process; the helper costs ~0.15 ms.
//  - child_process.spawn, when the helper was not built or WEBHOOK_SPAWN_HELPER=off.
// Either way a command's group dies with the server, even a server killed with SIGKILL: the helper
// ends its commands when the server goes, and group-watch.ts does it for child_process's.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readSync, unlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { getSystemErrorMap } from "node:util";
import { encodeBytes } from "../go/bytes.js";
import { errnoText } from "../go/errno.js";
import { GroupWatch } from "./group-watch.js";

export interface SpawnSpec {
  /** Absolute path of the executable. */
  path: string;
  /** argv, argv[0] included. */
  argv: string[];
  /** Variables set over the server's own environment. */
  env: Record<string, string>;
  cwd?: string;
}

export interface ExitStatus {
  /** The exit code, or null when a signal ended the command or it never started. */
  exitCode: number | null;
  /** The signal that ended it ("SIGKILL"), or null. */
  signal: NodeJS.Signals | null;
  /** Why the command could not start, in Go's words ("fork/exec /x: no such file or directory"). */
  startError?: string;
}

export interface RunningCommand {
  /** The command's pid (also its process group id) once it has started. */
  readonly pid: number | undefined;
  /** Sends `signal` to the command's whole process group. */
  kill(signal: NodeJS.Signals): void;
  /** Stops reading the command's output: the command blocks once its pipe is full. */
  pause(): void;
  /** Reads its output again after pause(). */
  resume(): void;
  /** Resolves after the command exited and all of its output was delivered. Never rejects. */
  readonly done: Promise<ExitStatus>;
}

/** Receives the command's combined output, chunk by chunk, as it is produced. */
export type OutputSink = (chunk: Buffer) => void;

const helperFile = fileURLToPath(new URL("../../../native/spawn-helper", import.meta.url));

/** Starts commands: through the spawn helpers while they work, else through child_process. */
export class Spawner {
  /** undefined until the first command; null when the helper is not built, off, or keeps dying. */
  private helperPool: HelperPool | null | undefined;
  /** The server's environment as "NAME=value" strings, built once: most commands add nothing to it. */
  private baseEnv: string[] | undefined;

  /**
   * Starts a command; its stdout and stderr go to `onOutput` combined, or, with `onStderr`, stderr
   * goes there instead, delivered once the command has exited (exclude-stderr-from-response).
   */
  start(spec: SpawnSpec, onOutput?: OutputSink, onStderr?: OutputSink): RunningCommand {
    const invalid = [spec.path, spec.cwd ?? "", ...spec.argv, ...Object.entries(spec.env).flat()].some((s) => s.includes("\0"));
    if (invalid) return failed(`fork/exec ${spec.path}: invalid argument`);
    const helpers = this.pool();
    // The helper combines the two streams: a command whose stderr goes apart starts through child_process.
    return helpers && !onStderr ? helpers.start(spec, onOutput) : startWithChildProcess(spec, onOutput, onStderr);
  }

  private pool(): HelperPool | null {
    if (this.helperPool === undefined) {
      const off = process.env["WEBHOOK_SPAWN_HELPER"] === "off";
      this.helperPool = !off && existsSync(helperFile) ? new HelperPool((extra) => this.envList(extra)) : null;
    }
    if (this.helperPool && !this.helperPool.usable) this.helperPool = null;
    return this.helperPool;
  }

  private envList(extra: Record<string, string>): string[] {
    this.baseEnv ??= Object.entries(process.env).map(([k, v]) => `${k}=${v ?? ""}`);
    const names = Object.keys(extra);
    if (names.length === 0) return this.baseEnv;
    // A variable the hook sets replaces the server's, as Go's exec does with duplicates.
    const own = new Set(names);
    return this.baseEnv.filter((kv) => !own.has(kv.slice(0, kv.indexOf("=")))).concat(names.map((k) => `${k}=${extra[k]}`));
  }
}

function failed(startError: string): RunningCommand {
  const nothing = (): void => undefined;
  return { pid: undefined, kill: nothing, pause: nothing, resume: nothing, done: Promise.resolve({ exitCode: null, signal: null, startError }) };
}

const errnoName = new Map<number, string>(Object.entries(constants.errno).map(([name, n]) => [n, name]));

/** Go's text for a failed start: the cwd when it is missing, else the errno's message. */
function startErrorText(spec: SpawnSpec, errno: number): string {
  const code = errnoName.get(errno) ?? "";
  if (code === "ENOENT" && spec.cwd && !existsSync(spec.cwd)) return `chdir ${spec.cwd}: no such file or directory`;
  const message = errnoText(code) ?? getSystemErrorMap().get(-errno)?.[1] ?? `errno ${errno}`;
  return `fork/exec ${spec.path}: ${message}`;
}

/**
 * Whether the kernel can execute the file itself (a script with "#!" or an ELF binary). libuv's
 * execvp would run any other file through /bin/sh; Go, and the helper's posix_spawn, fail with
 * ENOEXEC instead.
 */
function executableFormat(path: string): boolean {
  const head = Buffer.alloc(4);
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const n = readSync(fd, head, 0, 4, 0);
    return (n >= 2 && head[0] === 0x23 && head[1] === 0x21) || (n === 4 && head.readUInt32BE(0) === 0x7f454c46);
  } catch {
    return true; // let the start itself report what is wrong
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Sends `signal` to process group `pgid`, if it is still there. */
function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

const signalNames = new Map<number, NodeJS.Signals>(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

type EnvList = (extra: Record<string, string>) => string[];

// ---- the spawn helper ----------------------------------------------------------------------

interface Job {
  spec: SpawnSpec;
  pid: number | undefined;
  onOutput: OutputSink | undefined;
  finish: (s: ExitStatus) => void;
}

const FRAME_HEAD = 9; // u32 length | u8 type | u32 id

/** One helper process and the commands it is running. */
class Helper {
  private readonly child: ChildProcess;
  readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private pending: Buffer = Buffer.alloc(0);
  alive = true;
  /** Commands this helper saw through to the end (0 at its death: it is probably broken). */
  finished = 0;

  constructor(private readonly envList: EnvList) {
    // Our pid lets the helper tell whether we died before it could ask to hear of it (PR_SET_PDEATHSIG).
    this.child = spawn(helperFile, [String(process.pid)], { stdio: ["pipe", "pipe", "inherit"] });
    this.child.stdout!.on("data", (d: Buffer) => this.receive(d));
    this.child.stdin!.on("error", () => undefined);
    this.child.once("error", () => this.died());
    this.child.once("exit", () => this.died());
    // The helper must not keep the server alive, nor the server wait for it.
    this.child.unref();
    (this.child.stdout as unknown as { unref?: () => void }).unref?.();
    (this.child.stdin as unknown as { unref?: () => void }).unref?.();
  }

  start(spec: SpawnSpec, onOutput: OutputSink | undefined): RunningCommand {
    const id = this.nextId++;
    const env = this.envList(spec.env);
    // Values carry request bytes that are not UTF-8 as escapes (bytes.ts): they go out as those bytes.
    const strings = encodeBytes([spec.cwd ?? "", spec.path, ...spec.argv, ...env].join("\0") + "\0");
    const frame = Buffer.allocUnsafe(FRAME_HEAD + 8 + strings.length);
    frame.writeUInt32LE(frame.length - 4, 0);
    frame[4] = 0x53; // 'S'
    frame.writeUInt32LE(id, 5);
    frame.writeUInt32LE(spec.argv.length, 9);
    frame.writeUInt32LE(env.length, 13);
    strings.copy(frame, 17);
    let finish!: (s: ExitStatus) => void;
    const done = new Promise<ExitStatus>((resolve) => (finish = resolve));
    const job: Job = { spec, pid: undefined, onOutput, finish };
    this.jobs.set(id, job);
    this.child.stdin!.write(frame);
    return {
      get pid() {
        return job.pid;
      },
      kill: (signal) => this.kill(id, signal),
      pause: () => this.send(id, 0x5a /* Z */),
      resume: () => this.send(id, 0x52 /* R */),
      done,
    };
  }

  /** A frame without payload about command `id`. */
  private send(id: number, type: number): void {
    if (!this.jobs.has(id) || !this.alive) return;
    const frame = Buffer.allocUnsafe(FRAME_HEAD);
    frame.writeUInt32LE(frame.length - 4, 0);
    frame[4] = type;
    frame.writeUInt32LE(id, 5);
    this.child.stdin!.write(frame);
  }

  private kill(id: number, signal: NodeJS.Signals): void {
    if (!this.jobs.has(id) || !this.alive) return;
    const frame = Buffer.allocUnsafe(FRAME_HEAD + 4);
    frame.writeUInt32LE(frame.length - 4, 0);
    frame[4] = 0x4b; // 'K'
    frame.writeUInt32LE(id, 5);
    frame.writeInt32LE(constants.signals[signal], 9);
    this.child.stdin!.write(frame);
  }

  private receive(data: Buffer): void {
    const buf = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    let off = 0;
    while (buf.length - off >= FRAME_HEAD) {
      const len = buf.readUInt32LE(off);
      if (buf.length - off < 4 + len) break;
      const type = buf[off + 4];
      const id = buf.readUInt32LE(off + 5);
      const job = this.jobs.get(id);
      const payload = off + FRAME_HEAD;
      off += 4 + len;
      if (!job) continue;
      if (type === 0x4f /* O */) {
        // A copy: the caller may keep it after this buffer is reused.
        job.onOutput?.(Buffer.from(buf.subarray(payload, off)));
      } else if (type === 0x50 /* P */) {
        job.pid = buf.readUInt32LE(payload);
      } else if (type === 0x58 /* X */) {
        const st = buf.readInt32LE(payload);
        this.jobs.delete(id);
        this.finished++;
        job.finish(st >= 0 ? { exitCode: st, signal: null } : { exitCode: null, signal: signalNames.get(-st) ?? "SIGKILL" });
      } else if (type === 0x46 /* F */) {
        this.jobs.delete(id);
        job.finish({ exitCode: null, signal: null, startError: startErrorText(job.spec, buf.readInt32LE(payload)) });
      }
    }
    this.pending = off === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(off));
  }

  /** The helper is gone: its commands are ended (nothing would report them), their outcome unknown; the next command gets a new helper. */
  private died(): void {
    if (!this.alive) return;
    this.alive = false;
    for (const job of this.jobs.values()) {
      if (job.pid !== undefined) killGroup(job.pid, "SIGKILL");
      job.finish({ exitCode: null, signal: null, startError: "the spawn helper exited unexpectedly; the command's outcome is unknown" });
    }
    this.jobs.clear();
  }
}

const HELPERS = 2; // two helpers measured 1.3x the commands/s of one on 2 cores

const GIVE_UP_AFTER = 3; // helpers in a row that died without finishing a command

class HelperPool {
  private readonly helpers: Helper[] = [];
  private failures = 0;

  constructor(private readonly envList: EnvList) {}

  /** False once helpers keep dying before they finish anything: then child_process takes over. */
  get usable(): boolean {
    return this.failures < GIVE_UP_AFTER;
  }

  start(spec: SpawnSpec, onOutput: OutputSink | undefined): RunningCommand {
    for (let i = 0; i < this.helpers.length; i++) {
      const h = this.helpers[i]!;
      if (h.alive) continue;
      this.failures = h.finished === 0 ? this.failures + 1 : 0;
      if (!this.usable) {
        process.stderr.write("webhook: the spawn helper keeps exiting; commands now start through child_process.spawn\n");
        return startWithChildProcess(spec, onOutput);
      }
      this.helpers[i] = new Helper(this.envList);
    }
    if (this.helpers.length < HELPERS) this.helpers.push(new Helper(this.envList));
    let best = this.helpers[0]!;
    for (const h of this.helpers) if (h.jobs.size < best.jobs.size) best = h;
    return best.start(spec, onOutput);
  }
}

// ---- child_process.spawn fallback ------------------------------------------------------------

// Combined output goes to one unlinked temp file shared as the child's stdout and stderr, so the
// two streams interleave exactly as written (Node cannot create a bare pipe). It is read while the
// command runs (every 50 ms) and once more after it exits.
const outputDir = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();

/** Ends these commands' process groups when the server dies (the helper does that for its own). */
const groups = new GroupWatch();

/** An unlinked temporary file for a command's output, open for writing and reading. */
function outputFile(): number {
  const file = join(outputDir, `webhook-out-${process.pid}-${randomBytes(6).toString("hex")}`);
  const fd = openSync(file, "wx+", 0o600);
  unlinkSync(file);
  return fd;
}

/** Hands a file's bytes from `offset` on to `sink`, in chunks. */
function readAll(fd: number, sink: OutputSink): void {
  const chunk = Buffer.allocUnsafe(65536);
  for (let offset = 0; ; ) {
    const n = readSync(fd, chunk, 0, chunk.length, offset);
    if (n === 0) return;
    offset += n;
    sink(Buffer.from(chunk.subarray(0, n)));
  }
}

function startWithChildProcess(spec: SpawnSpec, onOutput: OutputSink | undefined, onStderr?: OutputSink): RunningCommand {
  if (!executableFormat(spec.path)) return failed(startErrorText(spec, constants.errno.ENOEXEC));
  let fd: number | undefined;
  let errFd: number | undefined;
  let child: ChildProcess;
  try {
    if (onOutput) fd = outputFile();
    if (onStderr) errFd = outputFile();
    groups.start();
    child = spawn(spec.path, spec.argv.slice(1), {
      argv0: spec.argv[0] ?? spec.path,
      cwd: spec.cwd || undefined,
      env: Object.keys(spec.env).length ? { ...process.env, ...spec.env } : process.env,
      stdio: ["ignore", fd ?? "ignore", (onStderr ? errFd : fd) ?? "ignore"],
      detached: true, // its own process group, so a kill reaches what it started
    });
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    if (errFd !== undefined) closeSync(errFd);
    return failed(`fork/exec ${spec.path}: ${(e as Error).message}`);
  }
  const pgid = child.pid;
  if (pgid !== undefined) groups.add(pgid);
  let offset = 0;
  let paused = false;
  // The exit, held back while paused: the rest of the output is read once resumed.
  let finishLater: (() => void) | undefined;
  const chunk = Buffer.allocUnsafe(65536);
  const readNew = (): void => {
    if (fd === undefined) return;
    while (!paused) {
      const n = readSync(fd, chunk, 0, chunk.length, offset);
      if (n === 0) return;
      offset += n;
      onOutput!(Buffer.from(chunk.subarray(0, n)));
    }
  };
  const poll = fd === undefined ? undefined : setInterval(readNew, 50);
  let startError: string | undefined;
  let closed = false;
  child.once("error", (e: NodeJS.ErrnoException) => {
    const errno = typeof e.errno === "number" ? -e.errno : 0;
    startError = errno ? startErrorText(spec, errno) : `fork/exec ${spec.path}: ${e.message}`;
  });
  const done = new Promise<ExitStatus>((resolve) => {
    child.once("close", (code, signal) => {
      closed = true;
      if (pgid !== undefined) groups.remove(pgid);
      clearInterval(poll);
      const finish = (): void => {
        readNew();
        if (paused) {
          finishLater = finish;
          return;
        }
        if (fd !== undefined) closeSync(fd);
        if (errFd !== undefined) {
          readAll(errFd, onStderr!);
          closeSync(errFd);
        }
        if (startError !== undefined) resolve({ exitCode: null, signal: null, startError });
        else resolve({ exitCode: code, signal });
      };
      finish();
    });
  });
  return {
    get pid() {
      return child.pid;
    },
    kill(signal) {
      if (child.pid !== undefined && !closed) killGroup(child.pid, signal);
    },
    // The command writes to a file, not a pipe: pausing stops reading it, but cannot block the command.
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      const finish = finishLater;
      finishLater = undefined;
      if (finish) finish();
      else readNew();
    },
    done,
  };
}
