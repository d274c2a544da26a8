// Hook logic stand-in shared by every transport prototype: a pure function from parsed request
// data to a response, the interface the real server.ts should call. It does the work the real
// server does for benchmark (a): route, parse query and JSON body, evaluate a `match value` rule
// on url `secret` with a constant-time digest comparison, and answer.
import { createHash, timingSafeEqual } from "node:crypto";

export interface RawRequest {
  method: string;
  /** Path plus query, as on the request line. */
  target: string;
  /** Lower-cased header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  remoteAddr: string;
}

export interface HookResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

const secretDigest = createHash("sha256").update("s3cret").digest();

const text = (status: number, body: string): HookResponse => ({
  status,
  headers: { "content-type": "text/plain; charset=utf-8" },
  body,
});

/** Runs synchronously for rule-only hooks; `spawnHook` is awaited for hooks that run a command. */
export function handle(req: RawRequest): HookResponse | "execute" {
  const q = req.target.indexOf("?");
  const path = q < 0 ? req.target : req.target.slice(0, q);
  if (req.method === "GET" && path === "/") return text(200, "OK");
  if (!path.startsWith("/hooks/")) return text(404, "404 page not found\n");
  const id = path.slice(7);
  if (id === "run-true") return "execute";
  if (id !== "deploy") return text(404, "Hook not found.");
  const query = new URLSearchParams(q < 0 ? "" : req.target.slice(q + 1));
  let payload: unknown;
  if ((req.headers["content-type"] ?? "").startsWith("application/json") && req.body.length > 0) {
    try {
      payload = JSON.parse(req.body.toString("utf8"));
    } catch {
      payload = undefined;
    }
  }
  const given = query.get("secret");
  const ok =
    given !== null &&
    payload !== null &&
    timingSafeEqual(createHash("sha256").update(given).digest(), secretDigest);
  if (!ok) return text(200, "Hook rules were not satisfied.");
  return text(200, "");
}
