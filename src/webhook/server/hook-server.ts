// The hook server's request logic, independent of the HTTP transport. A request goes through
// two steps: `route` (method and URL only: "/", the built-in endpoints, 404, 405, or a matched hook)
// and, for a matched hook, `handle` with the body: decoding, the trigger rules, then the dispatch
// (dispatch/) and its answer (answer.ts). The transport reads the body only between the two, so a
// 404 costs nothing. Status codes, bodies and log lines are the reference's.
import { randomUUID } from "node:crypto";
import type { Dispatch, Dispatched, LimitDefaults } from "../dispatch/dispatch.js";
import { decodeLatin1 } from "../go/bytes.js";
import { canonicalHeaderKey } from "../go/header.js";
import { goQuote, isObject, parseJson } from "../go/json.js";
import { cleanPath, pathUnescape } from "../go/path.js";
import type { Hook, HookRequest } from "../hooks/hook.js";
import type { HookSet, PreparedRules } from "../hooks/hook-set.js";
import { answeredWithoutPayload, payloadReads } from "../hooks/payload-reads.js";
import { evaluate } from "../hooks/rules.js";
import { describeArgument, ParameterNodeError, replaceParameter } from "../hooks/values.js";
import type { Accepted, HttpApp, HttpResponse, RequestHead, Routed } from "../http/contract.js";
import { ConsoleRoutes } from "../console/routes.js";
import type { LiveOutput } from "../console/live.js";
import type { Job } from "../jobs/job.js";
import { type KeepOptions, keepRequest, notReplayable, replayedHead } from "../jobs/kept-request.js";
import { type JobsAccess, type JobsAnswer, jsonAnswer } from "../jobs/routes.js";
import type { JobStore } from "../jobs/store.js";
import type { Log, LogFields } from "../log/log.js";
import type { Metrics } from "../log/metrics.js";
import type { Executions } from "../policy/executions.js";
import { type BodyKind, LazyRequest } from "../request/lazy-request.js";
import { type MultipartResult, parseMultipart, parseQuery, rawHeader, singleHeader } from "../request/request.js";
import { XML_INLINE_MAX, XmlDecoder } from "../request/xml-decoder.js";
import { readArgument } from "../run/command.js";
import { Answers, MSG } from "./answer.js";
import { Endpoints, type Pending } from "./endpoints.js";
import { logExchange } from "./exchange-log.js";
import { replayAnswer } from "./replay.js";
import { Headers, respond } from "./response.js";
import { describe, messageOf } from "../errors.js";
import { explainedBody, explains, heldLine, notSatisfiedLine } from "../explain/mismatch.js";
import type { Recorder } from "../explain/recorder.js";
import { begin, follow, tracing } from "../trace/trace.js";

/** The server's options; the limits are the defaults of the hook fields (its answers name the command-timeout). */
export interface ServerOptions extends LimitDefaults {
  urlprefix: string;
  /** Global -http-methods, already upper-cased without spaces; "" allows all. */
  httpMethods: string;
  headers: { name: string; value: string }[];
  maxMultipartMem: number;
  debug: boolean;
  /** -x-request-id: a request's X-Request-Id header becomes its log id (cut to -x-request-id-limit when > 0). */
  xRequestId?: boolean;
  xRequestIdLimit?: number;
  /** -jobs or -queue: every request may become a job, so its id is a job id (longer, unique among the jobs kept). */
  jobIds: boolean;
  /** -metrics: GET /metrics answers the Prometheus text (outside the hook URL prefix). */
  metrics?: boolean;
  /** -jobs: every triggered execution is a job, served at /jobs (outside the hook URL prefix). */
  jobs?: JobStore;
  jobsAccess?: JobsAccess;
  /** -test-request: every mismatch answer explains itself. */
  explain?: boolean;
  /** -record-requests: saves each request to a hook, replayable with -test-request. */
  recorder?: Recorder;
  /** -jobs-replay: a job keeps its request (bounded, redacted), and POST /jobs/<id>/replay runs it again. */
  replay?: KeepOptions;
  /** -console: the run console at /console/, showing the output of the commands running here as it comes. */
  console?: LiveOutput;
}

/** What the server hands its requests to, and counts them with. */
export interface ServerParts {
  dispatch: Dispatch;
  /** The hooks' run policies, and the counters of jobs and policies for /metrics. */
  executions: Executions;
  metrics: Metrics;
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
  /** A replay (POST /jobs/<id>/replay) of this job: its trigger rule is skipped. */
  replayOf?: string;
}

const NO_FIELDS: LogFields = {};

