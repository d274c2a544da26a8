// The server's counters for -metrics, rendered in Prometheus' text exposition format 0.0.4.
// Counting is a Map lookup and an increment on the request path; the text is built only when
// /metrics is read. The command runner owns the one instance.

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Upper bounds, in seconds, of the execution duration histogram's buckets. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** How a command run ended: "success", "failure" (non-zero exit, signal), "error" (could not start), "timeout". */
export type Outcome = "success" | "failure" | "error" | "timeout";

interface Histogram {
  /** Per bucket, not cumulative; the last slot is +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

export class Metrics {
  private readonly requests = new Map<string, Map<number, number>>();
  private readonly executions = new Map<string, Map<Outcome, number>>();
  private readonly durations = new Map<string, Histogram>();
  private readonly queues = new Map<string, number>();

  /** `runningHooks` lists the hook id of every command running now. */
  constructor(private readonly runningHooks: () => Iterable<string>) {}

  /** An answered request to a hook URL; an unknown hook id counts under hook "" (ids a client makes up must not grow the output). */
  request(hook: string, status: number): void {
    let byStatus = this.requests.get(hook);
    if (byStatus === undefined) this.requests.set(hook, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  /** A finished command run and how long it took (no duration for one that never started). */
  execution(hook: string, outcome: Outcome, seconds?: number): void {
    let byOutcome = this.executions.get(hook);
    if (byOutcome === undefined) this.executions.set(hook, (byOutcome = new Map()));
    byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
    if (seconds === undefined) return;
    let h = this.durations.get(hook);
    if (h === undefined) this.durations.set(hook, (h = { counts: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 }));
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    h.counts[i]!++;
    h.sum += seconds;
    h.count++;
  }

  /** The number of requests of a hook waiting for a free command slot, set by whoever owns the queue. */
  queueDepth(hook: string, n: number): void {
    this.queues.set(hook, n);
  }

  /** The whole exposition text. */
  render(): string {
    const out: string[] = [];
    out.push("# HELP webhook_requests_total Requests answered on hook URLs, by hook id and HTTP status.");
    out.push("# TYPE webhook_requests_total counter");
    for (const [hook, byStatus] of this.requests) {
      for (const [status, n] of byStatus) out.push(`webhook_requests_total{hook="${label(hook)}",status="${status}"} ${n}`);
    }
    out.push("# HELP webhook_executions_total Finished command runs, by hook id and outcome.");
    out.push("# TYPE webhook_executions_total counter");
    for (const [hook, byOutcome] of this.executions) {
      for (const [outcome, n] of byOutcome) out.push(`webhook_executions_total{hook="${label(hook)}",outcome="${outcome}"} ${n}`);
    }
    out.push("# HELP webhook_execution_duration_seconds How long commands ran, by hook id.");
    out.push("# TYPE webhook_execution_duration_seconds histogram");
    for (const [hook, h] of this.durations) {
      const l = label(hook);
      let cumulative = 0;
      for (let i = 0; i < BUCKETS.length; i++) {
        cumulative += h.counts[i]!;
        out.push(`webhook_execution_duration_seconds_bucket{hook="${l}",le="${BUCKETS[i]}"} ${cumulative}`);
      }
      out.push(`webhook_execution_duration_seconds_bucket{hook="${l}",le="+Inf"} ${h.count}`);
      out.push(`webhook_execution_duration_seconds_sum{hook="${l}"} ${h.sum}`);
      out.push(`webhook_execution_duration_seconds_count{hook="${l}"} ${h.count}`);
    }
    out.push("# HELP webhook_running_commands Commands running now, by hook id.");
    out.push("# TYPE webhook_running_commands gauge");
    const running = new Map<string, number>();
    for (const hook of this.runningHooks()) running.set(hook, (running.get(hook) ?? 0) + 1);
    for (const [hook, n] of running) out.push(`webhook_running_commands{hook="${label(hook)}"} ${n}`);
    out.push("# HELP webhook_queue_depth Requests waiting for a command slot (max-concurrency), by hook id.");
    out.push("# TYPE webhook_queue_depth gauge");
    for (const [hook, n] of this.queues) out.push(`webhook_queue_depth{hook="${label(hook)}"} ${n}`);
    return out.join("\n") + "\n";
  }
}

/** A label value escaped as the format asks: backslash, double quote and newline. */
export function label(v: string): string {
  return /[\\"\n]/.test(v) ? v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n") : v;
}
