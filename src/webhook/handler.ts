// The hook server's request logic, independent of the HTTP transport. A request goes through
// two steps: `route` (method and URL only: "/", 404, 405, or a matched hook) and, for a matched
// hook, `handle` with the body. The transport reads the body only between the two, so a 404
// costs nothing. Status codes, bodies and log lines are the reference's.
import { randomUUID } from "node:crypto";
import { openSync, closeSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hook, HookRequest } from "./hook.js";
import { takeTurn, type Turn } from "./concurrency.js";
import { commandLookupPath, lookPath, runCommand, runningCommands, KILL_AFTER_MS, type CommandResult, type CommandSpec } from "./execute.js";
import type { OutputSink, RunningCommand } from "./spawn.js";
import { goDuration, iBytes, type Log, type LogFields } from "./log.js";
import { CONTENT_TYPE as METRICS_TYPE, metrics, type Outcome } from "./metrics.js";
import { DEFAULT_MAX_QUEUE, parseGoDuration } from "./flags.js";
import { parseJson, isObject } from "./json.js";
import {
  parseFormPayload,
  parseHeaders,
  parseJsonPayload,
  parseMultipart,
  parseQuery,
  parseXmlPayload,
  rawHeader,
  type MultipartResult,
  type Payload,
} from "./request.js";
import { decodeBytes, decodeLatin1, encodeBytes } from "./bytes.js";
import { goBase64Decode } from "./base64.js";
import { evaluate } from "./rules.js";
import { detectContentType } from "./sniff.js";
import { STATUS_TEXT } from "./status.js";
import { canonicalHeaderKey, describeArgument, getArgument, replaceParameter, ParameterNodeError } from "./values.js";
import { Executions, type AttemptRun } from "./run/executions.js";
import type { RunPolicy } from "./hooks/run-fields.js";
import type { Job } from "./jobs/job.js";
import { answerJobs, isJobsPath, type JobsAccess } from "./jobs/routes.js";
import type { JobStore } from "./jobs/store.js";

/** What the transport knows before reading the body. */
export interface RequestHead {
  method: string;
  /** The request target as sent: path and query. */
  url: string;
  /** Node's flat [name, value, name, value, …] list, names as sent. */
  rawHeaders: string[];
  /** "ip:port", IPv6 in brackets. */
  remoteAddr: string;
}

export interface HookResponse {
  status: number;
  headers: [string, string][];
  /** A message, or a command's output kept byte for byte; an async iterable is streamed (chunked). */
  body: string | Buffer | AsyncIterable<Buffer>;
  /** A 1xx answer sent before this one, with the headers set when it was sent. */
  informational?: { status: number; headers: [string, string][] };
  /** The request's body is still in use until this settles (a command that runs after the answer). */
  bodyInUse?: Promise<unknown>;
}

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
  maxConcurrency?: number;
  /** -max-background: max-concurrency of hooks that answer before their command runs, when neither the hook nor -max-concurrency sets one (0: no limit). */
  maxBackground?: number;
  maxQueue?: number;
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
export interface Matched {
  kind: "hook";
  hook: Hook;
  head: RequestHead;
  rid: string;
  start: bigint;
  query: string;
  /** The request id and hook id for every log line after the match. */
  fields: LogFields;
}

export type Routed = { kind: "response"; response: HookResponse } | Matched;

export const MSG = {
  notFound: "Hook not found.",
  rulesNotSatisfied: "Hook rules were not satisfied.",
  ruleError: "Error occurred while evaluating hook rules.",
  commandError: "Error occurred while executing the hook's command. Please check your logs for more details.",
  multipartError: "Error occurred while parsing multipart form.",
  tooLarge: "Request body too large.",
  busy: "Too many requests for this hook: it runs as many commands as its max-concurrency allows and its queue (max-queue) is full. Try again after the seconds in the Retry-After header.",
  rateLimited: "Too many requests for this hook: its rate-limit is reached. Try again after the seconds in the Retry-After header.",
} as const;

