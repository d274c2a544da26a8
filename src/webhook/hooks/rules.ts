// Trigger rules: and / or / not / match, evaluated with the reference's error semantics.
// An evaluation yields a result and maybe an error; a missing parameter (ParameterNodeError) only
// makes a match false, a signature error may be "soft" inside an `or`, anything else is a 500.
import { createHmac } from "node:crypto";
import type { HookRequest, MatchRule, Rule } from "./hook.js";
import { getArgument, ParameterNodeError } from "./values.js";
import { canonicalHeaderKey } from "../go/header.js";
import type { PreparedRules } from "./hook-set.js";
import { isSignatureType, sameDigest, SignatureError, type Verdict, verifySignature, withEachSecret } from "./signatures.js";
import { checkIpWhitelist } from "./ip-ranges.js";
import { matchNets, matchSecrets, matchValues } from "./match-files.js";
import { tokenCarrier } from "./config.js";

export interface Evaluation {
  ok: boolean;
  error?: Error;
  /** When the rule does not hold (or fails): the path to the node that failed and why, never a compared value. */
  why?: string;
  /** When it holds: which secret of a rotation held, per match ("match payload-hmac-sha256 …: secret[1]"). */
  held?: string[];
}

/** Warnings the reference prints for deprecated match types; the caller logs them. */
export type Warn = (message: string) => void;

/** Evaluates `rule` for request `r`; `prepared` is what the hook set the rule belongs to prepared for its rules. */
export function evaluate(rule: Rule, r: HookRequest, warn: Warn, prepared: PreparedRules): Evaluation {
  if (rule.and) {
    let held: string[] | undefined;
    for (const [i, sub] of rule.and.entries()) {
      const e = evaluate(sub, r, warn, prepared);
      if (e.error) return { ok: false, error: e.error, why: `and[${i}] ${e.why}` };
      if (!e.ok) return { ok: false, why: `and[${i}] ${e.why}` };
      if (e.held) (held ??= []).push(...e.held);
    }
    return held ? { ok: true, held } : { ok: true };
  }
  if (rule.or) {
    const whys: string[] = [];
    for (const [i, sub] of rule.or.entries()) {
      const e = evaluate(sub, r, warn, prepared);
      if (e.error && !(e.error instanceof ParameterNodeError)) {
        if (!(r.allowSignatureErrors && e.error instanceof SignatureError)) return { ok: false, error: e.error, why: `or[${i}] ${e.why}` };
      }
      if (e.ok) return e.held ? { ok: true, held: e.held } : { ok: true };
      whys.push(`or[${i}] ${e.why}`);
    }
    return { ok: false, why: whys.length === 0 ? "or: empty" : `or: none held (${whys.join("; ")})` };
  }
  if (rule.not) {
    const e = evaluate(rule.not, r, warn, prepared);
    const why = e.error ? `not ${e.why}` : "not: the rule inside held";
    return e.error ? { ok: !e.ok, error: e.error, why } : { ok: !e.ok, why };
  }
  if (rule.match) {
    const e = evaluateMatch(rule.match, r, warn, prepared);
    const node = describeMatch(rule.match);
    if (e.ok) return e.secretIndex === undefined ? { ok: true } : { ok: true, held: [`${node}: secret[${e.secretIndex}]`] };
    return { ...e, why: `${node}: ${reason(rule.match, e)}` };
  }
  return { ok: false, why: "empty rule (no and, or, not or match)" };
}

/** "match <type> on <source> <name>", or "match <type>" when it reads no parameter. */
function describeMatch(m: MatchRule): string {
  const p = m.parameter;
  const reads = p && m.type !== "ip-whitelist" && m.type !== "scalr-signature" && !(isSignatureType(m.type) && !m.type.endsWith("-base64"));
  return reads ? `match ${m.type} on ${p.source} ${p.name ?? ""}`.trimEnd() : `match ${m.type}`;
}

/** Why a match did not hold, in words that give away no secret, signature or compared value. */
function reason(m: MatchRule, e: MatchEvaluation): string {
  const err = e.error;
  if (err instanceof ParameterNodeError) return `parameter ${m.parameter?.source ?? ""}.${m.parameter?.name ?? ""} not found`;
  if (err instanceof SignatureError) {
    if (err.code === "WEBHOOK_SIGNATURE_MISMATCH" || err.code === "WEBHOOK_SIGNATURES_MISMATCH") return "signature does not match";
    if (err.code === "WEBHOOK_SIGNATURE_TIMESTAMP") return "the signed timestamp is not a Unix time";
    if (err.code === "WEBHOOK_STRIPE_SIGNATURE_INCOMPLETE") return "Stripe-Signature has no t= or no v1=";
    return "the signed timestamp is outside the tolerance";
  }
  // A pattern compared with a token may say much of it.
  const hidePattern = m.type === "regex" && (m.redact ?? tokenCarrier(m.parameter));
  if (err) return hidePattern ? "the pattern is not one Go's regexp accepts" : err.message;
  switch (m.type) {
    case "value":
      return "value differs";
    case "regex":
      return hidePattern ? "does not match the pattern" : `does not match ${JSON.stringify(m.regex ?? "")}`;
    case "ip-whitelist":
      return `remote address ${e.remoteAddr ?? ""} is not in the allowed ranges`;
    default:
      return "signature headers not found";
  }
}

