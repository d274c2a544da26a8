// The hook server's request logic, independent of the HTTP transport. A request goes through
// two steps: `route` (method and URL only: "/", 404, 405, or a matched hook) and, for a matched
// hook, `handle` with the body. The transport reads the body only between the two, so a 404
// costs nothing. Status codes, bodies and log lines are the reference's.
import { randomUUID } from "node:crypto";
import { decodeLatin1 } from "../go/bytes.js";
import { msText, parseGoDuration } from "../go/duration.js";
import { canonicalHeaderKey } from "../go/header.js";
import { goQuote, isObject, parseJson } from "../go/json.js";
import { cleanPath, pathUnescape } from "../go/path.js";
import type { Hook, HookRequest } from "../hooks/hook.js";
import { parseMultipart, parseQuery, rawHeader, type MultipartResult } from "../request/request.js";
import { XML_INLINE_MAX, XmlDecoder } from "../request/xml-decoder.js";
import { evaluate } from "../hooks/rules.js";
import { answeredWithoutPayload, payloadReads } from "../hooks/payload-reads.js";
import type { HookSet, PreparedRules } from "../hooks/hook-set.js";
import { describeArgument, ParameterNodeError, replaceParameter } from "../hooks/values.js";
import type { Accepted, HttpApp, HttpResponse, RequestHead, Routed } from "../http/contract.js";
import { STATUS_TEXT } from "../http/status.js";
import { assembleCommand, commandLookupPath, lookPath, readArgument, removeTempFiles, type CommandSpec } from "../run/command.js";
import { OutputStream, Tail } from "../run/output.js";
import type { ExecuteResult, JobRunner, QueueHook, SharedQueue } from "../queue/queue.js";
import { KILL_AFTER_MS, type Runner, type Turn } from "../run/runner.js";
import type { OutputSink, RunningCommand } from "../run/spawn.js";
import { LazyRequest, type BodyKind } from "../request/lazy-request.js";
import type { Log, LogFields } from "../log/log.js";
import { logExchange } from "./exchange-log.js";
import { CONTENT_TYPE as METRICS_TYPE } from "../log/metrics.js";
import { Headers, respond } from "./response.js";
import { Executions, type AttemptRun } from "../policy/executions.js";
import { dedupWindowMs, type RunPolicy } from "../hooks/run-fields.js";
import { jobIdOf, type Job, type JobState } from "../jobs/job.js";
import { answerJobs, isJobsPath, type JobsAccess } from "../jobs/routes.js";
import type { JobStore } from "../jobs/store.js";

export interface ServerOptions {
  urlprefix: string;
  /** Global -http-methods, already upper-cased without spaces; "" allows all. */
  httpMethods: string;
  headers: { name: string; value: string }[];
  maxMultipartMem: number;
  debug: boolean;
  /** -x-request-id: a request's X-Request-Id header becomes its log id (cut to -x-request-id-limit when > 0). */
  xRequestId?: boolean;
  xRequestIdLimit?: number;
  /** Defaults of the hook fields max-concurrency (0: no limit), max-queue and command-timeout (ms, 0: none). */
  maxConcurrency: number;
  /** -max-background: max-concurrency of hooks that answer before their command runs, when neither the hook nor -max-concurrency sets one (0: no limit). */
  maxBackground: number;
  maxQueue: number;
  commandTimeoutMs?: number;
  /** -max-output: bytes of a command's captured output kept, the last ones (0 or absent: all). */
  maxOutput?: number;
  /** -metrics: GET /metrics answers the Prometheus text (outside the hook URL prefix). */
  metrics?: boolean;
  /** -jobs: every triggered execution is a job, served at /jobs (outside the hook URL prefix). */
  jobs?: JobStore;
  jobsAccess?: JobsAccess;
}

/** A request routed to a hook, waiting for its body. */
export interface Matched extends Accepted {
  hook: Hook;
  /** What the hook set the hook was found in prepared for its rules. */
  prepared: PreparedRules;
  head: RequestHead;
  rid: string;
  start: bigint;
  query: string;
  /** The request id and hook id for every log line after the match. */
  fields: LogFields;
}

const MSG = {
  notFound: "Hook not found.",
  rulesNotSatisfied: "Hook rules were not satisfied.",
  ruleError: "Error occurred while evaluating hook rules.",
  commandError: "Error occurred while executing the hook's command. Please check your logs for more details.",
  multipartError: "Error occurred while parsing multipart form.",
  tooLarge: "Request body too large.",
  queueDown: "The hook's shared queue (-queue) cannot take the request now. Try again after the seconds in the Retry-After header.",
  busy: "Too many requests for this hook: it runs as many commands as its max-concurrency allows and its queue (max-queue) is full. Try again after the seconds in the Retry-After header.",
  rateLimited: "Too many requests for this hook: its rate-limit is reached. Try again after the seconds in the Retry-After header.",
  endFromRecord: "[webhook: the job's end was read back from its record: output sent while this instance missed messages from NATS may be missing above]",
} as const;