/** Response headers under canonical names, later values replacing earlier ones (Go's Header.Set). */
class Headers {
  private readonly map = new Map<string, [string, string]>();
  set(name: string, value: string): void {
    const k = canonicalHeaderKey(name);
    this.map.set(k, [k, value]);
  }
  has(name: string): boolean {
    return this.map.has(name);
  }
  list(): [string, string][] {
    return [...this.map.values()];
  }
}

function respond(status: number, headers: Headers, body: string | Buffer): HookResponse {
  // Most answers are one of a few fixed messages: their sniffed type is cached.
  if (body.length > 0 && !headers.has("Content-Type")) {
    let type = typeof body === "string" ? sniffed.get(body) : undefined;
    if (type === undefined) {
      type = detectContentType(body);
      if (typeof body === "string" && body.length <= 128 && sniffed.size < 256) sniffed.set(body, type);
    }
    headers.set("Content-Type", type);
  }
  return { status, headers: headers.list(), body };
}

const sniffed = new Map<string, string>();

/** gorilla/mux's path cleaning: collapses "//", "/./" and "/../", keeping a trailing slash. */
function cleanPath(p: string): string {
  if (p === "") return "/";
  const parts: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  let out = "/" + parts.join("/");
  if (p.endsWith("/") && out !== "/") out += "/";
  return out;
}

/** Go's URL path unescaping over the target's bytes: %XX to bytes; undefined for a malformed escape (Go answers 400). */
function pathUnescape(p: string): string | undefined {
  if (/%(?![0-9a-fA-F]{2})/.test(p)) return undefined;
  return decodeBytes(Buffer.from(p.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), "latin1"));
}

function goQuote(s: string): string {
  return JSON.stringify(s);
}

type BodyKind = "json" | "form" | "xml" | "multipart" | "other";

/**
 * The request as rules and commands read it. Headers, query and payload are each decoded on
 * first use: many hooks read none of them (getters on the class, not per-request closures).
 */
class LazyRequest implements HookRequest {
  readonly id: string;
  readonly method: string;
  readonly remoteAddr: string;
  /** The body as received, for every content type (the reference keeps none of a multipart body). */
  readonly rawBody: Buffer;
  private parsedHeaders: Record<string, unknown> | undefined;
  private parsedQuery: Record<string, unknown> | undefined;
  private parsedPayload: Payload;
  private payloadRead: boolean;
  private readonly payloadBody: Buffer;

  constructor(
    private readonly m: Matched,
    readonly contentType: string,
    private readonly kind: BodyKind,
    body: Buffer,
    readonly allowSignatureErrors: boolean,
    private readonly log: Log,
  ) {
    this.id = m.rid;
    this.method = m.head.method;
    this.remoteAddr = m.head.remoteAddr;
    this.rawBody = body;
    // Go does not read a body whose type starts with "multipart/form-data;" before parsing it.
    this.payloadBody = contentType.startsWith("multipart/form-data;") ? EMPTY : body;
    this.payloadRead = kind === "multipart";
  }

  get headers(): Record<string, unknown> {
    return (this.parsedHeaders ??= parseHeaders(this.m.head.rawHeaders));
  }

  get query(): Record<string, unknown> {
    return (this.parsedQuery ??= parseQuery(this.m.query).values);
  }

  get payload(): Payload {
    if (!this.payloadRead) {
      this.payloadRead = true;
      this.parsedPayload = this.readPayload();
    }
    return this.parsedPayload;
  }

  set payload(v: Payload) {
    this.payloadRead = true;
    this.parsedPayload = v;
  }

