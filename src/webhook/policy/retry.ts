// Retries of a failed command (hook field "retry"): how many attempts, which failures retry, and
// the wait before each next attempt — exponential backoff with jitter, so hooks failing together
// do not retry in step.
import type { RetryPolicy } from "../hooks/run-fields.js";

/** How an attempt ended, as far as retrying cares. */
export interface AttemptOutcome {
  /** Go's error text; undefined when the command succeeded. */
  error?: string;
  /** null when a signal ended it or it could not start. */
  exitCode: number | null;
  timedOut?: boolean;
}

/** Whether another attempt follows the `attempt`-th (counting from 1). A command that could not start never retries. */
export function shouldRetry(policy: RetryPolicy, attempt: number, o: AttemptOutcome): boolean {
  if (o.error === undefined || attempt >= policy.attempts) return false;
  const started = o.exitCode !== null || o.timedOut === true || o.error.startsWith("signal: ");
  if (!started) return false;
  if (policy.exitCodes === undefined) return true;
  return o.exitCode !== null && policy.exitCodes.has(o.exitCode);
}

/**
 * The wait after the `attempt`-th attempt: delay × 2^(attempt−1), at most max-delay, then a random
 * point in its upper half ("equal jitter": never less than half the backoff, never more than it).
 */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const full = Math.min(policy.maxDelayMs, policy.delayMs * 2 ** (attempt - 1));
  return Math.round(full / 2 + random() * (full / 2));
}