const NO_FIELDS: LogFields = {};

/** A request whose answer is read from elsewhere (-queue: /jobs from the shared key-value store). */
export interface Pending extends Accepted {
  answer: Promise<HttpResponse>;
}

export class HookServer implements HttpApp<Matched | Pending>, JobRunner {
  private readonly prefix: string;
  private readonly allowedMethods: string[];
  /** False once graceful shutdown has begun: /healthz then answers 503. */
  accepting = true;
  /** Rate limits, jobs, debounce and retries of triggered commands. */
  readonly executions: Executions;
  /** Large XML bodies are decoded on a thread of their own. */
  private readonly xml = new XmlDecoder();
  /** With -queue: settles when the shared queue serves the current hook set. */
  queueReady: Promise<void> = Promise.resolve();

  constructor(
    private hooks: HookSet,
    private readonly opts: ServerOptions,
    private readonly log: Log,
    private readonly runner: Runner,
    /** -queue: triggered executions go through the queue shared by several instances. */
    private readonly queue?: SharedQueue,
  ) {
    this.prefix = opts.urlprefix === "" ? "/" : `/${opts.urlprefix}/`;
    this.allowedMethods = opts.httpMethods === "" ? [] : opts.httpMethods.split(",");
    this.executions = new Executions(opts.jobs, log);
  }

  /** Replaces the whole hook set at once; a request uses the set that was current when it was routed. */
  setHooks(hooks: HookSet): void {
    this.hooks = hooks;
    if (!this.queue) return;
    this.queueReady = this.queue.serve([...hooks.values()].map((h) => this.queueHook(h)));
  }

  // JobRunner: the jobs this instance pulls from the shared queue (-queue).
  serves(hookId: string): boolean {
    return this.hooks.get(hookId) !== undefined;
  }

  run(hookId: string, req: HookRequest, onOutput?: OutputSink): Promise<AttemptRun> {
    const hook = this.hooks.get(hookId);
    if (!hook) return Promise.resolve({ output: Buffer.alloc(0), error: `this instance has no hook ${goQuote(hookId)}`, exitCode: null });
    return this.execute(hook, req, onOutput);
  }

  retryIn(hookId: string, jobId: string, attempt: number, result: AttemptRun): number | undefined {
    const hook = this.hooks.get(hookId);
    return hook && this.executions.retryIn(hook, this.executions.policy(hook), attempt, result, { rid: jobId, hook: hookId });
  }

  ended(hookId: string, state: JobState): void {
    this.executions.counters.job(hookId, state);
  }

  superseded(hookId: string): void {
    this.executions.counters.debounce(hookId);
  }

