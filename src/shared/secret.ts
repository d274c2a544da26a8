// Comparing a given secret with a configured one in constant time, whatever their lengths.
import { hash, timingSafeEqual } from "node:crypto";

/** SHA-256 of a secret. Through a base64 string: a small Buffer.from comes from Node's pool, a "buffer" digest would be a fresh external allocation per request, and those drive full GCs. */
function digest(s: string): Buffer {
  return Buffer.from(hash("sha256", s, "base64"), "base64");
}

/** Whether `given` equals `configured`, comparing SHA-256 digests (always of equal length) in constant time. */
export function sameSecret(given: string, configured: string): boolean {
  return timingSafeEqual(digest(given), digest(configured));
}

/**
 * Configured secrets with their digests computed once, for whoever holds them and compares often:
 * only the given side is hashed per comparison. A value not among them is compared as sameSecret does.
 */
export class ConfiguredSecrets {
  private readonly digests = new Map<string, Buffer>();

  constructor(values: Iterable<string>) {
    for (const v of values) if (!this.digests.has(v)) this.digests.set(v, digest(v));
  }

  same(given: string, configured: string): boolean {
    return timingSafeEqual(digest(given), this.digests.get(configured) ?? digest(configured));
  }
}
