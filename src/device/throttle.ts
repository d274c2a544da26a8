// Login throttling per client address: after a few failures each further attempt waits longer (doubling up to
// a ceiling), however many connections the address opens. One instance owns the state for every login surface
// that shares it (FTP, web basic auth); its memory is bounded by `maxAddresses`.

/** The address is so far behind that its attempt is refused without being checked. */
export class ThrottledError extends Error {
  override readonly name = "ThrottledError";
  readonly code = "throttled";
  constructor(readonly retryAfterMs: number) {
    super(`Too many failed logins from this address; try again in ${Math.ceil(retryAfterMs / 1000)} s.`);
  }
}

export interface ThrottleOptions {
  /** Failures that cost nothing (typos). Default 3. */
  freeFailures?: number;
  /** Delay after the first failure beyond the free ones; doubles with each further failure. Default 1 s. */
  baseDelayMs?: number;
  /** Ceiling of the delay; an attempt that would wait longer is refused. Default 30 s. */
  maxDelayMs?: number;
  /** An address with no failure for this long starts afresh. Default 15 min. */
  forgetAfterMs?: number;
  /** Addresses remembered at once; the least recently failed are forgotten first. Default 10 000. */
  maxAddresses?: number;
  now?: () => number;
}

/** What a login surface needs: ask before checking credentials, report the outcome after. */
export interface LoginThrottle {
  /**
   * Reserves this attempt's turn: resolves to the milliseconds to wait before checking the credentials (0 when
   * the address has no recent failures). Throws ThrottledError when the wait would exceed the ceiling.
   */
  admit(address: string): number;
  /** The credentials were wrong: returns the address's failures in a row and the delay its next attempt gets. */
  failed(address: string): { failures: number; delayMs: number };
  /** The credentials were right: the address starts afresh. */
  succeeded(address: string): void;
}

interface Entry {
  failures: number;
  /** When the next attempt may be checked. */
  next: number;
  lastFailure: number;
}

export function createLoginThrottle(options: ThrottleOptions = {}): LoginThrottle {
  const free = options.freeFailures ?? 3;
  const base = options.baseDelayMs ?? 1_000;
  const ceiling = options.maxDelayMs ?? 30_000;
  const forgetAfter = options.forgetAfterMs ?? 15 * 60_000;
  const maxAddresses = options.maxAddresses ?? 10_000;
  const now = options.now ?? Date.now;
  // Map order is recency of the last failure: the first key is the one to forget when full.
  const entries = new Map<string, Entry>();

  const delay = (failures: number): number => (failures < free ? 0 : Math.min(ceiling, base * 2 ** Math.min(failures - free, 30)));
  const current = (key: string, t: number): Entry | undefined => {
    const e = entries.get(key);
    if (e && t - e.lastFailure > forgetAfter) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };

  return {
    admit(address) {
      const t = now();
      const e = current(keyOf(address), t);
      if (!e) return 0;
      const wait = Math.max(0, e.next - t);
      if (wait > ceiling) throw new ThrottledError(wait);
      // Attempts running in parallel take turns: each one pushes the next turn back.
      e.next = Math.max(t, e.next) + delay(e.failures);
      return wait;
    },
    failed(address) {
      const t = now();
      const key = keyOf(address);
      const e = current(key, t) ?? { failures: 0, next: 0, lastFailure: t };
      e.failures++;
      e.lastFailure = t;
      e.next = Math.max(e.next, t + delay(e.failures));
      entries.delete(key);
      entries.set(key, e);
      if (entries.size > maxAddresses) entries.delete(entries.keys().next().value!);
      return { failures: e.failures, delayMs: delay(e.failures) };
    },
    succeeded(address) {
      entries.delete(keyOf(address));
    },
  };
}

/** IPv4 addresses count one by one; an IPv6 host usually owns a whole /64, so that is one address here. */
export function keyOf(address: string): string {
  const plain = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "").replace(/%.*$/, "");
  if (!plain.includes(":")) return plain;
  const [head = "", tail = ""] = plain.toLowerCase().split("::");
  const left = head ? head.split(":") : [];
  const right = plain.includes("::") && tail ? tail.split(":") : [];
  const groups = plain.includes("::") ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right] : left;
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":") + "::/64";
}