  /** Step one: decide from the method and URL alone. */
  route(head: RequestHead): Routed<Matched | Pending> {
    const q = head.url.indexOf("?");
    const rawPath = q === -1 ? head.url : head.url.slice(0, q);
    const query = q === -1 ? "" : head.url.slice(q + 1);
    const path = rawPath.includes("%") ? pathUnescape(rawPath) : decodeLatin1(rawPath);
    if (path === undefined) {
      return {
        kind: "response",
        response: {
          status: 400,
          headers: [
            ["Content-Type", "text/plain; charset=utf-8"],
            ["Connection", "close"],
          ],
          body: "400 Bad Request",
        },
      };
    }
    const logging = this.log.enabled;
    const rid = logging || this.opts.jobs || this.queue ? this.requestId(head) : "";
    const start = logging ? process.hrtime.bigint() : 0n;
    if (path.includes("//") || path.includes("/.")) {
      const clean = cleanPath(path);
      if (clean !== path) {
        const h = new Headers();
        h.set("Location", clean + (q === -1 ? "" : "?" + query));
        return { kind: "response", response: { status: 301, headers: h.list(), body: "" } };
      }
    }
    if (path === "/") {
      const h = new Headers();
      for (const { name, value } of this.opts.headers) h.set(name, value);
      return this.done(head, rid, start, respond(200, h, "OK"));
    }
    if (!path.startsWith(this.prefix)) {
      // Outside the hook URL prefix, so these never shadow a hook.
      if (path === "/healthz") return { kind: "response", response: this.health() };
      if (path === "/metrics" && this.opts.metrics) {
        return {
          kind: "response",
          response: { status: 200, headers: [["Content-Type", METRICS_TYPE]], body: this.runner.metrics.render() + this.executions.counters.render() },
        };
      }
      if (this.opts.jobs && isJobsPath(path)) {
        const authorization = rawHeader(head.rawHeaders, "authorization");
        const answer = answerJobs({ method: head.method, path, query, authorization }, this.opts.jobs, this.opts.jobsAccess ?? {});
        return answer instanceof Promise ? { kind: "accepted", answer } : { kind: "response", response: answer };
      }
      const h = new Headers();
      h.set("Content-Type", "text/plain; charset=utf-8");
      h.set("X-Content-Type-Options", "nosniff");
      return { kind: "response", response: respond(404, h, "404 page not found\n") };
    }
    const id = path.slice(this.prefix.length);
    if (logging) this.log.print(`[${rid}] incoming HTTP ${head.method} request from ${head.remoteAddr}`);
    const hook = this.hooks.get(id);
    if (!hook) {
      this.runner.metrics.request("", 404);
      return this.done(head, rid, start, respond(404, new Headers(), MSG.notFound));
    }
    const fields = logging ? { rid, hook: id } : NO_FIELDS;
    if (!this.methodAllowed(hook, head.method)) {
      this.runner.metrics.request(id, 405);
      this.log.print(`[${rid}] HTTP ${head.method} method not allowed for hook ${goQuote(id)}`, fields);
      return this.done(head, rid, start, { status: 405, headers: [], body: "" }, fields);
    }
    if (logging) this.log.print(`[${rid}] ${id} got matched`, fields);
    return { kind: "accepted", hook, prepared: this.hooks, head, rid, start, query, fields };
  }

  /** GET /healthz: 200 while the server takes work, 503 once it is shutting down. */
  private health(): HttpResponse {
    const headers: [string, string][] = [["Content-Type", "text/plain; charset=utf-8"]];
    return this.accepting ? { status: 200, headers, body: "OK" } : { status: 503, headers, body: "shutting down" };
  }

  /** The id that ties a request's log lines together. */
  private requestId(head: RequestHead): string {
    if (this.opts.xRequestId) {
      const given = rawHeader(head.rawHeaders, "x-request-id");
      if (given) {
        const limit = this.opts.xRequestIdLimit ?? 0;
        return limit > 0 ? given.slice(0, limit) : given;
      }
    }
    // A job id (-jobs, -queue) must stay unique among the jobs kept, of every instance: longer.
    return this.opts.jobs || this.queue ? randomUUID().replace(/-/g, "").slice(0, 12) : randomUUID().slice(0, 6);
  }

  private methodAllowed(hook: Hook, method: string): boolean {
    const own = hook["http-methods"];
    if (own && own.length > 0) return own.some((m) => m.trim().toUpperCase() === method);
    if (this.allowedMethods.length > 0) return this.allowedMethods.includes(method);
    return true;
  }

  /** The answer when the body is larger than -max-body. */
  tooLarge(m: Matched | Pending, limit: number): HttpResponse {
    if ("answer" in m) return respond(413, new Headers(), MSG.tooLarge);
    this.log.print(`[${m.rid}] request body is larger than the -max-body limit of ${limit} bytes`, m.fields);
    this.runner.metrics.request(m.hook.id, 413);
    return this.finish(m, respond(413, new Headers(), MSG.tooLarge));
  }

  /**
   * Step two: parse the body, evaluate the rules, run the command, build the response. Answers
   * synchronously unless a multipart body must be parsed or the response waits for a command.
   */
  handle(m: Matched | Pending, body: Buffer): HttpResponse | Promise<HttpResponse> {
    if ("answer" in m) return m.answer;
    const response = this.process(m, body);
    if (response instanceof Promise) {
      return response.then((r) => {
        this.runner.metrics.request(m.hook.id, r.status);
        return this.finish(m, r, body);
      });
    }
    this.runner.metrics.request(m.hook.id, response.status);
    return this.finish(m, response, body);
  }

