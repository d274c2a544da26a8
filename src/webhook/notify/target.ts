// The hook field `notify` (ours): where a job's outcome is sent — a JSON POST to a URL, a plain-text
// ntfy-style POST, or an MQTT publish — on which states, shaped by an optional Go text/template.
// Checked when the hooks file loads (a problem stops the start, or -validate reports it) and
// resolved once per hook into NotifyTargets.
import { parseGoDuration } from "../go/duration.js";
import type { Hook } from "../hooks/hook.js";
import { renderTemplate, TemplateError } from "../template/template.js";

/** The states a notification is sent on. */
export const NOTIFY_STATES = ["failed", "succeeded", "timed-out", "retried"] as const;
export type NotifyState = (typeof NOTIFY_STATES)[number];

/** One target as written in the hooks file: exactly one of url, ntfy and mqtt. */
export interface NotifyField {
  /** POST the outcome as JSON (or the template's text) to this http(s) URL. */
  url?: string;
  /** POST a plain-text message to this ntfy-style http(s) URL, with Title, Priority and Tags headers. */
  ntfy?: string;
  /** Publish the outcome (QoS 1) to `topic` on this MQTT broker (mqtt://, mqtts://, ws://, wss://). */
  mqtt?: string;
  topic?: string;
  /** The states that send it (default: failed and timed-out). */
  on?: string[];
  /** A Go text/template for the body; its dot holds the outcome (.Hook, .Job, .State…). */
  template?: string;
  /** ntfy: the Title header, a template too (default "<hook> <state>"). */
  title?: string;
  /** ntfy: the Priority header, 1 to 5 or min, low, default, high, max (default: high on failed and timed-out). */
  priority?: string;
  /** ntfy: the Tags header (default: one emoji tag for the state). */
  tags?: string[];
  /** Headers sent with url and ntfy (Authorization…): never logged. */
  headers?: { name: string; value: string }[];
  /** A Go duration each try may take (default "10s"). */
  timeout?: string;
  /** Tries after the first failed one (default 2), 1 s apart, doubled each time. */
  retries?: number;
}

export type NotifyKind = "url" | "ntfy" | "mqtt";

/** A target, checked and resolved. */
export interface NotifyTarget {
  kind: NotifyKind;
  /** The URL of the endpoint or broker. */
  address: URL;
  topic: string;
  on: ReadonlySet<NotifyState>;
  template: string | undefined;
  title: string | undefined;
  priority: string | undefined;
  tags: string[] | undefined;
  headers: [string, string][];
  timeoutMs: number;
  retries: number;
  /** What the log may say of the target: its kind, scheme and host (no credentials, path or query). */
  label: string;
}

const DEFAULT_ON: readonly NotifyState[] = ["failed", "timed-out"];
const DEFAULT_TIMEOUT = "10s";
const DEFAULT_RETRIES = 2;
const MAX_RETRIES = 10;
const MAX_TIMEOUT_MS = 5 * 60_000;
const PRIORITIES = /^([1-5]|min|low|default|high|max|urgent)$/;
const SCHEMES: Record<NotifyKind, readonly string[]> = { url: ["http:", "https:"], ntfy: ["http:", "https:"], mqtt: ["mqtt:", "mqtts:", "ws:", "wss:"] };

/** An outcome as templates see it (and as the JSON body carries it, in lower camel case). */
export const SAMPLE_OUTCOME = { Hook: "hook", Job: "job", State: "failed", Attempt: 1, ExitCode: 1, DurationMs: 0, Output: "" };

/** The hook's notify targets; throws Error saying what is wrong with the field. */
export function notifyTargets(hook: Hook): NotifyTarget[] {
  return (hook.notify ?? []).map((f, i) => target(f, `notify[${i}]`));
}

