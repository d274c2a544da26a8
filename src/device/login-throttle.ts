// Brute-force throttling of logins, per client address, for any protocol (web basic auth, FTP USER/PASS):
// a few failures are free, then each further failure doubles the wait before the next attempt is checked.
// A success forgets the address. Memory is bounded: old addresses are forgotten first.
import { isIPv6 } from "node:net";

export interface LoginThrottleOptions {
  /** Failures from one address that cost nothing (typos). Default 3. */
  freeFailures?: number;
  /** Wait after the first failure beyond the free ones; doubles with each further failure. Default 1 s. */
  baseDelayMs?: number;
  /** Longest wait. Default 60 s. */
  maxDelayMs?: number;
  /** An address with no failure for this long starts afresh. Default 15 min. */
  forgetAfterMs?: number;
  /** Addresses remembered at most (the oldest go first). Default 10 000. */
  maxAddresses?: number;
  /** The clock (tests). */
  now?: () => number;
}

interface Record {
  failures: number;
  lastFailure: number;
  /** No attempt is checked before this time. */
  until: number;
}

/** One throttle per listening service; addresses as `socket.remoteAddress` gives them. */
export class LoginThrottle {
  private readonly records = new Map<string, Record>();
  private readonly free: number;
  private readonly base: number;
  private readonly max: number;
  private readonly forget: number;
  private readonly capacity: number;
  private readonly now: () => number;

  constructor(opts: LoginThrottleOptions = {}) {
    this.free = opts.freeFailures ?? 3;
    this.base = opts.baseDelayMs ?? 1_000;
    this.max = opts.maxDelayMs ?? 60_000;
    this.forget = opts.forgetAfterMs ?? 15 * 60_000;
    this.capacity = opts.maxAddresses ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  /** 0 when `address` may try a login now; otherwise the milliseconds until it may. */
  wait(address: string | undefined): number {
    const r = this.current(address);
    return r ? Math.max(0, r.until - this.now()) : 0;
  }

  /** Records a failed login; returns how many failed in a row from this address. */
  fail(address: string | undefined): number {
    const key = addressKey(address);
    const now = this.now();
    const r = this.current(address) ?? { failures: 0, lastFailure: now, until: 0 };
    r.failures++;
    r.lastFailure = now;
    const beyond = r.failures - this.free;
    r.until = beyond > 0 ? now + Math.min(this.max, this.base * 2 ** Math.min(beyond - 1, 30)) : 0;
    // Re-inserted at the end, so the map stays ordered by last failure and the oldest is dropped first.
    this.records.delete(key);
    this.records.set(key, r);
    while (this.records.size > this.capacity) this.records.delete(this.records.keys().next().value!);
    return r.failures;
  }

  /** A successful login from `address` forgets its failures. */
  succeed(address: string | undefined): void {
    this.records.delete(addressKey(address));
  }

  private current(address: string | undefined): Record | undefined {
    const key = addressKey(address);
    const r = this.records.get(key);
    if (r && this.now() - r.lastFailure > this.forget) {
      this.records.delete(key);
      return undefined;
    }
    return r;
  }
}

/**
 * The key of a client address: IPv4 as is (also when IPv4-mapped, "::ffff:1.2.3.4"); IPv6 by its /64 prefix,
 * since one host usually holds a whole /64.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = "", tail = ""] = address.split("%")[0]!.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::") ? [...left, ...Array(8 - left.length - right.length).fill("0"), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, "")).join(":")}::/64`;
}
