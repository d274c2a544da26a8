// Shared-queue dispatch (-queue): a triggered execution becomes a job in the queue several instances
// share, run by whichever instance pulls it (that instance's LocalDispatch runs it). The answer
// waits until the job is stored (fire-and-forget hooks) or has run (captured and streamed hooks,
// whose output comes back from the instance that ran it).
import { msText } from "../go/duration.js";
import { goQuote } from "../go/json.js";
import type { Hook } from "../hooks/hook.js";
import type { HookSet } from "../hooks/hook-set.js";
import { dedupWindowMs } from "../hooks/run-fields.js";
import { jobIdOf } from "../jobs/job.js";
import type { Log } from "../log/log.js";
import type { Executions } from "../policy/executions.js";
import type { JobOutcome, QueueHook, SharedQueue } from "../queue/queue.js";
import { readArgument } from "../run/command.js";
import { Tail } from "../run/output.js";
import type { OutputSink } from "../run/spawn.js";
import { begin } from "../trace/trace.js";
import { type Dispatch, type Dispatched, type LimitDefaults, limitsOf, type Trigger } from "./dispatch.js";

const END_FROM_RECORD =
  "[webhook: the job's end was read back from its record: output sent while this instance missed messages from NATS may be missing above]";

export class SharedDispatch implements Dispatch {
  constructor(
    private readonly queue: SharedQueue,
    /** Runs the jobs this instance pulls; it serves the same hooks. */
    private readonly local: Dispatch,
    private readonly executions: Executions,
    private readonly limits: LimitDefaults & { maxOutput: number },
    private readonly log: Log,
  ) {}

  serve(hooks: HookSet): Promise<void> {
    void this.local.serve(hooks);
    return this.queue.serve([...hooks.values()].map((h) => this.queueHook(h)));
  }

  /** The hook's limits and de-duplication as the shared queue applies them. */
  private queueHook(hook: Hook): QueueHook {
    const { max, maxQueue } = limitsOf(hook, this.limits);
    return { id: hook.id, maxConcurrency: max, maxQueue, dedupWindowMs: dedupWindowMs(hook), rateLimited: hook["rate-limit"] !== undefined };
  }

  async dispatch(t: Trigger): Promise<Dispatched> {
    const { hook, req, policy, fields } = t;
    const rid = req.id;
    if (policy.rate) {
      const verdict = await this.queue.limited(hook.id, policy.rate.requests, policy.rate.periodMs);
      if (verdict.kind === "unavailable") {
        this.log.print(`[${rid}] ${hook.id} got matched, but ${verdict.reason} - answering 503`, fields);
        return { kind: "unavailable", tooLarge: false };
      }
      if (verdict.kind === "limited") {
        this.executions.counters.rateLimit(hook.id);
        this.log.print(
          `[${rid}] ${hook.id} got matched, but its rate-limit of ${policy.rate.requests} per ${msText(policy.rate.periodMs)} is reached over all instances - answering 429`,
          fields,
        );
        return { kind: "limited", retryAfterS: verdict.retryAfterS };
      }
    }
    const streamed = hook["stream-command-output"] === true;
    const captured = !streamed && hook["include-command-output-in-response"] === true;
    const maxOutput = this.limits.maxOutput;
    let tail = new Tail(maxOutput);
    // A streamed job's first chunks may come before the job is known to be stored.
    const early: Buffer[] = [];
    let sink: OutputSink = (c) => early.push(c);
    const onOutput: OutputSink | undefined = streamed ? (c) => sink(c) : captured ? (c) => tail.push(c) : undefined;
    const dedup = hook.deduplicate?.id;
    const deliveryId = dedup ? readArgument(dedup, req, "deduplicate", this.log, fields) : undefined;
    // traces: the job's message carries this span's traceparent to the instance that pulls it.
    const span = begin(req, "publish", "producer", { nest: true });
    const submitted = await this.queue.submit({
      hook: this.queueHook(hook),
      id: jobIdOf(rid),
      req,
      debounceMs: policy.debounceMs,
      ...(deliveryId ? { deliveryId } : {}),
      ...(onOutput ? { onOutput } : {}),
      // The answer is the last attempt's output.
      ...(captured ? { onAttempt: () => (tail = new Tail(maxOutput)) } : {}),
      ...(span ? { traceparent: span.traceparent } : {}),
    });
    span?.end(submitted.kind === "queued" ? undefined : submitted.kind);
    if (submitted.kind === "full") {
      const { max, maxQueue } = limitsOf(hook, this.limits);
      this.log.print(
        `[${rid}] ${hook.id} got matched, but ${max} commands are running (max-concurrency) and ${maxQueue} are waiting (max-queue) over all instances - answering 429`,
        fields,
      );
      return { kind: "busy" };
    }
    if (submitted.kind === "unavailable") {
      this.log.print(`[${rid}] ${hook.id} got matched, but ${submitted.reason} - answering ${submitted.tooLarge ? 413 : 503}`, fields);
      return { kind: "unavailable", tooLarge: submitted.tooLarge === true };
    }
    if (submitted.kind === "duplicate") {
      this.log.print(
        `[${rid}] ${hook.id} got matched, but delivery ${goQuote(deliveryId ?? "")} was already accepted as job ${submitted.id} (deduplicate): nothing runs`,
        fields,
      );
      return { kind: "duplicate", jobId: submitted.id };
    }
    this.log.print(
      `[${rid}] ${hook.id} hook triggered successfully: queued as job ${submitted.id}${policy.debounceMs > 0 ? ` (debounced: it runs once no other trigger came for ${policy.debounceMs}ms)` : ""}`,
      fields,
    );
    const jobId = submitted.id;
    const result = submitted.result;
    if (!result) return { kind: "queued", jobId };
    if (streamed) {
      const run = (onChunk: OutputSink): Promise<JobOutcome> => {
        sink = onChunk;
        for (const c of early.splice(0)) onChunk(c);
        return result.then((r) => {
          if (r.fromRecord) onChunk(Buffer.from(`${END_FROM_RECORD}\n`));
          return r;
        });
      };
      return { kind: "streamed", jobId, run };
    }
    // Read back from the record, the output sent as it came may be incomplete: the record's is whole (its last -jobs-output bytes).
    return {
      kind: "ran",
      jobId,
      result: result.then((r) => {
        if (r.fromRecord) return r;
        const live = tail.result();
        if (!missedOutput(r, tail, live)) return { ...r, output: live };
        this.log.print(
          `[${rid}] ${hook.id}: output of job ${jobId} was lost on its way (NATS was away as the command wrote it): answering with its record's`,
          fields,
        );
        return r;
      }),
    };
  }
}

/**
 * Whether chunks of a captured job's output never came: they travel on core NATS, at most once, and one
 * sent while NATS was away is gone. The job's end came with its record, whose output is the command's
 * (its last -jobs-output bytes; beyond, outputCut says how many it wrote).
 */
function missedOutput(r: JobOutcome, tail: Tail, live: Buffer): boolean {
  if (r.outputCut !== undefined) return tail.received < r.outputCut;
  // The record holds the command's bytes read as UTF-8, so the chunks read the same way match it. With
  // part of them dropped (the hook's own output limit) there is nothing exact to compare: they are trusted.
  return tail.whole && live.toString("utf8") !== r.output.toString("utf8");
}
