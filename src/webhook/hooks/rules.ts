// Trigger rules: and / or / not / match, evaluated with the reference's error semantics.
// An evaluation yields a result and maybe an error; a missing parameter (ParameterNodeError) only
// makes a match false, a signature error may be "soft" inside an `or`, anything else is a 500.
import { createHmac } from "node:crypto";
import type { HookRequest, MatchRule, Rule } from "./hook.js";
import { getArgument, ParameterNodeError } from "./values.js";
import { canonicalHeaderKey } from "../go/header.js";
import type { PreparedRules } from "./hook-set.js";
import { isSignatureType, sameDigest, SignatureError, verifySignature } from "./signatures.js";

export interface Evaluation {
  ok: boolean;
  error?: Error;
}

/** Warnings the reference prints for deprecated match types; the caller logs them. */
export type Warn = (message: string) => void;

/** Evaluates `rule` for request `r`; `prepared` is what the hook set the rule belongs to prepared for its rules. */
export function evaluate(rule: Rule, r: HookRequest, warn: Warn, prepared: PreparedRules): Evaluation {
  if (rule.and) {
    for (const sub of rule.and) {
      const e = evaluate(sub, r, warn, prepared);
      if (e.error) return { ok: false, error: e.error };
      if (!e.ok) return { ok: false };
    }
    return { ok: true };
  }
  if (rule.or) {
    for (const sub of rule.or) {
      const e = evaluate(sub, r, warn, prepared);
      if (e.error && !(e.error instanceof ParameterNodeError)) {
        if (!(r.allowSignatureErrors && e.error instanceof SignatureError)) return { ok: false, error: e.error };
      }
      if (e.ok) return { ok: true };
    }
    return { ok: false };
  }
  if (rule.not) {
    const e = evaluate(rule.not, r, warn, prepared);
    return e.error ? { ok: !e.ok, error: e.error } : { ok: !e.ok };
  }
  if (rule.match) return evaluateMatch(rule.match, r, warn, prepared);
  return { ok: false };
}

