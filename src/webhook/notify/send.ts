// One try at sending an outcome to a notify target: a POST (JSON or ntfy's plain text) through
// Node's fetch, or an MQTT publish (QoS 1) on a connection made for it. Each try is bounded by the
// target's timeout; the caller (notifier.ts) retries and logs.
import { renderTemplate } from "../template/template.js";
import type { NotifyState, NotifyTarget } from "./target.js";

/** What a notification tells of a job. */
export interface Outcome {
  hook: string;
  job: string;
  state: NotifyState;
  /** The attempt that ended (1 for the first). */
  attempt: number;
  /** null when a signal ended the command or it could not start. */
  exitCode: number | null;
  /** How long that attempt ran. */
  durationMs: number;
  /** The tail of that attempt's output (OUTPUT_TAIL characters at most). */
  output: string;
}

/** Characters of a command's output a notification carries, the last ones. */
export const OUTPUT_TAIL = 1000;

const NTFY_TAGS: Record<NotifyState, string> = { failed: "x", "timed-out": "hourglass", retried: "repeat", succeeded: "white_check_mark" };

/** The template's dot: the outcome with Go-style field names. */
function dot(o: Outcome): Record<string, unknown> {
  return { Hook: o.hook, Job: o.job, State: o.state, Attempt: o.attempt, ExitCode: o.exitCode, DurationMs: o.durationMs, Output: o.output };
}

/** The message a target gets: its template's text, or the default for its kind. */
export function body(t: NotifyTarget, o: Outcome): string {
  if (t.template !== undefined) return renderTemplate(t.template, "notify", { data: dot(o) });
  if (t.kind !== "ntfy") return JSON.stringify(o);
  const exit = o.exitCode === null ? "" : ` with exit code ${o.exitCode}`;
  const line = `${o.hook} ${o.state}${exit} after ${(o.durationMs / 1000).toFixed(1)}s (${o.job === "" ? "" : `job ${o.job}, `}attempt ${o.attempt})`;
  return o.output === "" ? line : `${line}\n${o.output}`;
}

/** A header value fetch accepts: printable ASCII as it is, anything else as an RFC 2047 word (which ntfy decodes). */
function headerText(s: string): string {
  const flat = s.replace(/[\r\n]+/g, " ");
  return /^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat).toString("base64")}?=`;
}

/** Sends once; resolves when the target took it, rejects with the reason otherwise. */
export async function send(t: NotifyTarget, o: Outcome): Promise<void> {
  const text = body(t, o);
  const signal = AbortSignal.timeout(t.timeoutMs);
  if (t.kind === "mqtt") return publish(t, text, signal);
  const url = new URL(t.address);
  const headers = new Headers();
  // fetch refuses a URL with credentials: they go in the Authorization header instead.
  if (url.username !== "" || url.password !== "") {
    const user = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers.set("Authorization", `Basic ${Buffer.from(user).toString("base64")}`);
    url.username = "";
    url.password = "";
  }
  if (t.kind === "ntfy") {
    headers.set("Content-Type", "text/plain; charset=utf-8");
    headers.set("Title", headerText(t.title !== undefined ? renderTemplate(t.title, "notify title", { data: dot(o) }) : `${o.hook} ${o.state}`));
    headers.set("Priority", t.priority ?? (o.state === "failed" || o.state === "timed-out" ? "high" : "default"));
    headers.set("Tags", (t.tags ?? [NTFY_TAGS[o.state]]).join(","));
  } else {
    headers.set("Content-Type", t.template !== undefined ? "text/plain; charset=utf-8" : "application/json");
  }
  for (const [name, value] of t.headers) headers.set(name, value);
  const res = await fetch(url, { method: "POST", headers, body: text, signal, redirect: "error" });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`answered HTTP ${res.status}`);
}

async function publish(t: NotifyTarget, text: string, signal: AbortSignal): Promise<void> {
  // Loaded only when a hook publishes to MQTT.
  const { connectAsync } = await import("mqtt");
  // (Loading mqtt the first time may take longer than a short timeout.)
  const timedOut = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    else signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
  });
  // The timer fires after a try that went well too: nothing may be left unhandled then.
  timedOut.catch(() => undefined);
  const client = await Promise.race([connectAsync(t.address.href, { connectTimeout: t.timeoutMs, reconnectPeriod: 0 }), timedOut]);
  try {
    await Promise.race([client.publishAsync(t.topic, text, { qos: 1 }), timedOut]);
  } finally {
    await client.endAsync(true);
  }
}

/** The reason of a failed try, in one line without the target's address (fetch puts the socket error in `cause`). */
export function reason(e: unknown): string {
  const err = e as Error & { cause?: Error };
  if (err.name === "TimeoutError") return "it did not answer within the timeout";
  return (err.cause?.message ?? err.message ?? String(e)).replace(/\s+/g, " ");
}
