// The run console (-console): /console/ (the page, its script and style, served from here: no
// third-party asset), /console/api/hooks, /console/api/runs?… and /console/api/runs/<id>/events
// (a run's record and live output, Server-Sent Events). Behind the jobs credentials; answers carry a
// strict Content-Security-Policy; its one action, replay, is POST /jobs/<id>/replay (jobs/routes.ts:
// refused to pages of another site).
import type { HookSet } from "../hooks/hook-set.js";
import type { HttpResponse } from "../http/contract.js";
import { FINAL_STATES, type Job } from "../jobs/job.js";
import { checkAccess, crossSite, type JobsAccess, jsonAnswer, reboundHost } from "../jobs/routes.js";
import type { JobStore } from "../jobs/store.js";
import { EventStream } from "./events.js";
import { hookViews } from "./hooks-view.js";
import type { LiveOutput } from "./live.js";
import { ASSETS } from "./page.js";
import { listRuns, parseFilter } from "./runs.js";

/** Event streams open at once over all clients; more get 503. */
const MAX_STREAMS = 32;
/** How often a stream reads its run's record for changes. */
const POLL_MS = 250;
/** A comment line on a quiet stream this often. */
const PING_MS = 15_000;

const SECURITY: [string, string][] = [
  [
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  ],
  ["X-Content-Type-Options", "nosniff"],
  ["X-Frame-Options", "DENY"],
  ["Referrer-Policy", "no-referrer"],
  ["Cross-Origin-Opener-Policy", "same-origin"],
  ["Cross-Origin-Resource-Policy", "same-origin"],
  ["Cache-Control", "no-store"],
];

export interface ConsoleRequest {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
  origin: string | undefined;
  fetchSite: string | undefined;
  host: string | undefined;
}

export interface ConsoleParts {
  store: JobStore;
  access: JobsAccess;
  /** The hooks loaded now. */
  hooks: () => HookSet;
  live: LiveOutput;
  /** -jobs-replay: the page offers replay. */
  replay: boolean;
}

export function isConsolePath(path: string): boolean {
  return path === "/console" || path.startsWith("/console/");
}

export class ConsoleRoutes {
  private streams = 0;

  constructor(private readonly parts: ConsoleParts) {}

  answer(r: ConsoleRequest): HttpResponse | Promise<HttpResponse> {
    if (r.path === "/console") return { status: 301, headers: [["Location", "/console/"], ...SECURITY], body: "" };
    if (r.method !== "GET" && r.method !== "HEAD") return secured(jsonAnswer(405, { error: "the console answers GET only" }, [["Allow", "GET, HEAD"]]));
    const denied = checkAccess(r.authorization, this.parts.access, true) ?? reboundHost(r, this.parts.access);
    if (denied) return secured(denied);
    const asset = ASSETS.get(r.path);
    if (asset) return { status: 200, headers: [["Content-Type", asset.type], ...SECURITY], body: asset.body };
    if (!r.path.startsWith("/console/api/")) return secured(jsonAnswer(404, { error: "no such console page" }));
    // Read by the page only: a page of another site gets nothing.
    const foreign = crossSite(r);
    if (foreign) return secured(foreign);
    const api = r.path.slice("/console/api/".length);
    if (api === "hooks") return this.hooks();
    if (api === "runs") return this.runs(r.query);
    const m = /^runs\/(.+)\/events$/.exec(api);
    if (m) return this.events(m[1]!);
    return secured(jsonAnswer(404, { error: "no such console route" }));
  }

  private async hooks(): Promise<HttpResponse> {
    const jobs = await this.read(() => this.parts.store.list());
    if (!Array.isArray(jobs)) return jobs;
    return secured(jsonAnswer(200, { replay: this.parts.replay, hooks: hookViews(this.parts.hooks(), jobs) }));
  }

  private async runs(query: string): Promise<HttpResponse> {
    const jobs = await this.read(() => this.parts.store.list());
    if (!Array.isArray(jobs)) return jobs;
    return secured(jsonAnswer(200, listRuns(jobs, parseFilter(query))));
  }

  /** The store's answer, or a 503 saying why it cannot be read (-queue: the NATS server). */
  private async read<T>(get: () => T | Promise<T>): Promise<T | HttpResponse> {
    try {
      return await get();
    } catch (e) {
      return secured(jsonAnswer(503, { error: `cannot read the job records now (${(e as Error).message}); try again` }, [["Retry-After", "1"]]));
    }
  }

  /** The run's record now and at each change, and its output as it comes while it runs here; ends once the run has. */
  private async events(id: string): Promise<HttpResponse> {
    const { store, live } = this.parts;
    const first = await this.read(() => store.get(id));
    if (first === undefined) return secured(jsonAnswer(404, { error: `no job ${id}` }));
    if ("status" in first) return first;
    if (this.streams >= MAX_STREAMS)
      return secured(jsonAnswer(503, { error: "too many console streams are open; close a console tab" }, [["Retry-After", "5"]]));
    this.streams++;
    let listening: { stop: () => void } | undefined;
    let last = "";
    let polls = 0;
    const stream = new EventStream(() => {
      this.streams--;
      clearInterval(timer);
      listening?.stop();
    });
    const show = (job: Job): void => {
      const json = JSON.stringify(forStream(job));
      if (json !== last) stream.job((last = json));
      if (FINAL_STATES.has(job.state)) {
        stream.end();
        clearInterval(timer);
        return;
      }
      if (listening) return;
      // Its command runs here: the output so far, then each chunk (again for each attempt).
      const l = live.listen(id, { output: (c) => stream.output(c), ended: () => (listening = undefined) });
      if (!l) return;
      listening = l;
      if (l.sofar.length > 0) stream.output(l.sofar);
    };
    const timer = setInterval(() => {
      if (++polls % Math.round(PING_MS / POLL_MS) === 0) stream.ping();
      void Promise.resolve(store.get(id)).then(
        (job) => (job ? show(job) : stream.end()),
        () => undefined,
      );
    }, POLL_MS);
    show(first);
    return { status: 200, headers: [["Content-Type", "text/event-stream"], ...SECURITY], body: stream };
  }
}

/** The record as the page shows it: the kept request without its body (its size instead). A damaged one (read back from a history file) is shown as it is. */
function forStream(job: Job): unknown {
  if (typeof job.request !== "object" || job.request === null) return job;
  const { body, ...request } = job.request;
  return { ...job, request: { ...request, ...(typeof body === "string" ? { bodyBytes: Buffer.byteLength(body, "base64") } : {}) } };
}

function secured(a: { status: number; headers: [string, string][]; body: string }): HttpResponse {
  return { ...a, headers: [...a.headers.filter(([n]) => n !== "Cache-Control"), ...SECURITY] };
}