  private readPayload(): Payload {
    try {
      if (this.kind === "json") return parseJsonPayload(this.payloadBody);
      if (this.kind === "form") return parseFormPayload(this.payloadBody);
      if (this.kind === "xml") return parseXmlPayload(this.payloadBody);
      if (this.log.enabled) this.log.print(`[${this.id}] error parsing body payload due to unsupported content type header: ${this.contentType}`, this.m.fields);
    } catch (e) {
      this.log.print(`[${this.id}] ${(e as Error).message}`, this.m.fields);
    }
    return undefined;
  }
}

const EMPTY = Buffer.alloc(0);
const NO_FIELDS: LogFields = {};

/** Output queued for a slow streaming client beyond which its command is paused. */
const STREAM_HIGH_WATER = 1024 * 1024;

/**
 * A command's output as an async iterator for the transport: chunks are queued until read, and
 * the command is paused while more than STREAM_HIGH_WATER bytes wait. Once the reader returns
 * (the client went away, or HEAD), later output is dropped rather than queued.
 */
class OutputStream implements AsyncIterableIterator<Buffer> {
  private readonly queued: Buffer[] = [];
  private queuedBytes = 0;
  private ended = false;
  private abandoned = false;
  private wake: (() => void) | undefined;
  private command: RunningCommand | undefined;
  private paused = false;

  /** The command whose output this is, to pause while the reader is behind. */
  attach(command: RunningCommand): void {
    this.command = command;
  }

  push(chunk: Buffer): void {
    if (this.abandoned) return;
    this.queued.push(chunk);
    this.queuedBytes += chunk.length;
    if (!this.paused && this.queuedBytes > STREAM_HIGH_WATER && this.command) {
      this.paused = true;
      this.command.pause();
    }
    this.wake?.();
  }