interface MatchEvaluation {
  ok: boolean;
  error?: Error;
  secretIndex?: number;
  /** ip-whitelist: the address that was checked. */
  remoteAddr?: string;
}

function evaluateMatch(m: MatchRule, r: HookRequest, warn: Warn, prepared: PreparedRules): MatchEvaluation {
  try {
    if (m.type === "ip-whitelist") return { ok: checkIpWhitelist(r.remoteAddr, m["ip-range"] ?? "", matchNets(m)), remoteAddr: r.remoteAddr };
    if (m.type === "scalr-signature") {
      const secrets = matchSecrets(m);
      return secrets.length === 0 ? { ok: checkScalrSignature(r, "") } : withEachSecret(secrets, (secret) => checkScalrSignature(r, secret));
    }
    if (isSignatureType(m.type)) return verifySignature(m as MatchRule & { type: typeof m.type }, r);
    const arg = getArgument(m.parameter ?? { source: "" as never }, r);
    switch (m.type) {
      case "value": {
        // Every value is compared (constant time each), so the time taken says nothing of which held.
        let index = -1;
        const values = matchValues(m);
        for (const [i, v] of values.entries()) if (prepared.secrets.same(arg, v) && index < 0) index = i;
        return index < 0 ? { ok: false } : values.length > 1 ? { ok: true, secretIndex: index } : { ok: true };
      }
      case "regex":
        return { ok: prepared.regexes.match(m.regex ?? "", arg) };
      case "payload-hash-sha1":
        warn("warn: use of deprecated option payload-hash-sha1; use payload-hmac-sha1 instead");
        return checkHmac("sha1", r, m, arg);
      case "payload-hmac-sha1":
        return checkHmac("sha1", r, m, arg);
      case "payload-hash-sha256":
        warn("warn: use of deprecated option payload-hash-sha256: use payload-hmac-sha256 instead");
        return checkHmac("sha256", r, m, arg);
      case "payload-hmac-sha256":
        return checkHmac("sha256", r, m, arg);
      case "payload-hash-sha512":
        warn("warn: use of deprecated option payload-hash-sha512: use payload-hmac-sha512 instead");
        return checkHmac("sha512", r, m, arg);
      case "payload-hmac-sha512":
        return checkHmac("sha512", r, m, arg);
      default:
        return { ok: false };
    }
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e : new Error(String(e)) };
  }
}

function signaturesFrom(source: string, prefix: string): string[] {
  if (!source.includes(",")) return [source.startsWith(prefix) ? source.slice(prefix.length) : source];
  return source
    .split(",")
    .filter((p) => p.startsWith(prefix))
    .map((p) => p.slice(prefix.length));
}

function checkHmac(alg: "sha1" | "sha256" | "sha512", r: HookRequest, m: MatchRule, signature: string): Verdict {
  return withEachSecret(matchSecrets(m), (secret) => {
    const mac = createHmac(alg, secret).update(r.rawBody);
    for (const h of m.parameter?.["headers-to-add-to-signature-payload"] ?? []) {
      const v = r.headers[canonicalHeaderKey(h)];
      if (v !== undefined && v !== "") mac.update(String(v));
    }
    const digest = mac.digest();
    const signatures = signaturesFrom(signature, `${alg}=`);
    for (const s of signatures) if (sameDigest(digest, s, "hex")) return true;
    throw new SignatureError("WEBHOOK_SIGNATURES_MISMATCH", { signatures: signatures.join(" "), onEmpty: r.rawBody.length === 0 ? " on empty payload" : "" });
  });
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** Parses Go's layout "Mon 02 Jan 2006 15:04:05 MST"; the zone abbreviation counts as UTC. */
function parseScalrDate(s: string): number {
  const m = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) ([A-Za-z]{3,5}|[+-]\d{2,4})$/.exec(s);
  const month = m ? MONTHS.indexOf(m[3]!) : -1;
  if (!m || month < 0) throw new Error(`parsing time ${JSON.stringify(s)} as "Mon 02 Jan 2006 15:04:05 MST": cannot parse`);
  return Date.UTC(Number(m[4]), month, Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7]));
}

function checkScalrSignature(r: HookRequest, signingKey: string): boolean {
  const provided = r.headers["X-Signature"];
  const date = r.headers["Date"];
  if (provided === undefined || date === undefined) return false;
  if (signingKey === "") throw new Error("signature validation signing key can not be empty");
  const digest = createHmac("sha1", signingKey).update(r.rawBody).update(String(date)).digest();
  if (!sameDigest(digest, String(provided), "hex")) {
    throw new SignatureError("WEBHOOK_SIGNATURE_MISMATCH", { signature: String(provided) });
  }
  const delta = Math.abs(Date.now() - parseScalrDate(String(date))) / 1000;
  if (delta > 300) throw new SignatureError("WEBHOOK_SIGNATURE_OUTDATED", {});
  return true;
}
