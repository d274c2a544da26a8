// The jobs the server remembers (-jobs, and always with -queue): the one owner of what a job's
// record says — its state, attempts and output. Where records are kept is a JobRecords: this
// process (memory-records.ts) or JetStream key-value storage shared by all instances (kv-records.ts).
import { FINAL_STATES, jobIdOf, type Attempt, type Job, type JobState } from "./job.js";
import type { JobRecords } from "./records.js";

/** How one attempt ended, as the runner reports it. */
export interface AttemptResult {
  exitCode: number | null;
  signal?: string;
  error?: string;
  timedOut?: boolean;
  output: Buffer;
  stderr?: Buffer;
}

/** What a job created for a request starts with besides its hook (-jobs-replay: its request; a replay: the job it replays, its rule skipped). */
export type JobExtras = Pick<Job, "replayOf" | "triggerRule" | "request">;

export class JobStore {
  /** Extras for the jobs of requests on their way to the dispatch, by job id (see `expect`). */
  private readonly extras = new Map<string, JobExtras>();
  /** Jobs in this process holding a kept request body, oldest first, and the bytes those bodies take. */
  private readonly bodies: Job[] = [];
  private bodyBytes = 0;

  constructor(
    readonly records: JobRecords,
    /** Bytes of a job's output kept (the tail). */
    private readonly outputBytes: number,
    private readonly now: () => number = Date.now,
    /** Bytes of kept request bodies (-jobs-replay) held in this process at most: past it the oldest go. Infinity where records live elsewhere (-queue). */
    private readonly bodyBudget = Infinity,
  ) {}

  /** A new job for an accepted request, queued. A long id is cut (jobIdOf); one already taken gets a suffix (see JobRecords.add). */
  create(id: string, hook: string): Job {
    // Every field in the order the JSON shows them (unset ones are left out of it).
    const job: Job = {
      id: jobIdOf(id),
      hook,
      replayOf: undefined,
      triggerRule: undefined,
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
    const extras = this.extras.get(job.id);
    if (extras) {
      this.extras.delete(job.id);
      job.replayOf = extras.replayOf;
      job.triggerRule = extras.triggerRule;
      job.request = extras.request;
    }
    this.records.add(job);
    if (job.request?.body !== undefined && this.bodyBudget !== Infinity) this.holdBody(job);
    return job;
  }

  /**
   * The job the dispatch may create for request `rid` starts with `extras`; `forget` once the
   * dispatch has decided (a request refused by its limits gets no job).
   */
  expect(rid: string, extras: JobExtras): void {
    this.extras.set(jobIdOf(rid), extras);
  }

  forget(rid: string): void {
    this.extras.delete(jobIdOf(rid));
  }

  /** Keeps the job's request body within the budget: the oldest bodies held are given up (those jobs can no longer be replayed). */
  private holdBody(job: Job): void {
    this.bodies.push(job);
    this.bodyBytes += job.request!.body!.length;
    while (this.bodyBytes > this.bodyBudget && this.bodies.length > 0) {
      const old = this.bodies.shift()!;
      const kept = old.request!;
      this.bodyBytes -= kept.body!.length;
      kept.bodyCut = Buffer.byteLength(kept.body!, "base64");
      kept.body = undefined;
      this.records.changed(old);
    }
  }

  get(id: string): Job | undefined | Promise<Job | undefined> {
    return this.records.get(id);
  }

  /** The jobs (of one hook, when given), newest first. */
  list(hook?: string): Job[] | Promise<Job[]> {
    return this.records.list(hook);
  }

  /** Resolves once every change of the job so far is stored. */
  stored(job: Job): Promise<void> {
    return this.records.stored(job);
  }

  /** An attempt starts. */
  started(job: Job): Attempt {
    const attempt: Attempt = { number: job.attempts.length + 1, started: this.iso() };
    job.attempts.push(attempt);
    job.state = "running";
    job.started ??= attempt.started;
    this.records.changed(job);
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
    const keep = this.outputBytes;
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
    this.records.changed(job);
  }

  /** The attempt under way ended without a result: the process running it stopped (-queue: another instance runs the next). */
  abandoned(job: Job, error: string): void {
    const attempt = job.attempts[job.attempts.length - 1];
    if (!attempt || attempt.ended !== undefined) return;
    const ended = this.now();
    attempt.ended = new Date(ended).toISOString();
    attempt.durationMs = ended - Date.parse(attempt.started);
    attempt.exitCode = null;
    attempt.error = error;
    this.records.changed(job);
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

  /** Shutdown: the jobs that end with this process are dropped, and what is pending is stored. */
  close(reason: string): void | Promise<void> {
    for (const job of this.records.held()) if (!FINAL_STATES.has(job.state)) this.drop(job, reason);
    return this.records.close();
  }

  private end(job: Job, state: JobState): void {
    job.state = state;
    job.ended = this.iso();
    if (job.started) job.durationMs = Date.parse(job.ended) - Date.parse(job.started);
    this.records.changed(job);
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }
}
