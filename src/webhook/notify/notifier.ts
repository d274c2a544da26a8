// Notifications (the hook field `notify`): the one owner of those waiting and under way. An outcome
// is queued and the run goes on at once; at most MAX_IN_FLIGHT are sent at a time, each with its
// target's timeout and retries. A slow or dead target cannot pile up memory: beyond MAX_PENDING
// waiting, the oldest is dropped, with a log line. Log lines name a target by its label (kind,
// scheme, host), never by its URL, credentials or headers.
import type { Hook } from "../hooks/hook.js";
import type { Log } from "../log/log.js";
import { OUTPUT_TAIL, type Outcome, reason, send } from "./send.js";
import { type NotifyState, type NotifyTarget, notifyTargets } from "./target.js";

export const MAX_IN_FLIGHT = 8;
export const MAX_PENDING = 256;
/** The wait before the first retry; doubled for each later one, up to RETRY_MAX_MS. */
const RETRY_MS = 1000;
const RETRY_MAX_MS = 30_000;

interface Notification {
  target: NotifyTarget;
  outcome: Outcome;
}

/** How an attempt ended, as the notifier needs it. */
export interface Ended {
  job: string;
  attempt: number;
  exitCode: number | null | undefined;
  durationMs: number | undefined;
  output: Buffer | string;
}

export class Notifier {
  private readonly pending: Notification[] = [];
  private inFlight = 0;
  private readonly targets = new WeakMap<Hook, NotifyTarget[]>();
  private idle: (() => void)[] = [];

  constructor(
    private readonly log: Log,
    private readonly limits = { inFlight: MAX_IN_FLIGHT, pending: MAX_PENDING },
  ) {}

  /** The hook's job reached `state`: queues a notification for each target that wants it. Never blocks, never throws. */
  outcome(hook: Hook, state: NotifyState, e: Ended): void {
    if (hook.notify === undefined) return;
    const output = typeof e.output === "string" ? e.output : e.output.subarray(Math.max(0, e.output.length - 4 * OUTPUT_TAIL)).toString("utf8");
    const outcome: Outcome = {
      hook: hook.id,
      job: e.job,
      state,
      attempt: e.attempt,
      exitCode: e.exitCode ?? null,
      durationMs: Math.round(e.durationMs ?? 0),
      output: output.length > OUTPUT_TAIL ? output.slice(output.length - OUTPUT_TAIL) : output,
    };
    for (const target of this.targetsOf(hook)) if (target.on.has(state)) this.enqueue({ target, outcome });
  }

  /** Resolves once nothing is waiting or under way, or after `ms` (shutdown). */
  settle(ms: number): Promise<void> {
    if (this.inFlight === 0 && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private targetsOf(hook: Hook): NotifyTarget[] {
    let t = this.targets.get(hook);
    // The field was checked when the hooks file loaded.
    if (t === undefined) this.targets.set(hook, (t = notifyTargets(hook)));
    return t;
  }

  private enqueue(n: Notification): void {
    if (this.pending.length >= this.limits.pending) {
      const old = this.pending.shift()!;
      this.log.always(
        `[${old.outcome.job}] notify: dropped the ${old.outcome.state} notification of ${old.outcome.hook} to ${old.target.label}: ${this.limits.pending} notifications were waiting (are the targets slow or down?)`,
        { rid: old.outcome.job, hook: old.outcome.hook },
      );
    }
    this.pending.push(n);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.limits.inFlight && this.pending.length > 0) {
      const n = this.pending.shift()!;
      this.inFlight++;
      void this.deliver(n).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.inFlight === 0 && this.pending.length === 0) for (const f of this.idle.splice(0)) f();
      });
    }
  }

  private async deliver({ target, outcome }: Notification): Promise<void> {
    const fields = { rid: outcome.job, hook: outcome.hook };
    const what = `the ${outcome.state} notification of ${outcome.hook} to ${target.label}`;
    for (let n = 0; ; n++) {
      try {
        await send(target, outcome);
        this.log.print(`[${outcome.job}] notify: sent ${what}`, fields);
        return;
      } catch (e) {
        if (n >= target.retries) {
          this.log.always(`[${outcome.job}] notify: could not send ${what} (${n + 1} ${n === 0 ? "try" : "tries"}): ${reason(e)}`, fields);
          return;
        }
        await new Promise((r) => setTimeout(r, Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** n)));
      }
    }
  }
}
