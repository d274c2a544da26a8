// A job: one triggered execution of a hook's command (-jobs), from the moment its request is
// accepted until the command has run (with its retries) or was dropped. Its id is the request id.

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
}

export const FINAL_STATES: ReadonlySet<JobState> = new Set(["succeeded", "failed", "timed-out", "dropped"]);

/** A job's summary for lists: everything but the output. */
export function summary(job: Job): Omit<Job, "output"> {
  const { output: _output, ...rest } = job;
  return rest;
}