export class HookServer implements HttpApp<Matched | Pending> {
  private readonly prefix: string;
  private readonly allowedMethods: string[];
  /** False once graceful shutdown has begun: /healthz then answers 503. */
  accepting = true;
  private readonly dispatch: Dispatch;
  private readonly executions: Executions;
  private readonly metrics: Metrics;
  private readonly answers: Answers;
  private readonly endpoints: Endpoints;
  /** Large XML bodies are decoded on a thread of their own. */
  private readonly xml = new XmlDecoder();
  /** Settles when the dispatch serves the current hook set (with -queue: the shared queue pulls its jobs). */
  ready: Promise<void> = Promise.resolve();

  constructor(
    private hooks: HookSet,
    private readonly opts: ServerOptions,
    private readonly log: Log,
    parts: ServerParts,
  ) {
    this.prefix = opts.urlprefix === "" ? "/" : `/${opts.urlprefix}/`;
    this.allowedMethods = opts.httpMethods === "" ? [] : opts.httpMethods.split(",");
    this.dispatch = parts.dispatch;
    this.executions = parts.executions;
    this.metrics = parts.metrics;
    this.answers = new Answers(log, opts.jobs !== undefined, opts);
    const consoleRoutes =
      opts.jobs && opts.console
        ? new ConsoleRoutes({ store: opts.jobs, access: opts.jobsAccess ?? {}, hooks: () => this.hooks, live: opts.console, replay: opts.replay !== undefined })
        : undefined;
    this.endpoints = new Endpoints(opts, parts, opts.replay ? (job) => this.replay(job) : undefined, consoleRoutes);
  }

  /** Replaces the whole hook set at once; a request uses the set that was current when it was routed. */
  setHooks(hooks: HookSet): void {
    this.hooks = hooks;
    this.ready = this.dispatch.serve(hooks);
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
    const rid = logging || this.opts.jobIds ? this.requestId(head) : "";
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
    // Outside the hook URL prefix, so these never shadow a hook.
    if (!path.startsWith(this.prefix)) return this.endpoints.answer(head, path, query, this.accepting);
    const id = path.slice(this.prefix.length);
    if (logging) this.log.print(`[${rid}] incoming HTTP ${head.method} request from ${head.remoteAddr}`);
    const hook = this.hooks.get(id);
    if (!hook) {
      this.metrics.request("", 404);
      return this.done(head, rid, start, respond(404, new Headers(), MSG.notFound));
    }
    const fields = logging ? { rid, hook: id } : NO_FIELDS;
    if (!this.methodAllowed(hook, head.method)) {
      this.metrics.request(id, 405);
      this.log.print(`[${rid}] HTTP ${head.method} method not allowed for hook ${goQuote(id)}`, fields);
      return this.done(head, rid, start, { status: 405, headers: [], body: "" }, fields);
    }
    if (logging) this.log.print(`[${rid}] ${id} got matched`, fields);
    return { kind: "accepted", hook, prepared: this.hooks, head, rid, start, query, fields };
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
    return this.opts.jobIds ? randomUUID().replace(/-/g, "").slice(0, 12) : randomUUID().slice(0, 6);
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
    this.metrics.request(m.hook.id, 413);
    return this.finish(m, respond(413, new Headers(), MSG.tooLarge));
  }

  /**
   * Step two: parse the body, evaluate the rules, run the command, build the response. Answers
   * synchronously unless a multipart body must be parsed or the response waits for a command.
   */
  handle(m: Matched | Pending, body: Buffer): HttpResponse | Promise<HttpResponse> {
    if ("answer" in m) return m.answer;
    this.opts.recorder?.save(m.hook.id, m.head, body, m.fields);
    const span = tracing() ? this.received(m) : undefined;
    const response = this.process(m, body);
    if (response instanceof Promise) {
      return response.then((r) => {
        this.metrics.request(m.hook.id, r.status);
        span?.(r.status);
        return this.finish(m, r, body);
      });
    }
    this.metrics.request(m.hook.id, response.status);
    span?.(response.status);
    return this.finish(m, response, body);
  }

