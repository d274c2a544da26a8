// What happens to a triggered request on its way to its command, past the trigger rules: the
// hook's rate-limit, its job (-jobs), its debounce, and the attempts of its retry policy. The
// server holds one Executions; it owns the rate windows, the debounced triggers and the counters.
import type { Hook } from "../hooks/hook.js";
import type { Log, LogFields } from "../log/log.js";
import { runPolicy, type RunPolicy } from "../hooks/run-fields.js";
import type { Job, JobState } from "../jobs/job.js";
import { RunCounters } from "../log/run-counters.js";
import type { JobStore } from "../jobs/store.js";
import { Debouncer } from "./debounce.js";
import { RateLimiter } from "./rate-limit.js";
import { backoffMs, shouldRetry } from "./retry.js";
import type { Notifier } from "../notify/notifier.js";

/** What one run of a command gave. */
export interface AttemptRun {
  output: Buffer;
  /** exclude-stderr-from-response: the command's stderr, kept apart. */
  stderr?: Buffer;
  /** Go's error text; undefined on success. */
  error?: string;
  exitCode: number | null;
  signal?: string;
  timedOut?: boolean;
  /** How long the command ran. */
  durationMs?: number;
}

export class Executions {
  readonly counters = new RunCounters<JobState>();
  private readonly rates = new RateLimiter();
  private readonly debouncer = new Debouncer();
  private readonly policies = new WeakMap<Hook, RunPolicy>();

  constructor(
    /** -jobs: where jobs are kept; undefined without -jobs. */
    readonly jobs: JobStore | undefined,
    private readonly log: Log,
    /** Sends the hooks' notify targets what became of their jobs. */
    private readonly notifier?: Notifier,
  ) {}

  /** The hook's run policy (its fields were checked when the hooks file loaded). */
  policy(hook: Hook): RunPolicy {
    let p = this.policies.get(hook);
    if (p === undefined) this.policies.set(hook, (p = runPolicy(hook)));
    return p;
  }

  /** The seconds to wait when the hook's rate-limit refuses this trigger; undefined when it may go on. */
  limited(hook: Hook, policy: RunPolicy): number | undefined {
    if (!policy.rate) return undefined;
    const d = this.rates.take(hook.id, policy.rate.requests, policy.rate.periodMs);
    if (d.ok) return undefined;
    this.counters.rateLimit(hook.id);
    return d.retryAfterS;
  }

  /** A job for a trigger that will run (-jobs), queued. */
  newJob(rid: string, hook: Hook): Job | undefined {
    return this.jobs?.create(rid, hook.id);
  }

  /** The job will not run. */
  drop(job: Job | undefined, reason: string): void {
    if (!job || !this.jobs) return;
    this.jobs.drop(job, reason);
    this.counters.job(job.hook, "dropped");
  }

  /**
   * Debounce: `run` starts once the hook's quiet period passes without another trigger; a later
   * trigger supersedes this one (its job is dropped). Resolves when this trigger ran or was dropped.
   */
  debounce(hook: Hook, policy: RunPolicy, rid: string, job: Job | undefined, run: () => Promise<unknown>, fields: LogFields): Promise<void> {
    return new Promise<void>((resolve) => {
      const superseded = this.debouncer.trigger(
        hook.id,
        policy.debounceMs,
        {
          run: () => void run().finally(resolve),
          drop: (reason, superseded) => {
            this.log.print(`[${rid}] ${hook.id}'s trigger does not run: ${reason}`, fields);
            if (superseded) this.counters.debounce(hook.id);
            this.drop(job, reason);
            resolve();
          },
        },
        job?.id ?? rid,
      );
      if (!superseded) this.log.print(`[${rid}] ${hook.id} is debounced: its command runs once no other trigger came for ${policy.debounceMs}ms`, fields);
    });
  }

  /** Runs the command (`once`) as many times as the retry policy asks; the last attempt's result. */
  async run(hook: Hook, policy: RunPolicy, job: Job | undefined, once: () => Promise<AttemptRun>, fields: LogFields): Promise<AttemptRun> {
    for (let n = 1; ; n++) {
      const attempt = job && this.jobs?.started(job);
      const result = await once();
      if (job && attempt) this.jobs!.attemptEnded(job, attempt, result);
      const wait = this.retryIn(hook, policy, n, result, fields, job?.id);
      if (wait === undefined) {
        if (job && this.jobs) {
          this.jobs.finish(job);
          this.counters.job(job.hook, job.state);
        }
        if (hook.notify) this.notify(hook, job?.state ?? stateOf(result), job?.id ?? fields.rid ?? "", n, result);
        return result;
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** After attempt `n` ended with `result`: the wait before the next attempt (counted, logged and notified), or undefined when none follows. */
  retryIn(hook: Hook, policy: RunPolicy, n: number, result: AttemptRun, fields: LogFields, jobId = fields.rid ?? ""): number | undefined {
    if (!policy.retry || !shouldRetry(policy.retry, n, result)) return undefined;
    const wait = backoffMs(policy.retry, n);
    this.counters.retry(hook.id);
    this.log.print(`[${fields.rid ?? ""}] attempt ${n} of ${policy.retry.attempts} failed (${result.error ?? ""}): retrying in ${wait}ms`, fields);
    this.notify(hook, "retried", jobId, n, result);
    return wait;
  }

  /** Attempt `n` of job `jobId` ended so, and the job is in `state` (or another attempt follows: "retried"): the hook's notify targets are told. */
  notify(hook: Hook, state: JobState | "retried", jobId: string, n: number, result: AttemptRun): void {
    if (this.notifier === undefined || hook.notify === undefined || state === "dropped" || state === "queued" || state === "running") return;
    this.notifier.outcome(hook, state, { job: jobId, attempt: n, exitCode: result.exitCode, durationMs: result.durationMs, output: result.output });
  }

  /** Shutdown begins: debounced triggers still in their quiet period never run. Returns how many. */
  dropDebounced(): number {
    return this.debouncer.dropAll("the server shut down before the quiet period ended");
  }
}

/** The state a job ends in after this last attempt (as JobStore.finish decides it, for runs without -jobs). */
function stateOf(r: AttemptRun): JobState {
  return r.timedOut ? "timed-out" : r.error === undefined ? "succeeded" : "failed";
}
