// The hook fields of ours that shape how a triggered command runs and answers: async-response,
// status-from-exit-code, retry, debounce, rate-limit and deduplicate. Checked when the hooks file loads (a
// problem stops the start, or -validate reports it) and resolved once per hook into a RunPolicy.
import type { Hook } from "./hook.js";
import { parseGoDuration } from "../go/duration.js";

export interface RetryPolicy {
  attempts: number;
  delayMs: number;
  maxDelayMs: number;
  exitCodes: ReadonlySet<number> | undefined;
}

const DEFAULT_RETRY_DELAY = "1s";
const DEFAULT_RETRY_MAX_DELAY = "1m";

export interface RunPolicy {
  /** async-response: answer 202 Accepted at once, Location: the job. */
  async: boolean;
  /** status-from-exit-code: a captured hook's status follows its command's exit code. */
  statusFromExit: boolean;
  retry: RetryPolicy | undefined;
  /** debounce: the quiet period in ms; 0 is none. */
  debounceMs: number;
  rate: { requests: number; periodMs: number } | undefined;
}

function duration(text: string, field: string, min: number): number {
  let ms: number;
  try {
    ms = parseGoDuration(text);
  } catch {
    ms = -1;
  }
  if (ms < min) throw new Error(`"${field}" must be a duration such as "500ms", "10s" or "1m"${min > 0 ? " (more than 0)" : ""}, not ${JSON.stringify(text)}`);
  return ms;
}

/** The hook's run policy; throws Error saying what is wrong with its fields. */
export function runPolicy(hook: Hook): RunPolicy {
  const answersLater = hook["include-command-output-in-response"] === true || hook["stream-command-output"] === true;
  const async = hook["async-response"] === true;
  if (async && answersLater)
    throw new Error(
      '"async-response" answers before the command runs: drop include-command-output-in-response and stream-command-output (the job keeps the output)',
    );
  const debounce = hook.debounce;
  const debounceMs = debounce === undefined || debounce === "" ? 0 : duration(debounce, "debounce", 1);
  if (debounceMs > 0 && answersLater)
    throw new Error('"debounce" answers before the command runs: drop include-command-output-in-response and stream-command-output');
  let retry: RetryPolicy | undefined;
  const r = hook.retry;
  if (r !== undefined) {
    if (hook["stream-command-output"] === true) throw new Error('"retry" cannot repeat a streamed answer: drop stream-command-output');
    const attempts = r.attempts ?? 1;
    if (attempts < 1) throw new Error('"retry.attempts" counts every run, the first included: 1 or more');
    retry = {
      attempts,
      delayMs: duration(r.delay ?? DEFAULT_RETRY_DELAY, "retry.delay", 0),
      maxDelayMs: duration(r["max-delay"] ?? DEFAULT_RETRY_MAX_DELAY, "retry.max-delay", 0),
      exitCodes: r["exit-codes"] === undefined ? undefined : new Set(r["exit-codes"]),
    };
  }
  let rate: RunPolicy["rate"];
  const rl = hook["rate-limit"];
  if (rl !== undefined) {
    if (!rl.requests || rl.requests < 1) throw new Error('"rate-limit.requests" must be 1 or more');
    rate = { requests: rl.requests, periodMs: duration(rl.period ?? "", "rate-limit.period", 1) };
  }
  return { async, statusFromExit: hook["status-from-exit-code"] === true, retry, debounceMs, rate };
}

/** deduplicate.window when the hook gives none. */
export const DEDUP_WINDOW_DEFAULT = "10m";
/** 24 hours, in milliseconds: the longest window (how long delivery ids are kept). */
export const MAX_DEDUP_WINDOW = 24 * 3600_000;

/** The hook's de-duplication window in milliseconds; 0 when it does not de-duplicate. */
export function dedupWindowMs(hook: Hook): number {
  return hook.deduplicate?.id ? parseGoDuration(hook.deduplicate.window ?? DEDUP_WINDOW_DEFAULT) : 0;
}