  /**
   * traces: the request's span, under the caller's traceparent when it sent one; the function ends it. Two
   * traceparent fields are ambiguous: a trace of its own, as the W3C conformance suite wants (test_traceparent_duplicated).
   */
  private received(m: Matched): (status: number) => void {
    const span = begin(m, "receive", "server", { parent: singleHeader(m.head.rawHeaders, "traceparent") })!;
    span.setAttribute("http.request.method", m.head.method);
    span.setAttribute("webhook.hook", m.hook.id);
    if (m.rid !== "") span.setAttribute("webhook.request_id", m.rid);
    return (status) => {
      span.setAttribute("http.response.status_code", status);
      span.end(status >= 500 ? `HTTP ${status}` : undefined);
    };
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
    follow(req, m);

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
        return respond(describe(e)?.status ?? 500, out, MSG.multipartError);
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
    let why = "";
    if (m.replayOf !== undefined) {
      log.always(
        `[${rid}] ${hook.id}: replay of job ${m.replayOf} asked by the operator (POST /jobs/${m.replayOf}/replay): the trigger rule is skipped`,
        m.fields,
      );
    } else if (hook["trigger-rule"]) {
      const span = begin(req, "rules", "internal");
      const result = evaluate(hook["trigger-rule"], req, (w) => log.print(w, m.fields), m.prepared);
      span?.end(result.error?.message);
      ok = result.ok;
      const failed = result.error !== undefined && !(result.error instanceof ParameterNodeError);
      if ((!ok || failed) && result.why !== undefined) {
        why = result.why;
        if (log.enabled) log.debug(`[${rid}] ${notSatisfiedLine(hook.id, why)}`, m.fields);
      }
      if (ok && result.held) log.print(`[${rid}] ${heldLine(hook.id, result.held)}`, m.fields);
      if (result.error) {
        if (failed) {
          log.print(`[${rid}] error evaluating hook: ${result.error.message}`, m.fields);
          return respond(describe(result.error)?.status ?? 500, out, this.mismatchBody(hook, out, MSG.ruleError, why));
        }
        log.print(`[${rid}] ${result.error.message}`, m.fields);
      }
    }

    if (!ok) {
      const body = this.mismatchBody(hook, out, MSG.rulesNotSatisfied, why);
      const response = this.answers.respondWith(m, hook["trigger-rule-mismatch-http-response-code"], out, body);
      log.print(`[${rid}] ${hook.id} got matched, but didn't get triggered because the trigger rules were not satisfied`, m.fields);
      return response;
    }

    const policy = this.executions.policy(hook);
    const jobs = this.opts.jobs;
    if (jobs && this.opts.replay)
      jobs.expect(rid, {
        replayOf: m.replayOf,
        triggerRule: m.replayOf !== undefined ? "skipped" : undefined,
        request: keepRequest(m.head, req.rawBody, hook, this.opts.replay),
      });
    const answer = (x: Dispatched): HttpResponse | Promise<HttpResponse> => {
      if (jobs && this.opts.replay) jobs.forget(rid);
      const replayed = m.replayOf !== undefined ? replayAnswer(m.replayOf, x, log, m.fields) : undefined;
      return replayed ?? this.answers.dispatched(m, out, policy, x);
    };
    const span = begin(req, "dispatch", "internal", { nest: true });
    const d = this.dispatch.dispatch({ hook, req, policy, fields: m.fields });
    if (d instanceof Promise)
      return d.then((x) => {
        span?.end();
        return answer(x);
      });
    span?.end();
    return answer(d);
  }

  /** The reference's message, or with "trigger-rule-mismatch-response": "explain" (or -test-request) a JSON body naming the failed node. */
  private mismatchBody(hook: Hook, out: Headers, message: string, why: string): string {
    if (why === "" || !(this.opts.explain || explains(hook))) return message;
    out.set("Content-Type", "application/json");
    return explainedBody(hook.id, message, why);
  }

  /** POST /jobs/<id>/replay: the job's kept request through its hook again, as a new job (the trigger rule skipped). */
  private async replay(job: Job): Promise<JobsAnswer> {
    const refuse = (why: string): JobsAnswer => jsonAnswer(409, { error: messageOf("WEBHOOK_REPLAY_NOT_KEPT", { id: job.id, why }) });
    const why = notReplayable(job.request);
    if (why !== undefined) return refuse(why);
    const hook = this.hooks.get(job.hook);
    if (!hook) return refuse(`its hook ${goQuote(job.hook)} is not loaded now`);
    const { head, body } = replayedHead(job.request!);
    const rid = this.requestId(head);
    const q = head.url.indexOf("?");
    const m: Matched = {
      kind: "accepted",
      hook,
      prepared: this.hooks,
      head,
      rid,
      start: process.hrtime.bigint(),
      query: q === -1 ? "" : head.url.slice(q + 1),
      fields: { rid, hook: hook.id },
      replayOf: job.id,
    };
    const r = await this.process(m, body);
    this.metrics.request(hook.id, r.status);
    return { status: r.status, headers: r.headers, body: typeof r.body === "string" ? r.body : Buffer.isBuffer(r.body) ? r.body.toString("utf8") : "" };
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
