// A job: one triggered execution of a hook's command (-jobs), from the moment its request is
// accepted until the command has run (with its retries) or was dropped. Its id is the request id.
// The JobStore changes it; JobRecords keep it (jobs/records.ts).
import type { KeptRequest } from "./kept-request.js";

export type JobState = "queued" | "running" | "succeeded" | "failed" | "timed-out" | "dropped";

/** One run of the command (a job has several when it is retried). */
export interface Attempt {
  number: number;
  /** ISO 8601 times. */
  started: string;
  ended?: string;
  durationMs?: number;
  /** The exit code, or null when a signal ended the command or it could not start. */
  exitCode?: number | null;
  /** The signal that ended it ("SIGTERM"), when one did. */
  signal?: string;
  /** Go's error text ("exit status 3", "signal: terminated"), absent on success. */
  error?: string;
  timedOut?: boolean;
}

export interface Job {
  id: string;
  hook: string;
  /** -jobs-replay: the job this one replays (its trigger rule was skipped: the operator asked). */
  replayOf?: string;
  /** "skipped" on a replay: its trigger rule was not evaluated (the operator asked for the run). Absent when the rule was evaluated, or the hook has none. */
  triggerRule?: "skipped";
  state: JobState;
  created: string;
  started?: string;
  ended?: string;
  durationMs?: number;
  attempts: Attempt[];
  /** Of the last attempt. */
  exitCode?: number | null;
  signal?: string;
  error?: string;
  /** Why a dropped job did not run. */
  reason?: string;
  /** The tail of the last attempt's output (stdout and stderr), at most -jobs-output bytes. */
  output: string;
  /** Bytes of output the last attempt wrote before the tail was cut, when it was cut. */
  outputCut?: number;
  /** With exclude-stderr-from-response: the tail of the last attempt's stderr (`output` is its stdout). */
  stderr?: string;
  /** -jobs-replay: the request that triggered it. */
  request?: KeptRequest;
}

/**
 * The longest job id, in characters. A request id (X-Request-Id) can be as long as the request
 * head; as a job id it is kept, listed, written to the jobs file, sent in X-Job-Id and in NATS
 * subjects and headers (where a few KB drop the connection), so it is cut here whatever
 * -x-request-id-limit says. Two ids cut alike stay apart by the usual suffix (-2, -3…).
 */
export const JOB_ID_MAX = 128;

/** The job id a request id gives. */
export const jobIdOf = (requestId: string): string => requestId.slice(0, JOB_ID_MAX);

export const FINAL_STATES: ReadonlySet<JobState> = new Set(["succeeded", "failed", "timed-out", "dropped"]);
const JOB_STATES: ReadonlySet<string> = new Set(["queued", "running", ...FINAL_STATES]);

/**
 * Whether `v` has a job's required fields, and the replay fields are well-formed when present, as a history file or
 * another instance stored it (a missing output becomes "").
 */
export function isJob(v: unknown): v is Job {
  const job = v as Partial<Job> | null;
  const ok =
    typeof job === "object" &&
    job !== null &&
    typeof job.id === "string" &&
    typeof job.hook === "string" &&
    JOB_STATES.has(String(job.state)) &&
    Array.isArray(job.attempts) &&
    typeof job.created === "string" &&
    (job.replayOf === undefined || typeof job.replayOf === "string") &&
    (job.triggerRule === undefined || job.triggerRule === "skipped");
  if (ok) job.output = typeof job.output === "string" ? job.output : "";
  return ok;
}

/** A job's summary for lists: everything but the output and the kept request. */
export function summary(job: Job): Omit<Job, "output" | "request"> {
  const { output: _output, request: _request, ...rest } = job;
  return rest;
}
