// What of a request's payload a hook reads: its trigger rule, its command's arguments, environment
// and files, parse-parameters-as-json and deduplicate. A large XML body is decoded (on a thread,
// taking seconds) only when the hook reads its payload, and only the parts read come back.
import type { Argument, Hook, HookRequest, Rule } from "./hook.js";
import { matches, type PreparedRules } from "./hook-set.js";
import { evaluate, type Evaluation } from "./rules.js";
import { ParameterNodeError } from "./values.js";

/** The dot paths of the payload a hook reads, or "whole" when it reads all of it (entire-payload). */
export type PayloadReads = readonly string[] | "whole";

const known = new WeakMap<Hook, PayloadReads>();

export function payloadReads(hook: Hook): PayloadReads {
  let reads = known.get(hook);
  if (reads === undefined) {
    const args: (Argument | undefined)[] = [
      ...[...matches(hook["trigger-rule"])].map((m) => m.parameter),
      ...(hook["pass-arguments-to-command"] ?? []),
      ...(hook["pass-environment-to-command"] ?? []),
      ...(hook["pass-file-to-command"] ?? []),
      ...(hook["parse-parameters-as-json"] ?? []),
      hook.deduplicate?.id,
    ];
    reads = args.some((a) => a?.source === "entire-payload") ? "whole" : args.filter((a) => a?.source === "payload").map((a) => a!.name ?? "");
    known.set(hook, reads);
  }
  return reads;
}

/**
 * Whether the request is answered without its payload: nothing of the hook reads it, or its rule
 * fails (or errs) before reading it. parse-parameters-as-json must have been applied.
 */
export function answeredWithoutPayload(hook: Hook, r: HookRequest, prepared: PreparedRules): boolean {
  const reads = payloadReads(hook);
  if (reads !== "whole" && reads.length === 0) return true;
  const rule = hook["trigger-rule"];
  const result = rule && withoutPayload(rule, r, prepared);
  return result !== undefined && (!result.ok || (result.error !== undefined && !(result.error instanceof ParameterNodeError)));
}

/** Thrown when the probe's rule evaluation reads the payload. */
class PayloadRead extends Error {}

/**
 * The rule's result when it does not read the payload to reach it (an `and` whose header match
 * fails first), else undefined. Evaluated without logging: the real evaluation logs.
 */
function withoutPayload(rule: Rule, r: HookRequest, prepared: PreparedRules): Evaluation | undefined {
  const probe: HookRequest = {
    id: r.id,
    method: r.method,
    remoteAddr: r.remoteAddr,
    contentType: r.contentType,
    rawBody: r.rawBody,
    allowSignatureErrors: r.allowSignatureErrors,
    get headers() {
      return r.headers;
    },
    get query() {
      return r.query;
    },
    get payload(): never {
      throw new PayloadRead();
    },
  };
  const result = evaluate(rule, probe, () => undefined, prepared);
  return result.error instanceof PayloadRead ? undefined : result;
}