  private process(m: Matched, body: Buffer): HttpResponse | Promise<HttpResponse> {
    const { hook, rid } = m;
    const log = this.log;
    const out = new Headers();
    for (const { name, value } of this.opts.headers) out.set(name, value);

    let contentType = rawHeader(m.head.rawHeaders, "content-type") ?? "";
    if (hook["incoming-payload-content-type"]) contentType = hook["incoming-payload-content-type"];
    const kind: BodyKind = contentType.includes("json")
      ? "json"
      : contentType.includes("x-www-form-urlencoded")
        ? "form"
        : contentType.includes("xml")
          ? "xml"
          : contentType.startsWith("multipart/form-data;")
            ? "multipart"
            : "other";

    const req = new LazyRequest(m, contentType, kind, body, hook["trigger-signature-soft-failures"] === true, log);

    if (kind === "multipart") {
      const jsonFields = new Set((hook["parse-parameters-as-json"] ?? []).filter((a) => a.source === "payload" && a.name).map((a) => a.name!));
      // Go's ParseMultipartForm: the URL query first, then the body by the request's own header.
      const queryError = parseQuery(m.query).error;
      let mp: MultipartResult;
      try {
        if (queryError !== undefined) throw new Error(queryError);
        mp = parseMultipart(rawHeader(m.head.rawHeaders, "content-type") ?? "", body, this.opts.maxMultipartMem, jsonFields);
      } catch (e) {
        log.print(`[${rid}] error parsing multipart form: ${(e as Error).message}\n`, m.fields);
        return respond(500, out, MSG.multipartError);
      }
      for (const l of mp.logs) log.print(`[${rid}] ${l}`, m.fields);
      req.payload = mp.payload;
    }
    if (kind === "xml" && body.length > XML_INLINE_MAX) return this.largeXml(m, req, out, body);
    // With logging on, parse now so the log lines come in the reference's order.
    if (log.enabled) void req.payload;
    this.parseJsonParameters(hook, req, m.fields);
    return this.trigger(m, req, out);
  }

  /**
   * A large XML body is decoded on the thread (the server goes on), and only when the hook reads
   * the payload: not when nothing reads it, nor when the rule fails before reading it (the reference
   * decodes every body first: its "error parsing XML payload" line is then not logged).
   */
  private largeXml(m: Matched, req: LazyRequest, out: Headers, body: Buffer): HttpResponse | Promise<HttpResponse> {
    const { hook } = m;
    const jsonFromPayload = (hook["parse-parameters-as-json"] ?? []).some((a) => a.source === "payload");
    if (!jsonFromPayload) {
      this.parseJsonParameters(hook, req, m.fields);
      if (answeredWithoutPayload(hook, req, m.prepared)) {
        req.payload = undefined;
        return this.trigger(m, req, out);
      }
    }
    return this.xml
      .decode(body, payloadReads(hook), m.head.remoteAddr)
      .then(
        (payload) => (req.payload = payload),
        (e: Error) => {
          this.log.print(`[${m.rid}] ${e.message}`, m.fields);
          req.payload = undefined;
        },
      )
      .then(() => {
        if (jsonFromPayload) this.parseJsonParameters(hook, req, m.fields);
        return this.trigger(m, req, out);
      });
  }

  /** Evaluates the rules (parse-parameters-as-json applied) and, when they hold, runs the command. */
  private trigger(m: Matched, req: HookRequest, out: Headers): HttpResponse | Promise<HttpResponse> {
    const { hook, rid } = m;
    const log = this.log;
    let ok = true;
    if (hook["trigger-rule"]) {
      const result = evaluate(hook["trigger-rule"], req, (w) => log.print(w, m.fields), m.prepared);
      ok = result.ok;
      if (result.error) {
        if (!(result.error instanceof ParameterNodeError)) {
          log.print(`[${rid}] error evaluating hook: ${result.error.message}`, m.fields);
          return respond(500, out, MSG.ruleError);
        }
        log.print(`[${rid}] ${result.error.message}`, m.fields);
      }
    }

    if (!ok) {
      const response = this.respondWith(m, hook["trigger-rule-mismatch-http-response-code"], out, MSG.rulesNotSatisfied);
      log.print(`[${rid}] ${hook.id} got matched, but didn't get triggered because the trigger rules were not satisfied`, m.fields);
      return response;
    }

    if (this.queue) return this.enqueue(m, req, out, this.queue);
    const policy = this.executions.policy(hook);
    const wait = this.executions.limited(hook, policy);
    if (wait !== undefined) {
      log.print(
        `[${rid}] ${hook.id} got matched, but its rate-limit of ${policy.rate!.requests} per ${msText(policy.rate!.periodMs)} is reached - answering 429`,
        m.fields,
      );
      out.set("Retry-After", String(wait));
      out.set("Content-Type", "text/plain; charset=utf-8");
      return respond(429, out, MSG.rateLimited);
    }
    if (policy.debounceMs > 0) return this.debounced(m, req, out, policy);
    const turn = this.takeTurn(m);
    if (!turn) {
      out.set("Retry-After", RETRY_AFTER_S);
      out.set("Content-Type", "text/plain; charset=utf-8");
      return respond(429, out, MSG.busy);
    }
    log.print(`[${rid}] ${hook.id} hook triggered successfully`, m.fields);
    for (const h of hook["response-headers"] ?? []) out.set(h.name, h.value);
    const job = this.executions.newJob(rid, hook);
    if (job) out.set("X-Job-Id", job.id);

    if (hook["stream-command-output"]) return this.stream(m, out, (onOutput, onStart) => this.executeInTurn(hook, req, turn, job, policy, onOutput, onStart));
    if (hook["include-command-output-in-response"])
      return this.executeInTurn(hook, req, turn, job, policy).then((result) => this.captured(m, out, result, policy.statusFromExit));
    const running = this.executeInTurn(hook, req, turn, job, policy).catch((e: Error) => log.print(`[${rid}] error occurred: ${e.message}`, m.fields));
    return { ...this.answerNow(m, out, policy, job), bodyInUse: running };
  }

