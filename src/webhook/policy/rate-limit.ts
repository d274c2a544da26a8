// Rate limit (hook field "rate-limit": { "requests": N, "period": "1m" }): at most N triggers of a
// hook per period. The period is a fixed window that opens with the first trigger counted in it;
// beyond N, a trigger is refused until the window closes (the caller answers 429 with
// Retry-After: the whole seconds left, at least 1). Only triggers count (requests whose rules
// hold); requests refused here do not.

export type RateDecision = { ok: true } | { ok: false; retryAfterS: number };

export class RateLimiter {
  private readonly windows = new Map<string, { opened: number; count: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  take(hook: string, requests: number, periodMs: number): RateDecision {
    const t = this.now();
    let w = this.windows.get(hook);
    if (!w || t - w.opened >= periodMs) {
      w = { opened: t, count: 0 };
      this.windows.set(hook, w);
    }
    if (w.count < requests) {
      w.count++;
      return { ok: true };
    }
    return { ok: false, retryAfterS: Math.max(1, Math.ceil((w.opened + periodMs - t) / 1000)) };
  }
}
