// The request a job keeps for replay (-jobs-replay): what POST /jobs/<id>/replay sends through the
// hook again. Bounded by -jobs-request-max (a larger body is not kept, and the job cannot be
// replayed); the headers named by -jobs-redact-header are left out; signature headers are kept
// (the record lists them), since the command may read them.
import type { Hook, Rule } from "../hooks/hook.js";
import type { RequestHead } from "../http/contract.js";

export interface KeptRequest {
  method: string;
  /** The path and query as sent. */
  url: string;
  remoteAddr: string;
  /** [name, value] as sent, less the redacted ones. */
  headers: [string, string][];
  /** The body, base64. Absent when it was larger than -jobs-request-max (`bodyCut` then gives its size). */
  body?: string;
  bodyCut?: number;
  /** Headers left out (-jobs-redact-header), as named in the request. */
  redacted?: string[];
  /** Signature headers kept, as named in the request (they prove the original delivery: keep the record private). */
  signatureHeaders?: string[];
}

export interface KeepOptions {
  /** -jobs-request-max: bytes of body kept. */
  maxBody: number;
  /** -jobs-redact-header, lower-cased. */
  redact: ReadonlySet<string>;
}

/** Headers the signature schemes read whatever the hook names (standard-webhooks, stripe, slack). */
const SCHEME_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature", "stripe-signature", "x-slack-signature", "x-slack-request-timestamp"];
const NOT_SIGNATURES: ReadonlySet<string> = new Set(["value", "regex", "ip-whitelist"]);

/** The header names (lower-cased) the hook's signature matches read. */
function signatureNames(rule: Rule | undefined, into: Set<string>): Set<string> {
  if (!rule) return into;
  for (const r of [...(rule.and ?? []), ...(rule.or ?? []), ...(rule.not ? [rule.not] : [])]) signatureNames(r, into);
  const m = rule.match;
  if (m && !NOT_SIGNATURES.has(m.type)) {
    if (m.parameter?.source === "header" && m.parameter.name) into.add(m.parameter.name.toLowerCase());
    for (const h of SCHEME_HEADERS) into.add(h);
    if (m.type === "scalr-signature") for (const h of ["x-signature", "date"]) into.add(h);
  }
  return into;
}

export function keepRequest(head: RequestHead, body: Buffer, hook: Hook, opts: KeepOptions): KeptRequest {
  const signatures = signatureNames(hook["trigger-rule"], new Set());
  const headers: [string, string][] = [];
  const redacted: string[] = [];
  const signed: string[] = [];
  const raw = head.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (opts.redact.has(lower)) {
      redacted.push(name);
      continue;
    }
    if (signatures.has(lower)) signed.push(name);
    headers.push([name, raw[i + 1]!]);
  }
  const kept: KeptRequest = { method: head.method, url: head.url, remoteAddr: head.remoteAddr, headers };
  if (body.length <= opts.maxBody) kept.body = body.toString("base64");
  else kept.bodyCut = body.length;
  if (redacted.length > 0) kept.redacted = redacted;
  if (signed.length > 0) kept.signatureHeaders = signed;
  return kept;
}

/** Why a kept request cannot be replayed, or undefined when it can. */
export function notReplayable(kept: KeptRequest | undefined): string | undefined {
  if (!kept) return "it kept no request (it ran before -jobs-replay was on)";
  // Read back from a history file or another instance's record: checked before use.
  const wellFormed =
    typeof kept.method === "string" &&
    typeof kept.url === "string" &&
    kept.url.startsWith("/") &&
    typeof kept.remoteAddr === "string" &&
    Array.isArray(kept.headers) &&
    kept.headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === "string" && typeof h[1] === "string") &&
    (kept.body === undefined || typeof kept.body === "string") &&
    (kept.bodyCut === undefined || (Number.isSafeInteger(kept.bodyCut) && kept.bodyCut >= 0));
  if (!wellFormed) return "its kept request is not well-formed (a damaged record)";
  if (kept.body === undefined)
    return `its request body of ${kept.bodyCut ?? 0} bytes was not kept (larger than -jobs-request-max, or among the oldest given up to keep the history's bodies within 64 MiB)`;
  return undefined;
}

/** The request again, as the transport would hand it over. */
export function replayedHead(kept: KeptRequest): { head: RequestHead; body: Buffer } {
  return {
    // A new id for the new job, whatever -x-request-id says.
    head: {
      method: kept.method,
      url: kept.url,
      remoteAddr: kept.remoteAddr,
      rawHeaders: kept.headers.filter(([n]) => n.toLowerCase() !== "x-request-id").flat(),
    },
    body: Buffer.from(kept.body ?? "", "base64"),
  };
}
