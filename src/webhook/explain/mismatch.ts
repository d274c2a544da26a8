// Saying why a hook's trigger rule did not hold: the log line (-verbose; level "debug" in JSON logs)
// and, for a hook with "trigger-rule-mismatch-response": "explain" (ours, opt-in: an explanation
// helps whoever probes the hook too), the answer's JSON body. Both name the failed node as a path
// through the rule tree ("and[1] match payload-hmac-sha256 on header X-Hub-Signature-256: signature
// does not match"), which rules.ts builds without any secret, signature or compared value in it.
import type { Hook } from "../hooks/hook.js";

/** The longest explanation written: a deep `or` of many branches is cut, so a line stays a line. */
export const MAX_WHY = 400;

function cut(why: string): string {
  return why.length <= MAX_WHY ? why : `${why.slice(0, MAX_WHY - 1)}…`;
}

/** The log line of a request whose rule did not hold. */
export function notSatisfiedLine(hookId: string, why: string): string {
  return `hook ${hookId}: rule not satisfied: ${cut(why)}`;
}

/** The log line naming the secret of a rotation that held, by index ("secret[1]"), never by value. */
export function heldLine(hookId: string, held: string[]): string {
  return `hook ${hookId}: rule satisfied with ${held.join(", ")}`;
}

/** Whether the hook's mismatch answer explains itself. */
export function explains(hook: Hook): boolean {
  return hook["trigger-rule-mismatch-response"] === "explain";
}

/** The JSON body of an explained answer: the reference's message, the hook, and the failed node. */
export function explainedBody(hookId: string, message: string, why: string): string {
  return JSON.stringify({ message, hook: hookId, failed: cut(why) });
}