function evaluateMatch(m: MatchRule, r: HookRequest, warn: Warn, prepared: PreparedRules): Evaluation {
  try {
    if (m.type === "ip-whitelist") return { ok: checkIpWhitelist(r.remoteAddr, m["ip-range"] ?? "") };
    if (m.type === "scalr-signature") return { ok: checkScalrSignature(r, m.secret ?? "") };
    if (isSignatureType(m.type)) return { ok: verifySignature({ ...m, type: m.type }, r) };
    const arg = getArgument(m.parameter ?? { source: "" as never }, r);
    switch (m.type) {
      case "value":
        return { ok: prepared.secrets.same(arg, m.value ?? "") };
      case "regex":
        return { ok: prepared.regexes.match(m.regex ?? "", arg) };
      case "payload-hash-sha1":
        warn("warn: use of deprecated option payload-hash-sha1; use payload-hmac-sha1 instead");
        return { ok: checkHmac("sha1", r, m, arg) };
      case "payload-hmac-sha1":
        return { ok: checkHmac("sha1", r, m, arg) };
      case "payload-hash-sha256":
        warn("warn: use of deprecated option payload-hash-sha256: use payload-hmac-sha256 instead");
        return { ok: checkHmac("sha256", r, m, arg) };
      case "payload-hmac-sha256":
        return { ok: checkHmac("sha256", r, m, arg) };
      case "payload-hash-sha512":
        warn("warn: use of deprecated option payload-hash-sha512: use payload-hmac-sha512 instead");
        return { ok: checkHmac("sha512", r, m, arg) };
      case "payload-hmac-sha512":
        return { ok: checkHmac("sha512", r, m, arg) };
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

function checkHmac(alg: "sha1" | "sha256" | "sha512", r: HookRequest, m: MatchRule, signature: string): boolean {
  const secret = m.secret ?? "";
  if (secret === "") throw new Error("signature validation secret can not be empty");
  const mac = createHmac(alg, secret).update(r.rawBody);
  for (const h of m.parameter?.["headers-to-add-to-signature-payload"] ?? []) {
    const v = r.headers[canonicalHeaderKey(h)];
    if (v !== undefined && v !== "") mac.update(String(v));
  }
  const digest = mac.digest();
  const signatures = signaturesFrom(signature, `${alg}=`);
  for (const s of signatures) if (sameDigest(digest, s, "hex")) return true;
  throw new SignatureError("WEBHOOK_SIGNATURES_MISMATCH", { signatures: signatures.join(" "), onEmpty: r.rawBody.length === 0 ? " on empty payload" : "" });
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

/** An address as 4 or 16 bytes, or undefined when it does not parse. */
function parseIp(s: string): number[] | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(s)) {
    const parts = s.split(".").map(Number);
    if (parts.some((p, i) => p > 255 || (s.split(".")[i]!.length > 1 && s.split(".")[i]!.startsWith("0")))) return undefined;
    return parts;
  }
  if (!s.includes(":") || !/^[0-9a-fA-F:.]+$/.test(s)) return undefined;
  let tail: number[] = [];
  let text = s;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIp(s.slice(lastColon + 1));
    if (v4?.length !== 4) return undefined;
    tail = v4;
    text = s.slice(0, lastColon + 1) + "0:0";
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string): number[] | undefined => {
    if (h === "") return [];
    const out: number[] = [];
    for (const g of h.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      const n = parseInt(g, 16);
      out.push(n >> 8, n & 0xff);
    }
    return out;
  };
  const a = groups(halves[0]!);
  const b = halves.length === 2 ? groups(halves[1]!) : [];
  if (!a || !b) return undefined;
  let bytes: number[];
  if (halves.length === 2) {
    if (a.length + b.length > 14) return undefined;
    bytes = [...a, ...new Array<number>(16 - a.length - b.length).fill(0), ...b];
  } else {
    if (a.length !== 16) return undefined;
    bytes = a;
  }
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function toV4(ip: number[]): number[] | undefined {
  if (ip.length === 4) return ip;
  const mapped = ip.slice(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff;
  return mapped ? ip.slice(12) : undefined;
}

/** Whether "ip:port" (IPv6 in brackets) falls in one of the space-separated CIDR ranges. */
function checkIpWhitelist(remoteAddr: string, ipRange: string): boolean {
  let ip = remoteAddr.replace(/^[ [\]]+|[ [\]]+$/g, "");
  const colon = ip.lastIndexOf(":");
  if (colon !== -1) ip = ip.slice(0, colon).replace(/^[ [\]]+|[ [\]]+$/g, "");
  const parsed = parseIp(ip);
  if (!parsed) throw new Error(`invalid IP address found in remote address '${remoteAddr}'`);
  for (let range of ipRange.split(/\s+/).filter(Boolean)) {
    if (!range.includes("/")) range += "/32";
    const slash = range.indexOf("/");
    const net = parseIp(range.slice(0, slash));
    const bitsText = range.slice(slash + 1);
    const bits = /^\d+$/.test(bitsText) ? Number(bitsText) : NaN;
    if (!net || !(bits <= net.length * 8)) throw new Error(`invalid CIDR address: ${range}`);
    const netBytes = net.length === 4 ? net : toV4(net) && bits >= 96 ? toV4(net)! : net;
    const netBits = net.length === 16 && netBytes.length === 4 ? bits - 96 : bits;
    const addr = netBytes.length === 4 ? toV4(parsed) : parsed.length === 16 ? parsed : undefined;
    if (!addr || addr.length !== netBytes.length) continue;
    let inside = true;
    for (let bit = 0; bit < netBits; bit++) {
      const byte = bit >> 3;
      const mask = 0x80 >> (bit & 7);
      if ((addr[byte]! & mask) !== (netBytes[byte]! & mask)) {
        inside = false;
        break;
      }
    }
    if (inside) return true;
  }
  return false;
}