  /** The answer of a hook whose command runs after it: async-response's 202 with the job's URL, or the reference's. */
  private answerNow(m: Matched, out: Headers, policy: RunPolicy, job: Job | undefined): HttpResponse {
    if (!policy.async) return this.respondWith(m, m.hook["success-http-response-code"], out, m.hook["response-message"] ?? "");
    if (job) out.set("Location", `/jobs/${job.id}`);
    return respond(202, out, m.hook["response-message"] ?? "");
  }

  /** debounce: answered at once; the command runs (in its turn) when no later trigger came for the quiet period. */
  private debounced(m: Matched, req: HookRequest, out: Headers, policy: RunPolicy): HttpResponse {
    const { hook, rid } = m;
    this.log.print(`[${rid}] ${hook.id} hook triggered successfully`, m.fields);
    for (const h of hook["response-headers"] ?? []) out.set(h.name, h.value);
    const job = this.executions.newJob(rid, hook);
    if (job) out.set("X-Job-Id", job.id);
    const run = async (): Promise<unknown> => {
      const turn = this.takeTurn(m);
      if (!turn) return this.executions.drop(job, "the hook's queue (max-queue) was full when the quiet period ended");
      return this.executeInTurn(hook, req, turn, job, policy).catch((e: Error) => this.log.print(`[${rid}] error occurred: ${e.message}`, m.fields));
    };
    const done = this.executions.debounce(hook, policy, rid, job, run, m.fields);
    return { ...this.answerNow(m, out, policy, job), bodyInUse: done };
  }

