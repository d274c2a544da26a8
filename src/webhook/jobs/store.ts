// The jobs the server remembers (-jobs): the one owner of job records. Jobs are kept in memory,
// newest last, at most `keep` of them and finished ones no older than `maxAgeMs`. With a file, the
// history is written there shortly after each change (a new file renamed over the old one, so a
// crash never leaves half a file) and read back at start; a file that cannot be read is set aside
// and the server starts with an empty history.
import { renameSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { FINAL_STATES, type Attempt, type Job, type JobState } from "./job.js";

export interface JobStoreOptions {
  /** Jobs kept at most (the oldest finished ones go first). */
  keep: number;
  /** Finished jobs older than this are forgotten; 0 keeps them until `keep` pushes them out. */
  maxAgeMs: number;
  /** Bytes of a job's output kept (the tail). */
  outputBytes: number;
  /** -jobs-file: where the history is kept across restarts; undefined keeps it in memory only. */
  file?: string;
}

/** How one attempt ended, as the runner reports it. */
export interface AttemptResult {
  exitCode: number | null;
  signal?: string;
  error?: string;
  timedOut?: boolean;
  output: Buffer;
  stderr?: Buffer;
}

/** How long after a change the file is written: a burst of changes costs one write. */
const FLUSH_DELAY_MS = 500;

const STATES: ReadonlySet<string> = new Set(["queued", "running", "succeeded", "failed", "timed-out", "dropped"]);

export class JobStore {
  private readonly jobs = new Map<string, Job>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: JobStoreOptions,
    /** Where problems with the file are told (the server's log). */
    private readonly warn: (message: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reads the file's history, if any. Never throws: a bad file is set aside, with a warning. */
  load(): void {
    const file = this.opts.file;
    if (file === undefined) return;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") this.warn(`cannot read the jobs file ${file} (${(e as Error).message}); starting with an empty job history`);
      return;
    }
    let jobs: Job[];
    try {
      jobs = parseJobs(text);
    } catch (e) {
      const aside = `${file}.corrupt`;
      try {
        renameSync(file, aside);
      } catch {
        // Left where it is: the next write replaces it.
      }
      this.warn(`the jobs file ${file} is not a job history (${(e as Error).message}); it was moved to ${aside} and the history starts empty`);
      return;
    }
    const at = this.iso();
    for (const job of jobs) {
      if (!FINAL_STATES.has(job.state)) Object.assign(job, { state: "dropped", reason: "the server stopped before the job finished", ended: at });
      this.jobs.set(job.id, job);
    }
    this.prune();
  }

  /** A new job for an accepted request, queued. An id already taken (a reused X-Request-Id) gets a suffix. */
  create(id: string, hook: string): Job {
    let unique = id;
    for (let n = 2; this.jobs.has(unique); n++) unique = `${id}-${n}`;
    // Every field in the order the JSON shows them (unset ones are left out of it).
    const job: Job = {
      id: unique,
      hook,
      state: "queued",
      created: this.iso(),
      started: undefined,
      ended: undefined,
      durationMs: undefined,
      exitCode: undefined,
      signal: undefined,
      error: undefined,
      reason: undefined,
      attempts: [],
      output: "",
      outputCut: undefined,
      stderr: undefined,
    };
    this.jobs.set(unique, job);
    this.prune();
    this.changed();
    return job;
  }

  get(id: string): Job | undefined {
    this.prune();
    return this.jobs.get(id);
  }

  /** The jobs (of one hook, when given), newest first. */
  list(hook?: string): Job[] {
    this.prune();
    const out: Job[] = [];
    for (const job of this.jobs.values()) if (hook === undefined || job.hook === hook) out.push(job);
    return out.reverse();
  }

  /** An attempt starts. */
  started(job: Job): Attempt {
    const attempt: Attempt = { number: job.attempts.length + 1, started: this.iso() };
    job.attempts.push(attempt);
    job.state = "running";
    job.started ??= attempt.started;
    this.changed();
    return attempt;
  }

  /** An attempt ended; the job stays running when another attempt follows. */
  attemptEnded(job: Job, attempt: Attempt, r: AttemptResult): void {
    const ended = this.now();
    attempt.ended = new Date(ended).toISOString();
    attempt.durationMs = ended - Date.parse(attempt.started);
    attempt.exitCode = r.exitCode;
    if (r.signal) attempt.signal = r.signal;
    if (r.error !== undefined) attempt.error = r.error;
    if (r.timedOut) attempt.timedOut = true;
    const keep = this.opts.outputBytes;
    if (r.output.length > keep) {
      job.output = r.output.subarray(r.output.length - keep).toString("utf8");
      job.outputCut = r.output.length;
    } else {
      job.output = r.output.toString("utf8");
      job.outputCut = undefined;
    }
    if (r.stderr) job.stderr = r.stderr.subarray(Math.max(0, r.stderr.length - keep)).toString("utf8");
    job.exitCode = r.exitCode;
    job.signal = r.signal;
    job.error = r.error;
    this.changed();
  }

  /** The job is over: the state its last attempt gives it. */
  finish(job: Job): void {
    const last = job.attempts[job.attempts.length - 1];
    const state: JobState = !last ? "dropped" : last.timedOut ? "timed-out" : last.error === undefined ? "succeeded" : "failed";
    this.end(job, state);
  }

  /** The job will not run (superseded by a later trigger, the server shutting down…). */
  drop(job: Job, reason: string): void {
    job.reason = reason;
    this.end(job, "dropped");
  }

  /** Shutdown: jobs not finished are dropped, and the file is written now. */
  close(reason: string): void {
    for (const job of this.jobs.values()) if (!FINAL_STATES.has(job.state)) this.drop(job, reason);
    this.flush();
  }

  private end(job: Job, state: JobState): void {
    job.state = state;
    job.ended = this.iso();
    if (job.started) job.durationMs = Date.parse(job.ended) - Date.parse(job.started);
    this.changed();
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  /** Drops finished jobs past their age, then the oldest finished ones beyond `keep`. */
  private prune(): void {
    const { keep, maxAgeMs } = this.opts;
    if (maxAgeMs > 0) {
      const oldest = this.now() - maxAgeMs;
      // Oldest first: past the first job created after the cut-off, none is old enough.
      for (const [id, job] of this.jobs) {
        if (Date.parse(job.created) >= oldest) break;
        if (FINAL_STATES.has(job.state) && Date.parse(job.ended ?? job.created) < oldest) this.jobs.delete(id);
      }
    }
    let excess = this.jobs.size - keep;
    for (const [id, job] of this.jobs) {
      if (excess <= 0) break;
      if (!FINAL_STATES.has(job.state)) continue;
      this.jobs.delete(id);
      excess--;
    }
  }

  private changed(): void {
    if (this.opts.file === undefined || this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
    this.flushTimer.unref();
  }

  /** Writes the history to the file now: a temporary file renamed over it (mode 0600: outputs may hold secrets). */
  flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const file = this.opts.file;
    if (file === undefined) return;
    this.prune();
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      // Created afresh (O_EXCL): a symlink planted at the temporary name is removed, never followed.
      rmSync(tmp, { force: true });
      writeFileSync(tmp, JSON.stringify({ version: 1, jobs: [...this.jobs.values()] }) + "\n", { mode: 0o600, flag: "wx" });
      renameSync(tmp, file);
    } catch (e) {
      this.warn(`cannot write the jobs file ${file} (${(e as Error).message}); the history stays in memory`);
    }
  }
}

/** The jobs of a history file; throws Error saying what is wrong. */
function parseJobs(text: string): Job[] {
  const data = JSON.parse(text) as unknown;
  if (typeof data !== "object" || data === null || !Array.isArray((data as { jobs?: unknown }).jobs)) throw new Error('no "jobs" list');
  const jobs = (data as { jobs: unknown[] }).jobs;
  for (const [i, j] of jobs.entries()) {
    const job = j as Partial<Job> | null;
    const ok = typeof job === "object" && job !== null && typeof job.id === "string" && typeof job.hook === "string" && STATES.has(String(job.state)) && Array.isArray(job.attempts) && typeof job.created === "string";
    if (!ok) throw new Error(`job #${i + 1} is malformed`);
    job.output = typeof job.output === "string" ? job.output : "";
  }
  return jobs as Job[];
}
