// Signature schemes of today's webhook senders, as `match` types of our own. Each one checks an
// HMAC over the raw body, compared in constant time; the schemes that sign a timestamp also
// refuse one outside the match's `tolerance` (default 5 minutes, either side of now), so a
// captured request cannot be replayed later.
//
//   standard-webhooks      webhook-id, webhook-timestamp, webhook-signature: "v1,<base64>" (space-separated
//                          for key rotation); HMAC-SHA256 over "id.timestamp.body"; secret "whsec_<base64 key>"
//   stripe-signature       Stripe-Signature: "t=<ts>,v1=<hex>[,v1=<hex>…]"; HMAC-SHA256 over "t.body"
//   slack-signature        X-Slack-Request-Timestamp, X-Slack-Signature: "v0=<hex>"; HMAC-SHA256 over "v0:ts:body"
//   payload-hmac-<alg>-base64  the header named by `parameter` holds base64 HMAC-<alg> of the body (Shopify)
import { createHmac, timingSafeEqual } from "node:crypto";
import type { HookRequest, MatchRule } from "./hook.js";
import { parseGoDuration } from "../go/duration.js";
import { getArgument } from "./values.js";
import { type ErrorArgs, WebhookError } from "../errors.js";
import { matchSecrets } from "./match-files.js";

/** A signature that does not match, or a timestamp outside the tolerance. */
export class SignatureError extends WebhookError {
  override readonly name = "SignatureError";
  constructor(
    ...args: ErrorArgs<
      | "WEBHOOK_SIGNATURE_MISMATCH"
      | "WEBHOOK_SIGNATURES_MISMATCH"
      | "WEBHOOK_SIGNATURE_OUTDATED"
      | "WEBHOOK_SIGNATURE_TOO_OLD"
      | "WEBHOOK_SIGNATURE_TIMESTAMP"
      | "WEBHOOK_STRIPE_SIGNATURE_INCOMPLETE"
    >
  ) {
    super(...args);
  }
}

export const SIGNATURE_TYPES = [
  "standard-webhooks",
  "stripe-signature",
  "slack-signature",
  "payload-hmac-sha1-base64",
  "payload-hmac-sha256-base64",
  "payload-hmac-sha512-base64",
] as const;

export type SignatureType = (typeof SIGNATURE_TYPES)[number];

const SIGNATURE_TYPE_SET: ReadonlySet<string> = new Set(SIGNATURE_TYPES);

export function isSignatureType(type: string): type is SignatureType {
  return SIGNATURE_TYPE_SET.has(type);
}

export const DEFAULT_TOLERANCE = "5m";

/** What is wrong with a match of one of these types, for the config check; undefined when nothing. */
export function signatureMatchProblem(m: MatchRule): string | undefined {
  if (!isSignatureType(m.type)) return undefined;
  const secrets = matchSecrets(m);
  if (secrets.length === 0) return `a ${m.type} match needs its "secret" or "secret-file"`;
  if (m.type === "standard-webhooks" && secrets.some((s) => standardKey(s) === undefined)) {
    return 'a standard-webhooks "secret" is "whsec_" followed by the base64 key the sender shows';
  }
  if (m.type.endsWith("-base64") && (m.parameter?.source !== "header" || !m.parameter.name)) {
    return `a ${m.type} match needs "parameter": {"source": "header", "name": "<the signature header>"}`;
  }
  if (m.tolerance !== undefined) {
    let ms: number;
    try {
      ms = parseGoDuration(m.tolerance);
    } catch {
      ms = 0;
    }
    if (!(ms >= 1000)) return `"tolerance" must be a duration of a second or more, such as "5m" or "1h", not ${JSON.stringify(m.tolerance)}`;
  }
  return undefined;
}

/** A match's verdict: whether it holds, and with several secrets (rotation), the index of the one that held. */
export interface Verdict {
  ok: boolean;
  secretIndex?: number;
}

const MISMATCH = new Set(["WEBHOOK_SIGNATURE_MISMATCH", "WEBHOOK_SIGNATURES_MISMATCH"]);

/**
 * Tries each secret in turn (each compared in constant time); the first one whose signature matches
 * holds. A mismatch with every secret throws the last one's error; any other error (an expired
 * timestamp of a matching signature) is thrown at once.
 */
export function withEachSecret(secrets: string[], verify: (secret: string) => boolean): Verdict {
  if (secrets.length === 0) throw new Error("signature validation secret can not be empty");
  for (const [i, secret] of secrets.entries()) {
    try {
      const ok = verify(secret);
      return ok && secrets.length > 1 ? { ok, secretIndex: i } : { ok };
    } catch (e) {
      if (!(e instanceof SignatureError && MISMATCH.has(e.code)) || i === secrets.length - 1) throw e;
    }
  }
  return { ok: false };
}

/**
 * Whether the request carries a valid signature of the match's scheme: false when its headers are
 * absent, a SignatureError when they are there but wrong or too old.
 */
export function verifySignature(m: MatchRule & { type: SignatureType }, r: HookRequest, now = Date.now()): Verdict {
  return withEachSecret(matchSecrets(m), (secret) => {
    switch (m.type) {
      case "standard-webhooks":
        return verifyStandard(m, r, secret, now);
      case "stripe-signature":
        return verifyStripe(m, r, secret, now);
      case "slack-signature":
        return verifySlack(m, r, secret, now);
      default:
        return verifyBase64(m.type, m, r, secret);
    }
  });
}

