// The one owner of the hook server's runtime state: the per-hook queues (max-concurrency,
// max-queue), the commands running now, the metrics counters and the spawner. The server holds one
// Runner; shutdown asks it to drop what is queued, waits for it to be idle, and kills what is left.
import { Metrics, type Outcome } from "../log/metrics.js";
import { signalText } from "../go/errno.js";
import { Tail } from "./output.js";
import { Spawner, type OutputSink, type RunningCommand } from "./spawn.js";
import type { CommandResult, CommandSpec } from "./command.js";

/**
 * A granted turn: `wait` (when set) resolves true once the command may start, or false when the
 * server shut down first (the command must not run); `release` ends the turn.
 */
export interface Turn {
  wait?: Promise<boolean>;
  release(): void;
}

/** A command running now, with the hook and request that started it. */
export interface CommandInfo {
  hook: string;
  rid: string;
  pid: number | undefined;
}

/** How long a timed-out command's process group has between SIGTERM and SIGKILL. */
export const KILL_AFTER_MS = 5000;

interface HookSlots {
  running: number;
  /** The limit given by the latest request (a reload may change it). 0 is unlimited. */
  max: number;
  waiting: ((start: boolean) => void)[];
}

interface RunningEntry {
  hook: string;
  rid: string;
  command: RunningCommand;
}

export class Runner {
  readonly metrics = new Metrics(() => [...this.commands].map((e) => e.hook));
  private readonly spawner = new Spawner();
  private readonly slots = new Map<string, HookSlots>();
  private readonly commands = new Set<RunningEntry>();
  private shuttingDown = false;
  /** Resolved (and emptied) when the last running command finishes. */
  private idleWaiters: (() => void)[] = [];

  /**
   * Takes a turn for one command of `hook`: at once when fewer than `max` run (or max is 0),
   * queued when the queue has room, or null when it is full (the caller answers 429).
   */
  takeTurn(hook: string, max: number, maxQueue: number): Turn | null {
    let s = this.slots.get(hook);
    if (!s) this.slots.set(hook, (s = { running: 0, max, waiting: [] }));
    s.max = max;
    const hs = s;
    let released = false;
    let started = true;
    const release = (): void => {
      if (released || !started) return;
      released = true;
      hs.running--;
      this.startWaiting(hook, hs);
    };
    if (max <= 0 || (s.running < max && s.waiting.length === 0)) {
      s.running++;
      return { release };
    }
    if (this.shuttingDown || s.waiting.length >= maxQueue) return null;
    started = false;
    const wait = new Promise<boolean>((resolve) =>
      hs.waiting.push((start) => {
        started = start;
        resolve(start);
      }),
    );
    this.metrics.queueDepth(hook, s.waiting.length);
    return { wait, release };
  }

  private startWaiting(hook: string, s: HookSlots): void {
    const queued = s.waiting.length;
    while (s.waiting.length > 0 && (s.max <= 0 || s.running < s.max)) {
      s.running++;
      s.waiting.shift()!(true);
    }
    if (s.waiting.length !== queued) this.metrics.queueDepth(hook, s.waiting.length);
    if (s.running === 0 && s.waiting.length === 0 && this.slots.get(hook) === s) this.slots.delete(hook);
  }

  /**
   * Graceful shutdown: commands still waiting for their turn will never start (their requests are
   * answered as failed), and no new ones queue. Returns how many were dropped.
   */
  dropQueued(): number {
    this.shuttingDown = true;
    let dropped = 0;
    for (const [hook, s] of this.slots) {
      for (const drop of s.waiting.splice(0)) {
        drop(false);
        dropped++;
      }
      this.metrics.queueDepth(hook, 0);
    }
    return dropped;
  }

  /** The commands running now. */
  running(): CommandInfo[] {
    return [...this.commands].map((e) => ({ hook: e.hook, rid: e.rid, pid: e.command.pid }));
  }

  /** Resolves once no command is running (at once when none is). */
  idle(): Promise<void> {
    if (this.commands.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Sends `signal` to the process group of every running command. */
  killAll(signal: NodeJS.Signals): void {
    for (const e of this.commands) e.command.kill(signal);
  }

  /** A command of `hook` that could not be started (not found): counted in the metrics. */
  startFailed(hook: string): void {
    this.metrics.execution(hook, "error");
  }

  /**
   * Starts the command and resolves when it has exited and its output is read. Never rejects.
   * `onStart` gets the running command at once (a streaming reader pauses and resumes it).
   */
  async run(
    spec: CommandSpec,
    owner: { hook: string; rid: string },
    onOutput?: OutputSink,
    onStart?: (command: RunningCommand) => void,
  ): Promise<CommandResult> {
    const began = process.hrtime.bigint();
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
    const command = this.spawner.start(
      { path: spec.path, argv: spec.argv, env: spec.env, ...(spec.cwd ? { cwd: spec.cwd } : {}) },
      sink,
      errTail && ((c) => errTail.push(c)),
    );
    onStart?.(command);
    const entry: RunningEntry = { ...owner, command };
    this.commands.add(entry);
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
    this.commands.delete(entry);
    if (this.commands.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    const output = tail.result();
    const more = { ...(timedOut ? { timedOut } : {}), ...(errTail ? { stderr: errTail.result() } : {}) };
    let result: CommandResult;
    if (status.startError !== undefined) result = { output, error: status.startError, exitCode: null };
    else if (status.signal) result = { output, error: `signal: ${signalText(status.signal)}`, exitCode: null, signal: status.signal, ...more };
    else if (status.exitCode !== 0) result = { output, error: `exit status ${status.exitCode}`, exitCode: status.exitCode, ...more };
    else result = { output, exitCode: 0, ...more };
    this.metrics.execution(owner.hook, outcome(result), Number(process.hrtime.bigint() - began) / 1e9);
    return result;
  }
}

/** How a command run ended, for the metrics. */
function outcome(result: CommandResult): Outcome {
  if (result.timedOut) return "timeout";
  if (result.error === undefined) return "success";
  // No exit code and no signal: the command could not be started.
  return result.exitCode === null && !result.error.startsWith("signal: ") ? "error" : "failure";
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
