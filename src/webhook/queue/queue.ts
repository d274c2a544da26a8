// What the hook server asks of a queue shared by several instances (-queue), and what such a
// queue hands back. The in-process queue (Runner.takeTurn) stays the default; this is the seam the
// NATS JetStream backend (nats-queue.ts) sits behind. A job travels as its parsed request, so the
// instance that runs it assembles the command from its own copy of the same hooks file.
import { JsonNumber } from "../go/json.js";
import type { HookRequest } from "../hooks/hook.js";
import type { JobState } from "../jobs/job.js";
import type { AttemptRun } from "../policy/executions.js";
import type { OutputSink } from "../run/spawn.js";

/** What running a hook's command gave: its output, Go's error text, and whether command-timeout stopped it. */
export interface ExecuteResult {
  output: Buffer;
  error?: string;
  /** The command's exit code, where it is known (null: it was killed). */
  exitCode?: number | null;
  signal?: string;
  timedOut?: boolean;
  /** exclude-stderr-from-response: the command's stderr, kept apart. */
  stderr?: Buffer;
}

/** What a captured or streamed job gave, as the instance that received its request learns it. */
export interface JobOutcome extends ExecuteResult {
  /**
   * Told by the job's record read back after the live output may have been missed (a lost
   * message, a reconnect): `output` is then the record's (the last -jobs-output bytes), not the
   * chunks sent as they came.
   */
  fromRecord?: true;
  /** The record's output was cut to its last -jobs-output bytes: the command wrote this many. */
  outputCut?: number;
}

/** A hook's limits and delivery de-duplication as every instance must see them. */
export interface QueueHook {
  id: string;
  /** max-concurrency over all instances together; 0 is no limit. */
  maxConcurrency: number;
  /** Jobs that may wait beyond maxConcurrency; more are refused (429). */
  maxQueue: number;
  /** deduplicate.window in milliseconds; 0 when the hook does not de-duplicate. */
  dedupWindowMs: number;
  /** The hook has a rate-limit (counted over all instances). */
  rateLimited: boolean;
}

/** A triggered execution handed to the queue. */
export interface JobSubmission {
  hook: QueueHook;
  /** The job's id (the request id); an id taken already gets a suffix. */
  id: string;
  req: HookRequest;
  /** deduplicate.id's value in this request, when the hook de-duplicates and the request has one. */
  deliveryId?: string;
  /** debounce: the quiet period in ms (the job runs once no later trigger came for that long); 0 is none. */
  debounceMs: number;
  /** captured or streamed hooks: output chunks as they come (from wherever the command runs); then `result` resolves. */
  onOutput?: OutputSink;
  /** captured hooks with retry: another attempt starts (the output so far was an earlier attempt's). */
  onAttempt?: () => void;
  /** traces: the W3C traceparent the job's message carries (its `traceparent` header). */
  traceparent?: string;
}

/** What became of a submission. */
export type Submitted =
  /** Stored durably: it will run. `result` resolves when it has run (only with onOutput). */
  | { kind: "queued"; id: string; result?: Promise<JobOutcome> }
  /** The same delivery was accepted within the window: nothing runs; `id` is the first job's. */
  | { kind: "duplicate"; id: string }
  /** The hook's queue is full (max-concurrency + max-queue). */
  | { kind: "full" }
  /** The queue cannot take it now (NATS unreachable, message too large): `reason` for the log. */
  | { kind: "unavailable"; reason: string; tooLarge?: boolean };

/** What the hook server does for the jobs an instance pulls from the shared queue. */
export interface JobRunner {
  /** Whether this instance has the hook (a job of a hook it does not have goes back to the queue). */
  serves(hookId: string): boolean;
  /** Runs the job's command once, as the hook server's execute does. */
  run(hookId: string, req: HookRequest, onOutput?: OutputSink): Promise<AttemptRun>;
  /** After attempt number `attempt` of job `jobId` ended so: the wait before the next one when the hook's retry asks for one (counted and logged), else undefined. */
  retryIn(hookId: string, jobId: string, attempt: number, result: AttemptRun): number | undefined;
  /** Counters for -metrics: a job reached a final state (after `last`, when it ran); a trigger was superseded (debounce). */
  ended(hookId: string, state: JobState, last?: LastAttempt): void;
  superseded(hookId: string): void;
}

/** The attempt that ended a job, for its notifications. */
export interface LastAttempt {
  job: string;
  attempt: number;
  result: AttemptRun;
}

/** What the shared rate window says of a trigger: run it, refuse it for `retryAfterS`, or not known (NATS did not answer). */
export type RateVerdict = { kind: "allowed" } | { kind: "limited"; retryAfterS: number } | { kind: "unavailable"; reason: string };

/** The shared queue as the hook server uses it. */
export interface SharedQueue {
  /** Hands a triggered execution to the queue. Never rejects. */
  submit(job: JobSubmission): Promise<Submitted>;
  /** rate-limit over all instances: counts this trigger, or says why it may not run. Never rejects. */
  limited(hookId: string, requests: number, periodMs: number): Promise<RateVerdict>;
  /** The hooks this instance serves (again after a reload): it pulls work for exactly these. */
  serve(hooks: QueueHook[]): Promise<void>;
  /** Graceful shutdown step one: take no new work; jobs running here run on. */
  stopPulling(): void;
  /** Before shutdown kills the commands still running: their jobs go back to the queue instead of failing. */
  handBack(): void;
  /** Step three, after the running commands ended or were killed: hands back unfinished jobs, closes. */
  close(): Promise<void>;
}

/**
 * A request as JSON. Values keep their kind: a JSON number keeps its text (JsonNumber), arrays and
 * numbers are tagged so nothing a client sent can pass for a tag.
 */
export function encodeRequest(req: HookRequest): unknown {
  return {
    id: req.id,
    method: req.method,
    remoteAddr: req.remoteAddr,
    contentType: req.contentType,
    headers: encodeValue(req.headers),
    query: encodeValue(req.query),
    rawBody: req.rawBody.toString("base64"),
    payload: req.payload === undefined ? null : encodeValue(req.payload),
    allowSignatureErrors: req.allowSignatureErrors,
  };
}

export function decodeRequest(v: Record<string, unknown>): HookRequest {
  return {
    id: String(v["id"]),
    method: String(v["method"]),
    remoteAddr: String(v["remoteAddr"]),
    contentType: String(v["contentType"]),
    headers: decodeValue(v["headers"]) as Record<string, unknown>,
    query: decodeValue(v["query"]) as Record<string, unknown>,
    rawBody: Buffer.from(String(v["rawBody"]), "base64"),
    payload: v["payload"] === null ? undefined : (decodeValue(v["payload"]) as Record<string, unknown>),
    allowSignatureErrors: v["allowSignatureErrors"] === true,
  };
}

function encodeValue(v: unknown): unknown {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (v instanceof JsonNumber) return ["n", v.text];
  if (typeof v === "number") return ["f", v];
  if (Array.isArray(v)) return ["a", ...v.map(encodeValue)];
  if (typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) if (x !== undefined) out[k] = encodeValue(x);
    return out;
  }
  return v === undefined ? null : String(v);
}

function decodeValue(v: unknown): unknown {
  if (Array.isArray(v)) {
    if (v[0] === "n") return new JsonNumber(String(v[1]));
    if (v[0] === "f") return Number(v[1]);
    return v.slice(1).map(decodeValue);
  }
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = decodeValue(x);
    return out;
  }
  return v;
}
