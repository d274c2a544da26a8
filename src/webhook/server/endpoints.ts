// The built-in endpoints, outside the hook URL prefix so they never shadow a hook: /healthz,
// /metrics (-metrics), /jobs (-jobs), and Go's 404 for any other path.
import type { ConsoleRoutes } from "../console/routes.js";
import { isConsolePath } from "../console/routes.js";
import type { Accepted, HttpResponse, RequestHead, Routed } from "../http/contract.js";
import { answerJobs, isJobsPath, type JobsAccess, type Replay } from "../jobs/routes.js";
import type { JobStore } from "../jobs/store.js";
import { CONTENT_TYPE as METRICS_TYPE, type Metrics } from "../log/metrics.js";
import type { Executions } from "../policy/executions.js";
import { rawHeader } from "../request/request.js";
import { Headers, respond } from "./response.js";

/** A request whose answer is read from elsewhere (-queue: /jobs from the shared key-value store). */
export interface Pending extends Accepted {
  answer: Promise<HttpResponse>;
}

export interface EndpointOptions {
  metrics?: boolean;
  jobs?: JobStore;
  jobsAccess?: JobsAccess;
}

export class Endpoints {
  constructor(
    private readonly opts: EndpointOptions,
    private readonly counters: { metrics: Metrics; executions: Executions },
    private readonly replay?: Replay,
    private readonly console?: ConsoleRoutes,
  ) {}

  /** The answer to a path outside the hook URL prefix; `accepting` is false once shutdown has begun. */
  answer(head: RequestHead, path: string, query: string, accepting: boolean): Routed<Pending> {
    if (path === "/healthz") return { kind: "response", response: health(accepting) };
    if (path === "/metrics" && this.opts.metrics) {
      const body = this.counters.metrics.render() + this.counters.executions.counters.render();
      return { kind: "response", response: { status: 200, headers: [["Content-Type", METRICS_TYPE]], body } };
    }
    const isJobs = this.opts.jobs !== undefined && isJobsPath(path);
    if (isJobs || (this.console && isConsolePath(path))) {
      const raw = head.rawHeaders;
      const r = {
        method: head.method,
        path,
        query,
        authorization: rawHeader(raw, "authorization"),
        origin: rawHeader(raw, "origin"),
        fetchSite: rawHeader(raw, "sec-fetch-site"),
        host: rawHeader(raw, "host"),
      };
      const answer = isJobs ? answerJobs(r, this.opts.jobs!, this.opts.jobsAccess ?? {}, this.replay) : this.console!.answer(r);
      return answer instanceof Promise ? { kind: "accepted", answer } : { kind: "response", response: answer };
    }
    const h = new Headers();
    h.set("Content-Type", "text/plain; charset=utf-8");
    h.set("X-Content-Type-Options", "nosniff");
    return { kind: "response", response: respond(404, h, "404 page not found\n") };
  }
}

/** GET /healthz: 200 while the server takes work, 503 once it is shutting down. */
function health(accepting: boolean): HttpResponse {
  const headers: [string, string][] = [["Content-Type", "text/plain; charset=utf-8"]];
  return accepting ? { status: 200, headers, body: "OK" } : { status: 503, headers, body: "shutting down" };
}