  private flowAgain(): void {
    this.queuedBytes = 0;
    if (!this.paused) return;
    this.paused = false;
    this.command?.resume();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    for (;;) {
      if (this.queued.length > 0) {
        const value = this.queued.length === 1 ? this.queued.pop()! : Buffer.concat(this.queued.splice(0));
        this.flowAgain();
        return { value, done: false };
      }
      if (this.ended || this.abandoned) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<Buffer>> {
    this.abandoned = true;
    this.queued.length = 0;
    // Nobody reads any more: the command runs on to its end, its output dropped.
    this.flowAgain();
    this.wake?.();
    return { value: undefined, done: true };
  }
}

export class HookServer {
  private readonly prefix: string;
  private readonly allowedMethods: string[];
  /** False once graceful shutdown has begun: /healthz then answers 503. */
  accepting = true;
  /** Rate limits, jobs, debounce and retries of triggered commands. */
  readonly executions: Executions;

  constructor(
    private hooks: Map<string, Hook>,
    private readonly opts: ServerOptions,
    private readonly log: Log,
  ) {
    this.prefix = opts.urlprefix === "" ? "/" : `/${opts.urlprefix}/`;
    this.allowedMethods = opts.httpMethods === "" ? [] : opts.httpMethods.split(",");
    this.executions = new Executions(opts.jobs, log);
  }

  /** Replaces the whole hook set at once; a request uses the set that was current when it was routed. */
  setHooks(hooks: Map<string, Hook>): void {
    this.hooks = hooks;
  }

  /** The commands running now, with the hook and request that started them. */
  runningCommands(): { hook: string; rid: string; pid: number | undefined; kill: (signal: NodeJS.Signals) => void }[] {
    return runningCommands().map((e) => ({ hook: e.hook, rid: e.rid, pid: e.command.pid, kill: (sig) => e.command.kill(sig) }));
  }

  /** Step one: decide from the method and URL alone. */
  route(head: RequestHead): Routed {
    const q = head.url.indexOf("?");
    const rawPath = q === -1 ? head.url : head.url.slice(0, q);
    const query = q === -1 ? "" : head.url.slice(q + 1);
    const path = rawPath.includes("%") ? pathUnescape(rawPath) : decodeLatin1(rawPath);
    if (path === undefined) {
      return { kind: "response", response: { status: 400, headers: [["Content-Type", "text/plain; charset=utf-8"], ["Connection", "close"]], body: "400 Bad Request" } };
    }
    const logging = this.log.enabled;
    const rid = logging || this.opts.jobs ? this.requestId(head) : "";
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
        return { kind: "response", response: { status: 200, headers: [["Content-Type", METRICS_TYPE]], body: metrics.render() + this.executions.counters.render() } };
      }
      if (this.opts.jobs && isJobsPath(path)) {
        const authorization = rawHeader(head.rawHeaders, "authorization");
        return { kind: "response", response: answerJobs({ method: head.method, path, query, authorization }, this.opts.jobs, this.opts.jobsAccess ?? {}) };
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
      metrics.request("", 404);
      return this.done(head, rid, start, respond(404, new Headers(), MSG.notFound));
    }
    const fields = logging ? { rid, hook: id } : NO_FIELDS;
    if (!this.methodAllowed(hook, head.method)) {
      metrics.request(id, 405);
      this.log.print(`[${rid}] HTTP ${head.method} method not allowed for hook ${goQuote(id)}`, fields);
      return this.done(head, rid, start, { status: 405, headers: [], body: "" }, fields);
    }
    if (logging) this.log.print(`[${rid}] ${id} got matched`, fields);
    return { kind: "hook", hook, head, rid, start, query, fields };
  }

  /** GET /healthz: 200 while the server takes work, 503 once it is shutting down. */
  private health(): HookResponse {
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
    // A job id (-jobs) must stay unique among the jobs kept: longer.
    return this.opts.jobs ? randomUUID().replace(/-/g, "").slice(0, 12) : randomUUID().slice(0, 6);
  }

  private methodAllowed(hook: Hook, method: string): boolean {
    const own = hook["http-methods"];
    if (own && own.length > 0) return own.some((m) => m.trim().toUpperCase() === method);
    if (this.allowedMethods.length > 0) return this.allowedMethods.includes(method);
    return true;
  }

  /** The answer when the body is larger than -max-body. */
  tooLarge(m: Matched, limit: number): HookResponse {
    this.log.print(`[${m.rid}] request body is larger than the -max-body limit of ${limit} bytes`, m.fields);
    metrics.request(m.hook.id, 413);
    return this.finish(m, respond(413, new Headers(), MSG.tooLarge));
  }

  /**
   * Step two: parse the body, evaluate the rules, run the command, build the response. Answers
   * synchronously unless a multipart body must be parsed or the response waits for a command.
   */
  handle(m: Matched, body: Buffer): HookResponse | Promise<HookResponse> {
    const response = this.process(m, body);
    if (response instanceof Promise) {
      return response.then((r) => {
        metrics.request(m.hook.id, r.status);
        return this.finish(m, r, body);
      });
    }
    metrics.request(m.hook.id, response.status);
    return this.finish(m, response, body);
  }

  private process(m: Matched, body: Buffer): HookResponse | Promise<HookResponse> {
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
      const jsonFields = new Set(
        (hook["parse-parameters-as-json"] ?? []).filter((a) => a.source === "payload" && a.name).map((a) => a.name!),
      );
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
    // With logging on, parse now so the log lines come in the reference's order.
    if (log.enabled) void req.payload;
    return this.trigger(m, req, out);
  }

  /** Evaluates the rules and, when they hold, runs the command. */
  private trigger(m: Matched, req: HookRequest, out: Headers): HookResponse | Promise<HookResponse> {
    const { hook, rid } = m;
    const log = this.log;
    this.parseJsonParameters(hook, req, m.fields);

    let ok = true;
    if (hook["trigger-rule"]) {
      const result = evaluate(hook["trigger-rule"], req, (w) => log.print(w, m.fields));
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

    const policy = this.executions.policy(hook);
    const wait = this.executions.limited(hook, policy);
    if (wait !== undefined) {
      log.print(`[${rid}] ${hook.id} got matched, but its rate-limit of ${policy.rate!.requests} per ${msText(policy.rate!.periodMs)} is reached - answering 429`, m.fields);
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

    if (hook["stream-command-output"]) return this.stream(m, req, out, turn, job, policy);
    if (hook["include-command-output-in-response"]) {
      return this.executeInTurn(hook, req, turn, job, policy).then((result) => {
        if (result.timedOut) {
          out.set("Content-Type", "text/plain; charset=utf-8");
          return respond(504, out, timeoutMessage(this.timeoutOf(hook)));
        }
        if (result.error !== undefined) {
          const status = policy.statusFromExit ? statusForExit(result) : 500;
          if (hook["include-command-output-in-response-on-error"]) return respond(status, out, result.output);
          out.set("Content-Type", "text/plain; charset=utf-8");
          return respond(status, out, MSG.commandError);
        }
        return this.respondWith(m, hook["success-http-response-code"], out, result.output);
      });
    }
    const running = this.executeInTurn(hook, req, turn, job, policy).catch((e: Error) => log.print(`[${rid}] error occurred: ${e.message}`, m.fields));
    return { ...this.answerNow(m, out, policy, job), bodyInUse: running };
  }

  /** The answer of a hook whose command runs after it: async-response's 202 with the job's URL, or the reference's. */
  private answerNow(m: Matched, out: Headers, policy: RunPolicy, job: Job | undefined): HookResponse {
    if (!policy.async) return this.respondWith(m, m.hook["success-http-response-code"], out, m.hook["response-message"] ?? "");
    if (job) out.set("Location", `/jobs/${job.id}`);
    return respond(202, out, m.hook["response-message"] ?? "");
  }

  /** debounce: answered at once; the command runs (in its turn) when no later trigger came for the quiet period. */
  private debounced(m: Matched, req: HookRequest, out: Headers, policy: RunPolicy): HookResponse {
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

  /**
   * stream-command-output: the answer starts with the command's first output (status 200) and
   * carries the rest as it is produced; a failure is told in a last line. A command that fails
   * before any output is answered like a captured one (500).
   */
  private stream(m: Matched, req: HookRequest, out: Headers, turn: Turn, job: Job | undefined, policy: RunPolicy): Promise<HookResponse> {
    const hook = m.hook;
    const body = new OutputStream();
    return new Promise<HookResponse>((resolve) => {
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
      this.executeInTurn(hook, req, turn, job, policy, onOutput, (command) => body.attach(command)).then((result) => {
        if (!started && result.timedOut) {
          out.set("Content-Type", "text/plain; charset=utf-8");
          resolve(respond(504, out, timeoutMessage(this.timeoutOf(hook))));
          return;
        }
        if (!started && result.error !== undefined) {
          out.set("Content-Type", "text/plain; charset=utf-8");
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
  private respondWith(m: Matched, code: number | undefined, out: Headers, body: string | Buffer): HookResponse {
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
      let text: string;
      try {
        text = getArgument(arg, req);
      } catch {
        this.log.print(`[${req.id}] error parsing JSON parameters: couldn't retrieve argument for ${describeArgument(arg)}`, fields);
        continue;
      }
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
    const background = !m.hook["stream-command-output"] && !m.hook["include-command-output-in-response"];
    const max = m.hook["max-concurrency"] ?? (this.opts.maxConcurrency || (background ? (this.opts.maxBackground ?? 0) : 0));
    const maxQueue = m.hook["max-queue"] ?? this.opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    const turn = takeTurn(m.hook.id, max, maxQueue);
    if (!turn) {
      this.log.print(`[${m.rid}] ${m.hook.id} got matched, but ${max} commands are running (max-concurrency) and ${maxQueue} are waiting (max-queue) - answering 429`, m.fields);
    } else if (turn.wait) {
      this.log.print(`[${m.rid}] ${m.hook.id} runs ${max} commands already (max-concurrency): this one waits for its turn`, m.fields);
    }
    return turn;
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
  private async execute(hook: Hook, req: HookRequest, onOutput?: OutputSink, onStart?: (command: RunningCommand) => void): Promise<ExecuteResult> {
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
      metrics.execution(hook.id, "error");
      if (command.includes(" ")) {
        log.print(`[${rid}] use 'pass-arguments-to-command' to specify args for '${command.trim().split(/\s+/)[0]}'`, fields);
      }
      return { output: Buffer.alloc(0), error: (e as Error).message, exitCode: null };
    }

    const argv = [command];
    for (const arg of hook["pass-arguments-to-command"] ?? []) {
      try {
        argv.push(getArgument(arg, req));
      } catch {
        argv.push("");
        log.print(`[${rid}] error extracting command arguments: couldn't retrieve argument for ${describeArgument(arg)}`, fields);
      }
    }

    const env: Record<string, string> = {};
    for (const arg of hook["pass-environment-to-command"] ?? []) {
      try {
        const value = getArgument(arg, req);
        env[arg.envname ? arg.envname : `HOOK_${arg.name ?? ""}`] = value;
      } catch {
        log.print(`[${rid}] error extracting command arguments for environment: couldn't retrieve argument for ${describeArgument(arg)}`, fields);
      }
    }

    const files: string[] = [];
    for (const arg of hook["pass-file-to-command"] ?? []) {
      let value: string;
      try {
        value = getArgument(arg, req);
      } catch {
        log.print(`[${rid}] error extracting command arguments for file: couldn't retrieve argument for ${describeArgument(arg)}`, fields);
        continue;
      }
      let envName = arg.envname;
      if (!envName) {
        envName = `HOOK_${(arg.name ?? "").toUpperCase()}`;
        log.print(`no ENVVAR name specified, falling back to [${envName}]`, fields);
      }
      let data = encodeBytes(value);
      if (arg.base64decode) {
        const decoded = goBase64Decode(data);
        if (decoded.error !== undefined) log.print(`error decoding string [${decoded.error}]`, fields);
        data = decoded.data;
      }
      const file = createTempFile(cwd ?? tmpdir(), envName, data);
      if (typeof file !== "string") {
        log.print(`[${rid}] error creating temp file [${file.message}]`, fields);
        continue;
      }
      log.print(`[${rid}] writing env ${envName} file ${file}`, fields);
      files.push(file);
      env[envName] = file;
    }

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
    const began = process.hrtime.bigint();
    const result = await runCommand(spec, { hook: hook.id, rid }, onOutput, onStart);
    metrics.execution(hook.id, outcome(result), Number(process.hrtime.bigint() - began) / 1e9);
    if (log.enabled) log.print(`[${rid}] command output: ${result.output.toString("utf8")}`, fields);
    if (log.enabled && result.stderr) log.print(`[${rid}] command stderr: ${result.stderr.toString("utf8")}`, fields);
    if (result.error !== undefined) log.print(`[${rid}] error occurred: ${result.error}`, fields);
    for (const f of files) {
      log.print(`[${rid}] removing file ${f}`, fields);
      try {
        unlinkSync(f);
      } catch (e) {
        log.print(`[${rid}] error removing file ${f} [${(e as Error).message}]`, fields);
      }
    }
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
  private finish(m: Matched, res: HookResponse, body?: Buffer): HookResponse {
    this.logExchange(m.head, m.rid, m.start, res, body, m.fields);
    return res;
  }

  private done(head: RequestHead, rid: string, start: bigint, res: HookResponse, fields?: LogFields): Routed {
    this.logExchange(head, rid, start, res, undefined, fields);
    return { kind: "response", response: res };
  }

  private logExchange(head: RequestHead, rid: string, start: bigint, res: HookResponse, body?: Buffer, fields?: LogFields): void {
    if (!this.log.enabled) return;
    if (this.opts.debug) this.log.raw(dump(rid, head, body, res), fields);
    const elapsed = goDuration(process.hrtime.bigint() - start);
    const host = rawHeader(head.rawHeaders, "host") ?? "";
    const size = typeof res.body === "string" || Buffer.isBuffer(res.body) ? Buffer.byteLength(res.body) : 0;
    this.log.print(`[${rid}] ${String(res.status).padStart(3, "0")} | ${iBytes(size)} | ${elapsed} | ${host} | ${head.method} ${head.url}`, fields);
  }
}

/** How a command run ended, for the metrics. */
function outcome(result: CommandResult): Outcome {
  if (result.timedOut) return "timeout";
  if (result.error === undefined) return "success";
  // No exit code and no signal: the command could not be started.
  return result.exitCode === null && !result.error.startsWith("signal: ") ? "error" : "failure";
}

/** What running a hook's command gave: its output, Go's error text, its exit, and whether command-timeout stopped it. */
type ExecuteResult = AttemptRun;

/**
 * status-from-exit-code, for a command that failed: exit codes 100–255 are the HTTP status plus
 * 300 (exit 104 → 404, 109 → 409, 203 → 503), when Go knows that status; any other failure is 500.
 */
function statusForExit(result: ExecuteResult): number {
  const code = result.exitCode;
  if (result.timedOut) return 504;
  if (code === null || code < 100 || code > 255) return 500;
  return STATUS_TEXT[code + 300] !== undefined ? code + 300 : 500;
}

/** Seconds a client told 429 (queue full) is asked to wait. */
const RETRY_AFTER_S = "1";

function msText(ms: number): string {
  return goDuration(BigInt(Math.round(ms * 1e6)));
}

function timeoutMessage(ms: number): string {
  return `The hook's command did not finish within its command-timeout of ${msText(ms)} and was stopped.`;
}

/** Go's ioutil.TempFile(dir, pattern): a new file named pattern + random digits, mode 0600. */
function createTempFile(dir: string, pattern: string, data: Buffer): string | Error {
  for (let attempt = 0; attempt < 100; attempt++) {
    const name = join(dir, pattern + String(Math.floor(Math.random() * 1e9)).padStart(9, "0"));
    let fd: number;
    try {
      fd = openSync(name, "wx", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") continue;
      return e as Error;
    }
    try {
      writeSync(fd, data);
      return name;
    } catch (e) {
      unlinkSync(name);
      return e as Error;
    } finally {
      closeSync(fd);
    }
  }
  return new Error(`could not create a temp file in ${dir}`);
}

/** The -debug dump of one exchange, in the reference's "> [id] …" / "< [id] …" format. */
function dump(rid: string, head: RequestHead, body: Buffer | undefined, res: HookResponse): string {
  let out = `> [${rid}] ${head.method} ${head.url}`;
  const headers = new Map<string, string[]>();
  for (let i = 0; i < head.rawHeaders.length; i += 2) {
    const k = canonicalHeaderKey(head.rawHeaders[i]!);
    if (k === "Host") continue;
    headers.set(k, [...(headers.get(k) ?? []), head.rawHeaders[i + 1]!]);
  }
  for (const k of [...headers.keys()].sort()) out += `\n> [${rid}] ${k}: ${headers.get(k)!.join(", ")}`;
  if (body && body.length > 0) {
    out += "\n";
    for (const line of body.toString("utf8").split("\n")) out += `> [${rid}] ${line}\n`;
  }
  out += `\n< [${rid}] ${STATUS_TEXT[res.status] ?? ""}`;
  for (const [k, v] of [...res.headers].sort((a, b) => (a[0] < b[0] ? -1 : 1))) out += `\n< [${rid}] ${k}: ${v}`;
  if ((typeof res.body === "string" || Buffer.isBuffer(res.body)) && res.body.length > 0) {
    out += "\n";
    for (const line of res.body.toString().split("\n")) out += `< [${rid}] ${line}\n`;
  }
  return out + "\n";
}
