// Where a triggered request goes once its rules hold: a command run in this process (local.ts:
// Runner + Executions) or a job in the queue shared with other instances (shared.ts: -queue). Both
// answer with a Dispatched, which the server turns into the HTTP answer in one place (server/answer.ts).
import { parseGoDuration } from "../go/duration.js";
import type { Hook, HookRequest } from "../hooks/hook.js";
import type { HookSet } from "../hooks/hook-set.js";
import type { RunPolicy } from "../hooks/run-fields.js";
import type { LogFields } from "../log/log.js";
import type { ExecuteResult } from "../queue/queue.js";
import type { OutputSink, RunningCommand } from "../run/spawn.js";

/** A request whose hook's rules hold. */
export interface Trigger {
  hook: Hook;
  /** The request; its id is the request id (and the job's). */
  req: HookRequest;
  policy: RunPolicy;
  fields: LogFields;
}

/** Runs a streamed hook's command: output goes to `onOutput` as it comes; `onStart` gets the local command (to pause it). */
export type StreamRun = (onOutput: OutputSink, onStart: (command: RunningCommand) => void) => Promise<ExecuteResult>;

/** What became of a trigger (logged already by the dispatch that decided it). */
export type Dispatched =
  /** The hook's rate-limit refuses it: 429, try again after `retryAfterS`. */
  | { kind: "limited"; retryAfterS: number }
  /** max-concurrency commands run and max-queue wait: 429. */
  | { kind: "busy" }
  /** The shared queue cannot take it now (503), or not at all (413: too large). */
  | { kind: "unavailable"; tooLarge: boolean }
  /** The same delivery was accepted already (deduplicate) as job `jobId`: nothing runs. */
  | { kind: "duplicate"; jobId: string }
  /** It runs after the answer (fire-and-forget, async-response, debounce); the body is in use until `bodyInUse` settles. */
  | { kind: "queued"; jobId?: string; bodyInUse?: Promise<unknown> }
  /** include-command-output-in-response: the answer waits for `result`. */
  | { kind: "ran"; jobId?: string; result: Promise<ExecuteResult> }
  /** stream-command-output: the answer carries the output as `run` produces it. */
  | { kind: "streamed"; jobId?: string; run: StreamRun };

export interface Dispatch {
  dispatch(t: Trigger): Dispatched | Promise<Dispatched>;
  /** The hooks served from now on (after a load or reload); settles when the dispatch serves them. */
  serve(hooks: HookSet): Promise<void>;
}

/** Defaults of the hook fields max-concurrency (0: no limit), max-queue and command-timeout (ms, 0: none), from the command line. */
export interface LimitDefaults {
  maxConcurrency: number;
  /** -max-background: max-concurrency of hooks that answer before their command runs, when neither the hook nor -max-concurrency sets one. */
  maxBackground: number;
  maxQueue: number;
  commandTimeoutMs: number;
}

/** The hook's max-concurrency (0: no limit) and max-queue, with the command-line defaults. */
export function limitsOf(hook: Hook, d: LimitDefaults): { max: number; maxQueue: number } {
  const background = !hook["stream-command-output"] && !hook["include-command-output-in-response"];
  const max = hook["max-concurrency"] ?? (d.maxConcurrency || (background ? d.maxBackground : 0));
  return { max, maxQueue: hook["max-queue"] ?? d.maxQueue };
}

/** The hook's command-timeout (or -command-timeout) in milliseconds; 0 is none. */
export function timeoutOf(hook: Hook, d: LimitDefaults): number {
  const own = hook["command-timeout"];
  return own !== undefined ? parseGoDuration(own) : d.commandTimeoutMs;
}
