// Running a hook's command: locating it as Go's exec.LookPath does, then starting it directly
// (no shell, spawn.ts) with its argv, environment and working directory, and keeping the list of
// commands that are running.
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { startCommand, type OutputSink, type RunningCommand } from "./spawn.js";

export interface CommandSpec {
  /** Absolute path of the executable. */
  path: string;
  /** argv, argv[0] included (the execute-command as written in the hooks file). */
  argv: string[];
  /** Variables set over the server's own environment. */
  env: Record<string, string>;
  cwd?: string;
  /** Collect stdout and stderr combined; otherwise output is discarded. */
  captureOutput: boolean;
  /** Keep at most this many bytes of the collected output, the last ones (0 or absent: all). */
  maxOutput?: number;
  /** exclude-stderr-from-response: stderr is kept apart (CommandResult.stderr), not in `output`. */
  separateStderr?: boolean;
  /** command-timeout in milliseconds; 0 or absent is none. */
  timeoutMs?: number;
  /** Told when the timeout sends SIGTERM, and SIGKILL 5 s later if the process group is still there. */
  onTimeout?: (signal: "SIGTERM" | "SIGKILL") => void;
}

export interface CommandResult {
  /** Combined stdout and stderr, byte for byte (only its tail, after a cutMarker line, beyond maxOutput). */
  output: Buffer;
  /** Go's error text: "exit status 1", "signal: killed", or the spawn failure; undefined on success. */
  error?: string;
  exitCode: number | null;
  /** With separateStderr: the command's stderr (its tail, as `output`). */
  stderr?: Buffer;
  /** The signal that ended the command ("SIGTERM"), when one did. */
  signal?: NodeJS.Signals;
  /** The command-timeout expired and the command was stopped. */
  timedOut?: boolean;
}

/** How long a timed-out command's process group has between SIGTERM and SIGKILL. */
export const KILL_AFTER_MS = 5000;

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the executable the way Go's exec.LookPath does: a name with a slash is checked as a
 * path, anything else is searched in $PATH. Returns an absolute path or throws with Go's message.
 */
export function lookPath(file: string): string {
  if (file.includes("/")) {
    if (isExecutableFile(file)) return resolve(file);
    let reason = "permission denied";
    try {
      statSync(file);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      reason = `stat ${file}: ${code === "ENOENT" ? "no such file or directory" : code === "ENOTDIR" ? "not a directory" : (e as Error).message}`;
    }
    throw new Error(`exec: ${JSON.stringify(file)}: ${reason}`);
  }
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    const candidate = join(dir === "" ? "." : dir, file);
    if (isExecutableFile(candidate)) return resolve(candidate);
  }
  throw new Error(`exec: ${JSON.stringify(file)}: executable file not found in $PATH`);
}

/** The path the reference looks up: relative commands resolve against command-working-directory. */
export function commandLookupPath(command: string, cwd: string | undefined): string {
  return isAbsolute(command) || !cwd ? command : join(cwd, command);
}

/** A command the server has started and not yet seen finish (for shutdown and reports). */
export interface RunningEntry {
  hook: string;
  rid: string;
  command: RunningCommand;
}

const running = new Set<RunningEntry>();

/** The commands running now. */
export function runningCommands(): RunningEntry[] {
  return [...running];
}

/** The line a cut output starts with: how many bytes were dropped before the tail that follows. */
export function cutMarker(dropped: number, kept: number): string {
  return `[webhook: output cut: the first ${dropped} bytes were dropped, the last ${kept} follow (-max-output)]\n`;
}

/** Collects output, keeping only the last `max` bytes (0: all). */
class Tail {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  constructor(private readonly max: number) {}

  push(c: Buffer): void {
    this.chunks.push(c);
    this.size += c.length;
    if (this.max <= 0) return;
    // Whole chunks first; the first one kept is cut when the output ends.
    while (this.size - this.chunks[0]!.length >= this.max) {
      const first = this.chunks.shift()!;
      this.size -= first.length;
      this.dropped += first.length;
    }
  }

  result(): Buffer {
    let all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    let dropped = this.dropped;
    if (this.max > 0 && all.length > this.max) {
      dropped += all.length - this.max;
      all = all.subarray(all.length - this.max);
    }
    return dropped === 0 ? all : Buffer.concat([Buffer.from(cutMarker(dropped, all.length)), all]);
  }
}

/**
 * Starts the command and resolves when it has exited and its output is read. Never rejects.
 * `onStart` gets the running command at once (a streaming reader pauses and resumes it).
 */
export async function runCommand(
  spec: CommandSpec,
  owner: { hook: string; rid: string },
  onOutput?: OutputSink,
  onStart?: (command: RunningCommand) => void,
): Promise<CommandResult> {
  const tail = new Tail(spec.maxOutput ?? 0);
  const keep = spec.captureOutput;
  const sink: OutputSink | undefined = onOutput
    ? (c) => {
        if (keep) tail.push(c);
        onOutput(c);
      }
    : keep
      ? (c) => tail.push(c)
      : undefined;
  const errTail = spec.separateStderr ? new Tail(spec.maxOutput ?? 0) : undefined;
  const command = startCommand({ path: spec.path, argv: spec.argv, env: spec.env, ...(spec.cwd ? { cwd: spec.cwd } : {}) }, sink, errTail && ((c) => errTail.push(c)));
  onStart?.(command);
  const entry: RunningEntry = { ...owner, command };
  running.add(entry);
  let timedOut = false;
  const timer =
    spec.timeoutMs && spec.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          spec.onTimeout?.("SIGTERM");
          command.kill("SIGTERM");
          // Also after the command itself has exited: what it started may ignore SIGTERM.
          const pid = command.pid;
          setTimeout(() => {
            if (pid !== undefined ? killGroup(pid) : (command.kill("SIGKILL"), true)) spec.onTimeout?.("SIGKILL");
          }, KILL_AFTER_MS).unref();
        }, spec.timeoutMs)
      : undefined;
  const status = await command.done;
  clearTimeout(timer);
  running.delete(entry);
  const output = tail.result();
  const more = { ...(timedOut ? { timedOut } : {}), ...(errTail ? { stderr: errTail.result() } : {}) };
  if (status.startError !== undefined) return { output, error: status.startError, exitCode: null };
  if (status.signal) return { output, error: `signal: ${signalName(status.signal)}`, exitCode: null, signal: status.signal, ...more };
  if (status.exitCode !== 0) return { output, error: `exit status ${status.exitCode}`, exitCode: status.exitCode, ...more };
  return { output, exitCode: 0, ...more };
}

/** SIGKILL to process group `pgid` if any process is left in it; whether one was. */
function killGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, "SIGKILL");
    return true;
  } catch {
    return false; // the group is empty
  }
}

function signalName(signal: NodeJS.Signals): string {
  const names: Record<string, string> = {
    SIGKILL: "killed",
    SIGTERM: "terminated",
    SIGINT: "interrupt",
    SIGSEGV: "segmentation fault",
    SIGABRT: "aborted",
    SIGHUP: "hangup",
    SIGPIPE: "broken pipe",
  };
  return names[signal] ?? signal;
}