function target(f: NotifyField, where: string): NotifyTarget {
  const set = (["url", "ntfy", "mqtt"] as const).filter((k) => f[k] !== undefined);
  if (set.length !== 1) throw new Error(`"${where}" needs exactly one of "url", "ntfy" and "mqtt", not ${set.length}`);
  const kind = set[0]!;
  let address: URL;
  try {
    address = new URL(f[kind]!);
  } catch {
    throw new Error(`"${where}.${kind}" is not a URL: give ${SCHEMES[kind][0]}//HOST/…`);
  }
  if (!SCHEMES[kind].includes(address.protocol)) throw new Error(`"${where}.${kind}": the scheme must be one of ${SCHEMES[kind].join(", ")}`);
  const topic = f.topic ?? "";
  if (kind === "mqtt" && (topic === "" || /[#+\0]/.test(topic))) throw new Error(`"${where}.topic": mqtt needs a topic to publish to, without # or +`);
  if (kind !== "mqtt" && f.topic !== undefined) throw new Error(`"${where}.topic" goes with "mqtt" only`);
  const on = new Set<NotifyState>();
  for (const s of f.on ?? DEFAULT_ON) {
    if (!(NOTIFY_STATES as readonly string[]).includes(s)) throw new Error(`"${where}.on": ${JSON.stringify(s)} is not one of ${NOTIFY_STATES.join(", ")}`);
    on.add(s as NotifyState);
  }
  if (kind !== "ntfy" && (f.title !== undefined || f.priority !== undefined || f.tags !== undefined))
    throw new Error(`"${where}": title, priority and tags go with "ntfy" only`);
  if (f.priority !== undefined && !PRIORITIES.test(f.priority)) throw new Error(`"${where}.priority" must be 1 to 5 or min, low, default, high, max`);
  for (const t of f.tags ?? [])
    if (!/^[\x21-\x7e]+$/.test(t) || t.includes(",")) throw new Error(`"${where}.tags": ${JSON.stringify(t)} must be printable ASCII without spaces or commas`);
  if (kind === "mqtt" && f.headers !== undefined) throw new Error(`"${where}.headers" go with "url" and "ntfy" only (put MQTT credentials in the URL)`);
  const headers: [string, string][] = [];
  for (const [i, h] of (f.headers ?? []).entries()) {
    // Neither is quoted: a value is a secret, and a broken file may have one in the name.
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(h.name ?? "")) throw new Error(`"${where}.headers[${i}].name" is not a valid header name`);
    if (/[^\x20-\x7e\x80-\xff\t]/.test(h.value ?? ""))
      throw new Error(`"${where}.headers[${i}].value" holds a line break, a control character or one outside Latin-1`);
    headers.push([h.name, h.value ?? ""]);
  }
  let timeoutMs = -1;
  try {
    timeoutMs = parseGoDuration(f.timeout ?? DEFAULT_TIMEOUT);
  } catch {
    // reported below
  }
  if (timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS)
    throw new Error(`"${where}.timeout" must be a duration from "1ms" to "5m" such as "10s", not ${JSON.stringify(f.timeout)}`);
  const retries = f.retries ?? DEFAULT_RETRIES;
  if (retries > MAX_RETRIES) throw new Error(`"${where}.retries" must be 0 to ${MAX_RETRIES}`);
  for (const [name, text] of [
    ["template", f.template],
    ["title", f.title],
  ] as const) {
    if (text === undefined) continue;
    try {
      renderTemplate(text, `${where}.${name}`, { data: SAMPLE_OUTCOME });
    } catch (e) {
      if (e instanceof TemplateError) throw new Error(`"${where}.${name}": ${e.message}`, { cause: e });
      throw e;
    }
  }
  return {
    kind,
    address,
    topic,
    on,
    template: f.template,
    title: f.title,
    priority: f.priority,
    tags: f.tags,
    headers,
    timeoutMs,
    retries,
    label: `${kind === "url" ? "POST" : kind} ${address.protocol}//${address.host}${kind === "mqtt" ? ` topic ${topic}` : ""}`,
  };
}

/** What the log must never show of the hook's targets: whole URLs (a path can hold a token), passwords, header values (log lines name a target by its label). */
export function notifySecrets(hook: Hook): string[] {
  const out: string[] = [];
  for (const f of hook.notify ?? []) {
    for (const u of [f.url, f.ntfy, f.mqtt]) {
      if (u === undefined) continue;
      try {
        const url = new URL(u);
        if (url.password) out.push(decodeURIComponent(url.password));
        // A URL that is no more than its label (scheme and host) holds nothing to hide, and hiding it would hide the label.
        if (u.replace(/\/$/, "") !== `${url.protocol}//${url.host}`) out.push(u);
      } catch {
        out.push(u);
      }
    }
    for (const h of f.headers ?? []) out.push(h.value);
  }
  return out;
}