function header(r: HookRequest, name: string): string | undefined {
  const v = r.headers[name];
  return v === undefined ? undefined : String(v);
}

function hmac(alg: "sha1" | "sha256" | "sha512", key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const mac = createHmac(alg, key);
  for (const p of parts) mac.update(p);
  return mac.digest();
}

/**
 * Constant-time comparison of a digest with a signature given as text in the senders' spelling
 * (lowercase hex, padded base64), so no other spelling of the same bytes passes (a cut "=", an
 * extra hex digit, unused base64 bits, uppercase hex).
 */
export function sameDigest(digest: Buffer, given: string, encoding: "hex" | "base64"): boolean {
  const expected = Buffer.from(digest.toString(encoding));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

function checkTimestamp(m: MatchRule, text: string, now: number): void {
  if (!/^\d{1,15}$/.test(text)) throw new SignatureError("WEBHOOK_SIGNATURE_TIMESTAMP", { timestamp: JSON.stringify(text) });
  const toleranceMs = parseGoDuration(m.tolerance ?? DEFAULT_TOLERANCE);
  const skewMs = Math.abs(now - Number(text) * 1000);
  if (skewMs > toleranceMs) {
    throw new SignatureError("WEBHOOK_SIGNATURE_TOO_OLD", {
      timestamp: text,
      seconds: Math.round(skewMs / 1000),
      tolerance: m.tolerance ?? DEFAULT_TOLERANCE,
    });
  }
}

/** The key bytes of a Standard Webhooks secret ("whsec_" + base64); undefined when it is not one. */
function standardKey(secret: string): Buffer | undefined {
  const b64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return undefined;
  const key = Buffer.from(b64, "base64");
  return key.length > 0 ? key : undefined;
}

function verifyStandard(m: MatchRule, r: HookRequest, secret: string, now: number): boolean {
  const id = header(r, "Webhook-Id");
  const ts = header(r, "Webhook-Timestamp");
  const sigs = header(r, "Webhook-Signature");
  if (id === undefined || ts === undefined || sigs === undefined) return false;
  const key = standardKey(secret);
  if (!key) throw new Error('a standard-webhooks "secret" is "whsec_" followed by the base64 key the sender shows');
  const digest = hmac("sha256", key, `${id}.${ts}.`, r.rawBody);
  // Any one signature may match: a sender rotating its key signs with the old and the new one.
  const given = sigs
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => s.slice(3));
  if (!given.some((s) => sameDigest(digest, s, "base64")))
    throw new SignatureError("WEBHOOK_SIGNATURES_MISMATCH", { signatures: given.join(" "), onEmpty: "" });
  checkTimestamp(m, ts, now);
  return true;
}

function verifyStripe(m: MatchRule, r: HookRequest, secret: string, now: number): boolean {
  const value = header(r, "Stripe-Signature");
  if (value === undefined) return false;
  let ts: string | undefined;
  const given: string[] = [];
  for (const item of value.split(",")) {
    const eq = item.indexOf("=");
    const key = item.slice(0, eq).trim();
    if (key === "t") ts = item.slice(eq + 1).trim();
    else if (key === "v1") given.push(item.slice(eq + 1).trim());
  }
  if (ts === undefined || given.length === 0) throw new SignatureError("WEBHOOK_STRIPE_SIGNATURE_INCOMPLETE", {});
  const digest = hmac("sha256", secret, `${ts}.`, r.rawBody);
  if (!given.some((s) => sameDigest(digest, s, "hex"))) throw new SignatureError("WEBHOOK_SIGNATURES_MISMATCH", { signatures: given.join(" "), onEmpty: "" });
  checkTimestamp(m, ts, now);
  return true;
}

function verifySlack(m: MatchRule, r: HookRequest, secret: string, now: number): boolean {
  const ts = header(r, "X-Slack-Request-Timestamp");
  const sig = header(r, "X-Slack-Signature");
  if (ts === undefined || sig === undefined) return false;
  const digest = hmac("sha256", secret, `v0:${ts}:`, r.rawBody);
  if (!(sig.startsWith("v0=") && sameDigest(digest, sig.slice(3), "hex"))) throw new SignatureError("WEBHOOK_SIGNATURE_MISMATCH", { signature: sig });
  checkTimestamp(m, ts, now);
  return true;
}

function verifyBase64(type: SignatureType, m: MatchRule, r: HookRequest, secret: string): boolean {
  // Throws ParameterNodeError when the header is absent: the match is false, as for payload-hmac-*.
  const sig = getArgument(m.parameter ?? { source: "header" }, r);
  const alg = type === "payload-hmac-sha1-base64" ? "sha1" : type === "payload-hmac-sha512-base64" ? "sha512" : "sha256";
  if (!sameDigest(hmac(alg, secret, r.rawBody), sig, "base64")) throw new SignatureError("WEBHOOK_SIGNATURE_MISMATCH", { signature: sig });
  return true;
}

/** The strings of a match that must never be logged: its secrets, and the key inside a whsec_ secret. */
export function signatureSecrets(m: MatchRule): string[] {
  const secrets = matchSecrets(m);
  if (m.type !== "standard-webhooks") return secrets;
  return [...secrets, ...secrets.filter((s) => s.startsWith("whsec_")).map((s) => s.slice("whsec_".length))];
}
