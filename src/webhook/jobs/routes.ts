// GET /jobs/<id> and GET /jobs?hook=ID (-jobs), outside the hook URL prefix like /metrics. Job
// output may hold secrets, so access can be limited to a bearer token (-jobs-token) or a user and
// password (-jobs-auth user:password), compared in constant time.
import { sameSecret } from "../../shared/secret.js";
import { summary } from "./job.js";
import type { JobStore } from "./store.js";

export interface JobsAccess {
  /** -jobs-token: `Authorization: Bearer <token>`. */
  token?: string;
  /** -jobs-auth: "user:password" for `Authorization: Basic …`. */
  basic?: string;
}

export interface JobsAnswer {
  status: number;
  headers: [string, string][];
  body: string;
}

export interface JobsRequest {
  method: string;
  /** The path, decoded ("/jobs/abc"). */
  path: string;
  /** The raw query string, without "?". */
  query: string;
  authorization: string | undefined;
}

/** Whether `path` is one of the jobs routes. */
export function isJobsPath(path: string): boolean {
  return path === "/jobs" || path === "/jobs/" || path.startsWith("/jobs/");
}

/** The answer; a promise where the jobs are read from another process (-queue: the key-value store). */
export function answerJobs(r: JobsRequest, store: JobStore, access: JobsAccess): JobsAnswer | Promise<JobsAnswer> {
  if (r.method !== "GET" && r.method !== "HEAD") return json(405, { error: "the jobs routes answer GET only" }, [["Allow", "GET, HEAD"]]);
  const denied = checkAccess(r.authorization, access);
  if (denied) return denied;
  const id = r.path.slice("/jobs/".length);
  if (id !== "")
    return settle(store.get(id), (job) =>
      job ? json(200, job) : json(404, { error: `no job ${id}: it never existed or is older than the history keeps (-jobs-keep, -jobs-max-age)` }),
    );
  const params = new URLSearchParams(r.query);
  const hook = params.get("hook") ?? undefined;
  const state = params.get("state") ?? undefined;
  return settle(store.list(hook), (jobs) => json(200, { jobs: jobs.filter((j) => state === undefined || j.state === state).map(summary) }));
}

/** `answer(value)`, at once when the value is there; an unreadable store is a 503 saying why. */
function settle<T>(value: T | Promise<T>, answer: (v: T) => JobsAnswer): JobsAnswer | Promise<JobsAnswer> {
  if (!(value instanceof Promise)) return answer(value);
  return value.then(answer, (e: Error) => json(503, { error: `cannot read the job records now (${e.message}); try again` }, [["Retry-After", "1"]]));
}

function json(status: number, value: unknown, headers: [string, string][] = []): JobsAnswer {
  return { status, headers: [["Content-Type", "application/json"], ["Cache-Control", "no-store"], ...headers], body: JSON.stringify(value, null, 2) + "\n" };
}

function checkAccess(authorization: string | undefined, access: JobsAccess): JobsAnswer | undefined {
  if (access.token === undefined && access.basic === undefined) return undefined;
  const given = authorization ?? "";
  const space = given.indexOf(" ");
  const scheme = given.slice(0, space).toLowerCase();
  const credentials = given.slice(space + 1).trim();
  if (access.token !== undefined && scheme === "bearer" && sameSecret(credentials, access.token)) return undefined;
  if (access.basic !== undefined && scheme === "basic" && sameSecret(Buffer.from(credentials, "base64").toString("utf8"), access.basic)) return undefined;
  const challenge = access.token !== undefined ? 'Bearer realm="jobs"' : 'Basic realm="jobs", charset="UTF-8"';
  return json(401, { error: "the jobs routes need the credentials given to -jobs-token or -jobs-auth" }, [["WWW-Authenticate", challenge]]);
}
