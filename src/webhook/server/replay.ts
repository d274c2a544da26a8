// The answer to POST /jobs/<id>/replay (-jobs-replay), once the kept request went through the hook
// again (its trigger rule skipped) and the dispatch decided: 202 with the new job's id in X-Job-Id
// and Location as soon as it is queued or running; the command runs on without the caller (a
// streamed hook's output goes to its job record only). Refusals (rate-limit, full queue, shared
// queue down) are the hook's own answers.
import type { Dispatched } from "../dispatch/dispatch.js";
import type { HttpResponse } from "../http/contract.js";
import type { Log, LogFields } from "../log/log.js";

export function replayAnswer(replayOf: string, d: Dispatched, log: Log, fields: LogFields): HttpResponse | undefined {
  if (d.kind === "limited" || d.kind === "busy" || d.kind === "unavailable") return undefined;
  if (d.kind === "streamed") {
    void d
      .run(
        () => undefined,
        () => undefined,
      )
      .catch((e: Error) => log.print(`[${fields.rid ?? ""}] error occurred: ${e.message}`, fields));
  } else if (d.kind === "ran") {
    void d.result.catch(() => undefined);
  }
  const id = d.jobId ?? "";
  const headers: [string, string][] = [
    ["Content-Type", "application/json"],
    ["Cache-Control", "no-store"],
    ["X-Job-Id", id],
    ["Location", `/jobs/${encodeURIComponent(id)}`],
  ];
  const status = d.kind === "duplicate" ? 409 : 202;
  return { status, headers, body: `${JSON.stringify({ id, replayOf, ...(d.kind === "duplicate" ? { duplicate: true } : {}) }, null, 2)}\n` };
}