  /** The answer of a hook with include-command-output-in-response, once its command has run. */
  private captured(m: Matched, out: Headers, result: ExecuteResult, statusFromExit = false): HttpResponse {
    const hook = m.hook;
    if (result.timedOut) {
      out.set("Content-Type", "text/plain; charset=utf-8");
      return respond(504, out, timeoutMessage(this.timeoutOf(hook)));
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

  /** The hook's limits and de-duplication as the shared queue applies them. */
  private queueHook(hook: Hook): QueueHook {
    const { max, maxQueue } = this.limitsOf(hook);
    return { id: hook.id, maxConcurrency: max, maxQueue, dedupWindowMs: dedupWindowMs(hook) };
  }

  /**
   * -queue: the execution becomes a job in the shared queue, run by whichever instance pulls it.
   * The answer waits until the job is stored (fire-and-forget hooks) or has run (captured and
   * streamed hooks, whose output comes back from the instance that ran it).
   */
  private async enqueue(m: Matched, req: HookRequest, out: Headers, queue: SharedQueue): Promise<HttpResponse> {
    const { hook, rid } = m;
    const policy = this.executions.policy(hook);
    if (policy.rate) {
      const wait = await queue.limited(hook.id, policy.rate.requests, policy.rate.periodMs);
      if (wait !== undefined) {
        this.executions.counters.rateLimit(hook.id);
        this.log.print(
          `[${rid}] ${hook.id} got matched, but its rate-limit of ${policy.rate.requests} per ${msText(policy.rate.periodMs)} is reached over all instances - answering 429`,
          m.fields,
        );
        out.set("Retry-After", String(wait));
        out.set("Content-Type", "text/plain; charset=utf-8");
        return respond(429, out, MSG.rateLimited);
      }
    }
    const streamed = hook["stream-command-output"] === true;
    const captured = !streamed && hook["include-command-output-in-response"] === true;
    const maxOutput = this.opts.maxOutput ?? 0;
    let tail = new Tail(maxOutput);
    // A streamed job's first chunks may come before the job is known to be stored.
    const early: Buffer[] = [];
    let sink: OutputSink = (c) => early.push(c);
    const onOutput: OutputSink | undefined = streamed ? (c) => sink(c) : captured ? (c) => tail.push(c) : undefined;
    const dedup = hook.deduplicate?.id;
    const deliveryId = dedup ? readArgument(dedup, req, "deduplicate", this.log, m.fields) : undefined;
    const submitted = await queue.submit({
      hook: this.queueHook(hook),
      id: jobIdOf(rid),
      req,
      debounceMs: policy.debounceMs,
      ...(deliveryId ? { deliveryId } : {}),
      ...(onOutput ? { onOutput } : {}),
      // The answer is the last attempt's output.
      ...(captured ? { onAttempt: () => (tail = new Tail(maxOutput)) } : {}),
    });
    if (submitted.kind === "full") {
      const { max, maxQueue } = this.limitsOf(hook);
      this.log.print(
        `[${rid}] ${hook.id} got matched, but ${max} commands are running (max-concurrency) and ${maxQueue} are waiting (max-queue) over all instances - answering 429`,
        m.fields,
      );
      out.set("Retry-After", RETRY_AFTER_S);
      out.set("Content-Type", "text/plain; charset=utf-8");
      return respond(429, out, MSG.busy);
    }
    if (submitted.kind === "unavailable") {
      this.log.print(`[${rid}] ${hook.id} got matched, but ${submitted.reason} - answering ${submitted.tooLarge ? 413 : 503}`, m.fields);
      out.set("Content-Type", "text/plain; charset=utf-8");
      if (submitted.tooLarge) return respond(413, out, MSG.tooLarge);
      out.set("Retry-After", RETRY_AFTER_S);
      return respond(503, out, MSG.queueDown);
    }
    out.set("X-Job-Id", submitted.id);
    for (const h of hook["response-headers"] ?? []) out.set(h.name, h.value);
    if (submitted.kind === "duplicate") {
      this.log.print(
        `[${rid}] ${hook.id} got matched, but delivery ${goQuote(deliveryId ?? "")} was already accepted as job ${submitted.id} (deduplicate): nothing runs`,
        m.fields,
      );
      return this.respondWith(m, hook["success-http-response-code"], out, hook["response-message"] ?? "");
    }
    this.log.print(
      `[${rid}] ${hook.id} hook triggered successfully: queued as job ${submitted.id}${policy.debounceMs > 0 ? ` (debounced: it runs once no other trigger came for ${policy.debounceMs}ms)` : ""}`,
      m.fields,
    );
    const result = submitted.result;
    if (!result) {
      if (!policy.async) return this.respondWith(m, hook["success-http-response-code"], out, hook["response-message"] ?? "");
      if (this.opts.jobs) out.set("Location", `/jobs/${submitted.id}`);
      return respond(202, out, hook["response-message"] ?? "");
    }
    if (streamed) {
      return this.stream(m, out, (onChunk) => {
        sink = onChunk;
        for (const c of early.splice(0)) onChunk(c);
        return result.then((r) => {
          if (r.fromRecord) onChunk(Buffer.from(`${MSG.endFromRecord}\n`));
          return r;
        });
      });
    }
    const r = await result;
    // Read back from the record, the output sent as it came may be incomplete: the record's is whole (its last -jobs-output bytes).
    return this.captured(m, out, r.fromRecord ? r : { ...r, output: tail.result() }, policy.statusFromExit);
  }

  /**
   * stream-command-output: the answer starts with the command's first output (status 200) and
   * carries the rest as it is produced; a failure is told in a last line. A command that fails
   * before any output is answered like a captured one (500).
   */
  private stream(
    m: Matched,
    out: Headers,
    run: (onOutput: OutputSink, onStart: (command: RunningCommand) => void) => Promise<ExecuteResult>,
  ): Promise<HttpResponse> {
    const hook = m.hook;
    const body = new OutputStream();
    return new Promise<HttpResponse>((resolve) => {
      let started = false;
      let lastByte = 0x0a;
      const start = (): void => {
        if (started) return;
        started = true;
        if (!out.has("Content-Type")) out.set("Content-Type", "text/plain; charset=utf-8");
        const status = this.statusFor(m, hook["success-http-response-code"]);
        const informational = status < 200 ? { informational: { status, headers: out.list() } } : {};
        resolve({ status: status < 200 ? 200 : status, headers: out.list(), body, ...informational });
      };
      const onOutput = (chunk: Buffer): void => {
        lastByte = chunk[chunk.length - 1]!;
        body.push(chunk);
        start();
      };
      void run(onOutput, (command) => body.attach(command)).then((result) => {
        if (!started && result.timedOut) {
          out.set("Content-Type", "text/plain; charset=utf-8");
          resolve(respond(504, out, timeoutMessage(this.timeoutOf(hook))));
          return;
        }
        if (!started && result.error !== undefined) {
          resolve(respond(500, out, MSG.commandError));
          return;
        }
        const newline = lastByte === 0x0a ? "" : "\n";
        if (result.timedOut) body.push(Buffer.from(`${newline}${timeoutMessage(this.timeoutOf(hook))}\n`));
        else if (result.error !== undefined) body.push(Buffer.from(`${newline}the command failed: ${result.error}\n`));
        start();
        body.end();
      });
    });
  }

  /**
   * An answer with a configured status code. A 1xx code goes out as Go's WriteHeader sends it:
   * an informational answer with the headers set so far, then the final 200 with the body.
   */
  private respondWith(m: Matched, code: number | undefined, out: Headers, body: string | Buffer): HttpResponse {
    const status = this.statusFor(m, code);
    if (status >= 200) return respond(status, out, body);
    const informational = { status, headers: out.list() };
    return { ...respond(200, out, body), informational };
  }

  /** A configured status code, or 200 (logged) when Go's net/http would not know it. */
  private statusFor(m: Matched, code: number | undefined): number {
    if (!code) return 200;
    if (STATUS_TEXT[code] !== undefined) return code;
    this.log.print(`[${m.rid}] ${m.hook.id} got matched, but the configured return code ${code} is unknown - defaulting to 200`, m.fields);
    return 200;
  }

  private parseJsonParameters(hook: Hook, req: HookRequest, fields: LogFields): void {
    for (const arg of hook["parse-parameters-as-json"] ?? []) {
      const text = readArgument(arg, req, "error parsing JSON parameters", this.log, fields);
      if (text === undefined) continue;
      let value: unknown;
      try {
        value = parseJson(text);
        if (value !== null && !isObject(value)) throw new Error("json: cannot unmarshal value into Go value of type map[string]interface {}");
      } catch (e) {
        this.log.print(`[${req.id}] error parsing JSON parameters: ${(e as Error).message}`, fields);
        continue;
      }
      const name = arg.name ?? "";
      if (arg.source === "header") replaceParameter(canonicalHeaderKey(name), req.headers, value);
      else if (arg.source === "url" || arg.source === "query") replaceParameter(name, req.query, value);
      else if (arg.source === "payload") replaceParameter(name, req.payload, value);
      else this.log.print(`[${req.id}] error parsing JSON parameters: invalid source for argument ${describeArgument(arg)}`, fields);
    }
  }

  /** A turn to run the hook's command (max-concurrency, max-queue), or null (logged) when its queue is full. */
  private takeTurn(m: Matched): Turn | null {
    const { max, maxQueue } = this.limitsOf(m.hook);
    const turn = this.runner.takeTurn(m.hook.id, max, maxQueue);
    if (!turn) {
      this.log.print(
        `[${m.rid}] ${m.hook.id} got matched, but ${max} commands are running (max-concurrency) and ${maxQueue} are waiting (max-queue) - answering 429`,
        m.fields,
      );
    } else if (turn.wait) {
      this.log.print(`[${m.rid}] ${m.hook.id} runs ${max} commands already (max-concurrency): this one waits for its turn`, m.fields);
    }
    return turn;
  }

  /** The hook's max-concurrency (0: no limit) and max-queue, with the command-line defaults. */
  private limitsOf(hook: Hook): { max: number; maxQueue: number } {
    const background = !hook["stream-command-output"] && !hook["include-command-output-in-response"];
    const max = hook["max-concurrency"] ?? (this.opts.maxConcurrency || (background ? this.opts.maxBackground : 0));
    return { max, maxQueue: hook["max-queue"] ?? this.opts.maxQueue };
  }

  /** The hook's command-timeout (or -command-timeout) in milliseconds; 0 is none. */
  private timeoutOf(hook: Hook): number {
    const own = hook["command-timeout"];
    return own !== undefined ? parseGoDuration(own) : (this.opts.commandTimeoutMs ?? 0);
  }

  /** Runs the command once the hook's turn has come, and gives the turn back when it is done. */
  private async executeInTurn(
    hook: Hook,
    req: HookRequest,
    turn: Turn,
    job: Job | undefined,
    policy: RunPolicy,
    onOutput?: OutputSink,
    onStart?: (command: RunningCommand) => void,
  ): Promise<ExecuteResult> {
    const fields = { rid: req.id, hook: hook.id };
    try {
      if (turn.wait && !(await turn.wait)) {
        this.log.print(`[${req.id}] the server is shutting down: ${hook.id}'s command was still waiting for its turn and does not run`, fields);
        this.executions.drop(job, "the server shut down before the command's turn came");
        return { output: Buffer.alloc(0), error: "the server shut down before the command's turn came", exitCode: null };
      }
      return await this.executions.run(hook, policy, job, () => this.execute(hook, req, onOutput, onStart), fields);
    } finally {
      turn.release();
    }
  }

  /** Runs the hook's command (the reference's handleHook); resolves with its output and error. */
  private async execute(hook: Hook, req: HookRequest, onOutput?: OutputSink, onStart?: (command: RunningCommand) => void): Promise<AttemptRun> {
    const log = this.log;
    const rid = req.id;
    const fields: LogFields = { rid, hook: hook.id };
    const command = hook["execute-command"];
    const cwd = hook["command-working-directory"] || undefined;
    let path: string;
    try {
      path = lookPath(commandLookupPath(command, cwd));
    } catch (e) {
      log.print(`[${rid}] error in ${(e as Error).message}`, fields);
      this.runner.startFailed(hook.id);
      if (command.includes(" ")) {
        log.print(`[${rid}] use 'pass-arguments-to-command' to specify args for '${command.trim().split(/\s+/)[0]}'`, fields);
      }
      return { output: Buffer.alloc(0), error: (e as Error).message, exitCode: null };
    }

    const { argv, env, files } = assembleCommand(hook, req, cwd, log, fields);

    const envNames = Object.keys(env);
    log.print(
      `[${rid}] executing ${command} (${path}) with arguments [${argv.map(goQuote).join(" ")}] and environment [${envNames.join(" ")}] using ${cwd ?? ""} as cwd`,
      fields,
    );
    const spec: CommandSpec = {
      path,
      argv,
      env,
      // The streamed output is not kept unless the log shows it.
      captureOutput: (hook["include-command-output-in-response"] === true && !hook["stream-command-output"]) || log.enabled || this.opts.jobs !== undefined,
      maxOutput: this.opts.maxOutput ?? 0,
      ...(cwd ? { cwd } : {}),
      ...(hook["exclude-stderr-from-response"] ? { separateStderr: true } : {}),
      timeoutMs: this.timeoutOf(hook),
      onTimeout: (signal) =>
        log.print(
          signal === "SIGTERM"
            ? `[${rid}] command-timeout of ${msText(this.timeoutOf(hook))} expired: sending SIGTERM to the process group of ${command}`
            : `[${rid}] the process group of ${command} was still running ${msText(KILL_AFTER_MS)} after SIGTERM: sent SIGKILL`,
          fields,
        ),
    };
    const result = await this.runner.run(spec, { hook: hook.id, rid }, onOutput, onStart);
    if (log.enabled) log.print(`[${rid}] command output: ${result.output.toString("utf8")}`, fields);
    if (log.enabled && result.stderr) log.print(`[${rid}] command stderr: ${result.stderr.toString("utf8")}`, fields);
    if (result.error !== undefined) log.print(`[${rid}] error occurred: ${result.error}`, fields);
    removeTempFiles(files, rid, log, fields);
    log.print(`[${rid}] finished handling ${hook.id}`, fields);
    const more = {
      exitCode: result.exitCode,
      ...(result.timedOut ? { timedOut: true } : {}),
      ...(result.signal ? { signal: result.signal } : {}),
      ...(result.stderr ? { stderr: result.stderr } : {}),
    };
    return result.error === undefined ? { output: result.output, ...more } : { output: result.output, error: result.error, ...more };
  }

  /** The reference's request log line (and, with -debug, the request and response dump). */
  private finish(m: Matched, res: HttpResponse, body?: Buffer): HttpResponse {
    logExchange(this.log, this.opts.debug, m.head, m.rid, m.start, res, body, m.fields);
    return res;
  }

  private done(head: RequestHead, rid: string, start: bigint, res: HttpResponse, fields?: LogFields): Routed<Matched> {
    logExchange(this.log, this.opts.debug, head, rid, start, res, undefined, fields);
    return { kind: "response", response: res };
  }
}

/** What running a hook's command gave: its output, Go's error text, its exit, and whether command-timeout stopped it. */
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

/** Seconds a client told 429 (queue full) is asked to wait. */
const RETRY_AFTER_S = "1";

function timeoutMessage(ms: number): string {
  return `The hook's command did not finish within its command-timeout of ${msText(ms)} and was stopped.`;
}
