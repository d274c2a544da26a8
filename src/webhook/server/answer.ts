// The hook's answer, once its rules were evaluated: the one place where what became of a trigger
// (dispatch/dispatch.ts: limited, busy, unavailable, duplicate, queued, ran, streamed), however it
// was dispatched, becomes HTTP. Status codes and bodies are the reference's, and ours for our fields.
import { type Dispatched, type LimitDefaults, timeoutOf } from "../dispatch/dispatch.js";
import { msText } from "../go/duration.js";
import type { Hook } from "../hooks/hook.js";
import type { RunPolicy } from "../hooks/run-fields.js";
import type { HttpResponse } from "../http/contract.js";
import { STATUS_TEXT } from "../http/status.js";
import type { Log, LogFields } from "../log/log.js";
import type { ExecuteResult } from "../queue/queue.js";
import { type Headers, respond } from "./response.js";
import { streamAnswer } from "./stream.js";

export const MSG = {
  notFound: "Hook not found.",
  rulesNotSatisfied: "Hook rules were not satisfied.",
  ruleError: "Error occurred while evaluating hook rules.",
  commandError: "Error occurred while executing the hook's command. Please check your logs for more details.",
  multipartError: "Error occurred while parsing multipart form.",
  tooLarge: "Request body too large.",
  queueDown: "The hook's shared queue (-queue) cannot take the request now. Try again after the seconds in the Retry-After header.",
  busy: "Too many requests for this hook: it runs as many commands as its max-concurrency allows and its queue (max-queue) is full. Try again after the seconds in the Retry-After header.",
  rateLimited: "Too many requests for this hook: its rate-limit is reached. Try again after the seconds in the Retry-After header.",
} as const;

/** Seconds a client told 429 (queue full) or 503 (shared queue down) is asked to wait. */
const RETRY_AFTER_S = "1";
const TEXT = "text/plain; charset=utf-8";

/** The request being answered: its hook, id and log fields. */
export interface Answering {
  hook: Hook;
  rid: string;
  fields: LogFields;
}

export class Answers {
  constructor(
    private readonly log: Log,
    /** -jobs: a job's URL is served (Location of a 202). */
    private readonly jobsServed: boolean,
    private readonly limits: LimitDefaults,
  ) {}

  /** The answer to a trigger, from what became of it. */
  dispatched(m: Answering, out: Headers, policy: RunPolicy, d: Dispatched): HttpResponse | Promise<HttpResponse> {
    const hook = m.hook;
    switch (d.kind) {
      case "limited":
        out.set("Retry-After", String(d.retryAfterS));
        out.set("Content-Type", TEXT);
        return respond(429, out, MSG.rateLimited);
      case "busy":
        out.set("Retry-After", RETRY_AFTER_S);
        out.set("Content-Type", TEXT);
        return respond(429, out, MSG.busy);
      case "unavailable":
        out.set("Content-Type", TEXT);
        if (d.tooLarge) return respond(413, out, MSG.tooLarge);
        out.set("Retry-After", RETRY_AFTER_S);
        return respond(503, out, MSG.queueDown);
    }
    for (const h of hook["response-headers"] ?? []) out.set(h.name, h.value);
    if (d.jobId !== undefined) out.set("X-Job-Id", d.jobId);
    switch (d.kind) {
      case "duplicate":
        return this.respondWith(m, hook["success-http-response-code"], out, hook["response-message"] ?? "");
      case "queued": {
        const answer = this.answerNow(m, out, policy, d.jobId);
        return d.bodyInUse ? { ...answer, bodyInUse: d.bodyInUse } : answer;
      }
      case "ran":
        return d.result.then((result) => this.captured(m, out, result, policy.statusFromExit));
      case "streamed":
        return streamAnswer(out, d.run, {
          status: () => this.statusFor(m, hook["success-http-response-code"]),
          timeoutMessage: () => timeoutMessage(timeoutOf(hook, this.limits)),
          failedMessage: MSG.commandError,
        });
    }
  }

  /** The answer of a hook whose command runs after it: async-response's 202 with the job's URL, or the reference's. */
  private answerNow(m: Answering, out: Headers, policy: RunPolicy, jobId: string | undefined): HttpResponse {
    if (!policy.async) return this.respondWith(m, m.hook["success-http-response-code"], out, m.hook["response-message"] ?? "");
    if (jobId !== undefined && this.jobsServed) out.set("Location", `/jobs/${jobId}`);
    return respond(202, out, m.hook["response-message"] ?? "");
  }

  /** The answer of a hook with include-command-output-in-response, once its command has run. */
  private captured(m: Answering, out: Headers, result: ExecuteResult, statusFromExit: boolean): HttpResponse {
    const hook = m.hook;
    if (result.timedOut) {
      out.set("Content-Type", TEXT);
      return respond(504, out, timeoutMessage(timeoutOf(hook, this.limits)));
    }
    if (result.error !== undefined) {
      const status = statusFromExit ? statusForExit(result) : 500;
      if (hook["include-command-output-in-response-on-error"]) return respond(status, out, result.output);
      // The reference sets text/plain only after its WriteHeader, where Go ignores it: a Content-Type of the hook's
      // response-headers or -header stays, else the message is sniffed (as text/plain).
      return respond(status, out, MSG.commandError);
    }
    return this.respondWith(m, hook["success-http-response-code"], out, result.output);
  }

  /**
   * An answer with a configured status code. A 1xx code goes out as Go's WriteHeader sends it:
   * an informational answer with the headers set so far, then the final 200 with the body.
   */
  respondWith(m: Answering, code: number | undefined, out: Headers, body: string | Buffer): HttpResponse {
    const status = this.statusFor(m, code);
    if (status >= 200) return respond(status, out, body);
    const informational = { status, headers: out.list() };
    return { ...respond(200, out, body), informational };
  }

  /** A configured status code, or 200 (logged) when Go's net/http would not know it. */
  private statusFor(m: Answering, code: number | undefined): number {
    if (!code) return 200;
    if (STATUS_TEXT[code] !== undefined) return code;
    this.log.print(`[${m.rid}] ${m.hook.id} got matched, but the configured return code ${code} is unknown - defaulting to 200`, m.fields);
    return 200;
  }
}

/**
 * status-from-exit-code, for a command that failed: exit codes 100–255 are the HTTP status plus
 * 300 (exit 104 → 404, 109 → 409, 203 → 503), when Go knows that status; any other failure is 500.
 */
function statusForExit(result: ExecuteResult): number {
  const code = result.exitCode ?? null;
  if (result.timedOut) return 504;
  if (code === null || code < 100 || code > 255) return 500;
  return STATUS_TEXT[code + 300] !== undefined ? code + 300 : 500;
}

function timeoutMessage(ms: number): string {
  return `The hook's command did not finish within its command-timeout of ${msText(ms)} and was stopped.`;
}
