// Login throttling per client address: after a few failures each further attempt waits longer (doubling up to
// a ceiling), however many connections the address opens. The device service owns one instance for every login
// surface (FTP, web basic auth), so failures on either count together; its memory is bounded by `maxAddresses`.
import { clientKey } from "../../shared/connection-counts.js";
import { DeviceError } from "../errors.js";

/** The address is so far behind that its attempt is refused without being checked. */
export class ThrottledError extends DeviceError<"DEVICE_LOGIN_THROTTLED"> {
  override name = "ThrottledError";
  constructor(readonly retryAfterMs: number) {
    super("DEVICE_LOGIN_THROTTLED", { seconds: Math.ceil(retryAfterMs / 1000) });
  }
}

export interface ThrottleOptions {
  /** Failures that cost nothing (typos). Default 5 (--login-attempts). */
  freeFailures?: number;
  /** Delay after the first failure beyond the free ones; doubles with each further failure. Default 1 s. */
  baseDelayMs?: number;
  /** Ceiling of the delay; an attempt that would wait longer is refused. Default 60 s. */
  maxDelayMs?: number;
  /** An address with no failure for this long starts afresh. Default 15 min. */
  forgetAfterMs?: number;
  /** Addresses remembered at once; the least recently failed are forgotten first. Default 10 000. */
  maxAddresses?: number;
  now?: () => number;
}

/**
 * What a login surface needs. A surface that holds the attempt (FTP) asks admit() before checking the
 * credentials; one that turns it away (the web API: 429) asks retryAfter(). Both report the outcome after.
 */
export interface LoginThrottle {
  /**
   * Reserves this attempt's turn: resolves to the milliseconds to wait before checking the credentials (0 when
   * the address has no recent failures). Throws ThrottledError when the wait would exceed the ceiling.
   */
  admit(address: string | undefined): number;
  /** Milliseconds until the address's next attempt may be checked (0: now), reserving nothing. */
  retryAfter(address: string | undefined): number;
  /**
   * The credentials for `account` ("web", "ftp") were wrong: returns the address's failures in a row (over
   * every account) and the delay its next attempt gets.
   */
  failed(address: string | undefined, account: string): { failures: number; delayMs: number };
  /**
   * The credentials for `account` were right: the address starts afresh, unless it also failed at another
   * account (knowing the FTP login must not wipe the record of guesses at the web password).
   */
  succeeded(address: string | undefined, account: string): void;
}

interface Entry {
  failures: number;
  /** When the next attempt may be checked. */
  next: number;
  lastFailure: number;
  /** The accounts that failed from this address since it last started afresh. */
  accounts: Set<string>;
}

export function createLoginThrottle(options: ThrottleOptions = {}): LoginThrottle {
  const free = options.freeFailures ?? 5;
  const base = options.baseDelayMs ?? 1_000;
  const ceiling = options.maxDelayMs ?? 60_000;
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
      const e = current(addressKey(address), t);
      if (!e) return 0;
      const wait = Math.max(0, e.next - t);
      if (wait > ceiling) throw new ThrottledError(wait);
      // Attempts running in parallel take turns: each one pushes the next turn back.
      e.next = Math.max(t, e.next) + delay(e.failures);
      return wait;
    },
    retryAfter(address) {
      const t = now();
      const e = current(addressKey(address), t);
      return e ? Math.max(0, e.next - t) : 0;
    },
    failed(address, account) {
      const t = now();
      const key = addressKey(address);
      const e = current(key, t) ?? { failures: 0, next: 0, lastFailure: t, accounts: new Set<string>() };
      e.failures++;
      e.accounts.add(account);
      e.lastFailure = t;
      e.next = Math.max(e.next, t + delay(e.failures));
      entries.delete(key);
      entries.set(key, e);
      if (entries.size > maxAddresses) entries.delete(entries.keys().next().value!);
      return { failures: e.failures, delayMs: delay(e.failures) };
    },
    succeeded(address, account) {
      const key = addressKey(address);
      const e = entries.get(key);
      if (!e) return;
      e.accounts.delete(account);
      if (e.accounts.size === 0) entries.delete(key);
    },
  };
}

/** The key a client address is throttled under (IPv6 by its /64, see clientKey); a socket without one is "unknown". */
export function addressKey(address: string | undefined): string {
  return clientKey(address) ?? "unknown";
}
