// Counters of jobs and of the run policies for -metrics, appended to the server's exposition text:
// finished jobs by state, retries, debounced and rate-limited triggers, per hook id.
import { label } from "./metrics.js";

type Counter = Map<string, number>;

/** `State` names a job's final states (jobs/job.ts JobState); the counters only print them. */
export class RunCounters<State extends string> {
  private readonly jobs = new Map<string, Map<State, number>>();
  private readonly retries: Counter = new Map();
  private readonly debounced: Counter = new Map();
  private readonly rateLimited: Counter = new Map();

  job(hook: string, state: State): void {
    let byState = this.jobs.get(hook);
    if (byState === undefined) {
      byState = new Map();
      this.jobs.set(hook, byState);
    }
    byState.set(state, (byState.get(state) ?? 0) + 1);
  }

  retry(hook: string): void {
    bump(this.retries, hook);
  }

  debounce(hook: string): void {
    bump(this.debounced, hook);
  }

  rateLimit(hook: string): void {
    bump(this.rateLimited, hook);
  }

  render(): string {
    const out: string[] = [];
    out.push("# HELP webhook_jobs_total Jobs that reached a final state (-jobs), by hook id and state.");
    out.push("# TYPE webhook_jobs_total counter");
    for (const [hook, byState] of this.jobs) for (const [state, n] of byState) out.push(`webhook_jobs_total{hook="${label(hook)}",state="${state}"} ${n}`);
    counter(out, "webhook_job_retries_total", "Attempts that ran again after a failure (retry), by hook id.", this.retries);
    counter(out, "webhook_debounced_total", "Triggers superseded by a later one within the quiet period (debounce), by hook id.", this.debounced);
    counter(out, "webhook_rate_limited_total", "Triggers answered 429 by the hook's rate-limit, by hook id.", this.rateLimited);
    return out.join("\n") + "\n";
  }
}

function bump(c: Counter, hook: string): void {
  c.set(hook, (c.get(hook) ?? 0) + 1);
}

function counter(out: string[], name: string, help: string, c: Counter): void {
  out.push(`# HELP ${name} ${help}`);
  out.push(`# TYPE ${name} counter`);
  for (const [hook, n] of c) out.push(`${name}{hook="${label(hook)}"} ${n}`);
}
