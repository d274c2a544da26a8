// Comparing a given secret with a configured one in constant time, whatever their lengths.
import { hash, timingSafeEqual } from "node:crypto";

// Digests of configured values, computed once: only the given side varies. Bounded, so values a
// client could choose never grow it without limit.
const configuredDigests = new Map<string, Buffer>();

/** Whether `given` equals `configured`, comparing SHA-256 digests (always of equal length) in constant time. */
export function sameSecret(given: string, configured: string): boolean {
  let expected = configuredDigests.get(configured);
  if (expected === undefined) {
    expected = Buffer.from(hash("sha256", configured, "base64"), "base64");
    if (configuredDigests.size < 10_000) configuredDigests.set(configured, expected);
  }
  // Through a base64 string: a small Buffer.from comes from Node's pool, a "buffer" digest
  // would be a fresh external allocation per request, and those drive full GCs.
  return timingSafeEqual(Buffer.from(hash("sha256", given, "base64"), "base64"), expected);
}
