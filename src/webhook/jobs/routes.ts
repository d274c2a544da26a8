// GET /jobs/<id> and GET /jobs?hook=ID (-jobs), outside the hook URL prefix like /metrics, and
// POST /jobs/<id>/replay (-jobs-replay). Job output may hold secrets, so access can be limited to a
// bearer token (-jobs-token) or a user and password (-jobs-auth user:password), compared in
// constant time; the console (console/) uses the same.
import { messageOf } from "../errors.js";
import { sameSecret } from "../../shared/secret.js";
import { type Job, summary } from "./job.js";
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
  /** Origin, Sec-Fetch-Site and Host, for POST: a page of another site may not act here (CSRF). */
  origin?: string | undefined;
  fetchSite?: string | undefined;
  host?: string | undefined;
}

/** -jobs-replay: runs a job's kept request again, answering with the new job. */
export type Replay = (job: Job) => Promise<JobsAnswer>;

const REPLAY_SUFFIX = "/replay";

/** Whether `path` is one of the jobs routes. */
export function isJobsPath(path: string): boolean {
  return path === "/jobs" || path === "/jobs/" || path.startsWith("/jobs/");
}

/** The answer; a promise where the jobs are read from another process (-queue: the key-value store). */
export function answerJobs(r: JobsRequest, store: JobStore, access: JobsAccess, replay?: Replay): JobsAnswer | Promise<JobsAnswer> {
  if (r.method === "POST" && r.path.endsWith(REPLAY_SUFFIX)) return answerReplay(r, store, access, replay);
  if (r.method !== "GET" && r.method !== "HEAD") return jsonAnswer(405, { error: "the jobs routes answer GET only" }, [["Allow", "GET, HEAD"]]);
  const denied = checkAccess(r.authorization, access);
  if (denied) return denied;
  const id = r.path.slice("/jobs/".length);
  if (id !== "") return settle(store.get(id), (job) => (job ? jsonAnswer(200, job) : noJob(id)));
  const params = new URLSearchParams(r.query);
  const hook = params.get("hook") ?? undefined;
  const state = params.get("state") ?? undefined;
  return settle(store.list(hook), (jobs) => jsonAnswer(200, { jobs: jobs.filter((j) => state === undefined || j.state === state).map(summary) }));
}

/** POST /jobs/<id>/replay. */
function answerReplay(r: JobsRequest, store: JobStore, access: JobsAccess, replay: Replay | undefined): JobsAnswer | Promise<JobsAnswer> {
  const denied = checkAccess(r.authorization, access) ?? crossSite(r) ?? reboundHost(r, access);
  if (denied) return denied;
  if (!replay) return jsonAnswer(404, { error: messageOf("WEBHOOK_REPLAY_OFF", {}) });
  const id = r.path.slice("/jobs/".length, -REPLAY_SUFFIX.length);
  const run = replay;
  return (async () => {
    let job: Job | undefined;
    try {
      job = await store.get(id);
    } catch (e) {
      return unreadable(e as Error);
    }
    return job ? run(job) : noJob(id);
  })();
}

/**
 * A 403 for a request a page of another site made (CSRF: a browser holding basic-auth credentials
 * sends them on a cross-site form post): its Origin is not this server, or Sec-Fetch-Site says so.
 * Clients that are not browsers (curl) send neither header.
 */
export function crossSite(r: Pick<JobsRequest, "origin" | "fetchSite" | "host">): JobsAnswer | undefined {
  const site = r.fetchSite?.toLowerCase();
  let foreign = site !== undefined && site !== "same-origin" && site !== "none";
  if (!foreign && r.origin !== undefined) {
    try {
      foreign = new URL(r.origin).host !== (r.host ?? "").toLowerCase();
    } catch {
      foreign = true;
    }
  }
  if (!foreign) return undefined;
  return jsonAnswer(403, { error: messageOf("WEBHOOK_CROSS_SITE", { origin: r.origin ?? site ?? "" }) });
}

/**
 * A 403 when the routes are open (no -jobs-token/-jobs-auth: -console-insecure on loopback) and the
 * Host is not a loopback name: DNS rebinding, a page of evil.example whose name now points at
 * 127.0.0.1, is "same-origin" to itself and would read the runs and replay them. Clients that send
 * no Host (HTTP/1.0) are not browsers.
 */
export function reboundHost(r: Pick<JobsRequest, "host">, access: JobsAccess): JobsAnswer | undefined {
  if (access.token !== undefined || access.basic !== undefined || r.host === undefined) return undefined;
  let name = "";
  try {
    name = new URL(`http://${r.host}`).hostname;
  } catch {
    // Not a host name: refused below.
  }
  if (name === "localhost" || name === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(name)) return undefined;
  return jsonAnswer(403, { error: messageOf("WEBHOOK_NOT_LOOPBACK_HOST", { host: r.host }) });
}

/** `answer(value)`, at once when the value is there; an unreadable store is a 503 saying why. */
function settle<T>(value: T | Promise<T>, answer: (v: T) => JobsAnswer): JobsAnswer | Promise<JobsAnswer> {
  if (!(value instanceof Promise)) return answer(value);
  return value.then(answer, unreadable);
}

function unreadable(e: Error): JobsAnswer {
  return jsonAnswer(503, { error: `cannot read the job records now (${e.message}); try again` }, [["Retry-After", "1"]]);
}

function noJob(id: string): JobsAnswer {
  return jsonAnswer(404, { error: `no job ${id}: it never existed or is older than the history keeps (-jobs-keep, -jobs-max-age)` });
}

export function jsonAnswer(status: number, value: unknown, headers: [string, string][] = []): JobsAnswer {
  return { status, headers: [["Content-Type", "application/json"], ["Cache-Control", "no-store"], ...headers], body: JSON.stringify(value, null, 2) + "\n" };
}

/**
 * A 401 unless `authorization` carries the credentials (none set: open). A browser, which cannot
 * send a bearer token, may give the token as the password of basic auth (any user name);
 * `basicChallenge` asks for basic auth then (the console).
 */
export function checkAccess(authorization: string | undefined, access: JobsAccess, basicChallenge = false): JobsAnswer | undefined {
  if (access.token === undefined && access.basic === undefined) return undefined;
  const given = authorization ?? "";
  const space = given.indexOf(" ");
  const scheme = given.slice(0, space).toLowerCase();
  const credentials = given.slice(space + 1).trim();
  if (access.token !== undefined && scheme === "bearer" && sameSecret(credentials, access.token)) return undefined;
  if (scheme === "basic") {
    const pair = Buffer.from(credentials, "base64").toString("utf8");
    if (access.basic !== undefined && sameSecret(pair, access.basic)) return undefined;
    if (access.token !== undefined && pair.includes(":") && sameSecret(pair.slice(pair.indexOf(":") + 1), access.token)) return undefined;
  }
  const challenge = access.token !== undefined && !basicChallenge ? 'Bearer realm="jobs"' : 'Basic realm="jobs", charset="UTF-8"';
  return jsonAnswer(401, { error: "the jobs routes need the credentials given to -jobs-token or -jobs-auth" }, [["WWW-Authenticate", challenge]]);
}
