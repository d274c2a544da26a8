// Traces (OpenTelemetry), off unless OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) is set.
// This module is what the hook server calls: each call is a no-op while no tracer is installed,
// so a server without the variables pays one comparison per step and never loads the SDK
// (otel.ts, imported only by startTracing). A span is tied to the object it is about (a request,
// a job's request) in a WeakMap; `nest` makes the new span the parent of that object's later ones.

/** A span under way. */
export interface TraceSpan {
  /** Its W3C traceparent, for a message header or a command's TRACEPARENT. */
  readonly traceparent: string;
  setAttribute(name: string, value: string | number): void;
  /** Ends it; with an error text, its status is an error. */
  end(error?: string): void;
}

export type SpanKind = "server" | "internal" | "producer" | "consumer";

/** What otel.ts provides. */
export interface Tracer {
  /** A span under `parent` (a span, or a W3C traceparent from elsewhere; a new trace when none or not valid). */
  start(name: string, kind: SpanKind, parent: TraceSpan | string | undefined): TraceSpan;
  /** Exports what is left; the tracer is not used after. */
  shutdown(): Promise<void>;
}

let tracer: Tracer | undefined;
const current = new WeakMap<object, TraceSpan>();

/** Whether traces are on. */
export function tracing(): boolean {
  return tracer !== undefined;
}

/**
 * A span about `of`, under the span `of` (or `from`, a span of another object) has, or under
 * `parent` (a traceparent) when given; undefined when traces are off. With `nest`, later spans
 * about `of` go under this one.
 */
export function begin(of: object, name: string, kind: SpanKind, opts?: { parent?: string | undefined; from?: object; nest?: boolean }): TraceSpan | undefined {
  if (tracer === undefined) return undefined;
  const span = tracer.start(name, kind, opts?.parent ?? current.get(opts?.from ?? of));
  if (opts?.nest || !current.has(of)) current.set(of, span);
  return span;
}

/** Later spans about `of` go under the span `from` has (the same request, as another object). */
export function follow(of: object, from: object): void {
  const span = tracer && current.get(from);
  if (span) current.set(of, span);
}

/** Turns traces on when the OTEL variables ask for them; says why not in `warn` when they are set but unusable. */
export async function startTracing(env: NodeJS.ProcessEnv, warn: (line: string) => void): Promise<void> {
  const endpoint = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] || env["OTEL_EXPORTER_OTLP_ENDPOINT"];
  if (!endpoint || env["OTEL_SDK_DISABLED"] === "true" || env["OTEL_TRACES_EXPORTER"] === "none") return;
  const { otelTracer } = await import("./otel.js");
  tracer = otelTracer(env, warn);
}

/** How long shutdown gives the spans still buffered to go out (a receiver that is down must not hold the exit). */
const STOP_MS = 3000;

/** Shutdown: the spans still buffered are exported, within STOP_MS. */
export async function stopTracing(): Promise<void> {
  const t = tracer;
  tracer = undefined;
  if (!t) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_MS)));
  await Promise.race([t.shutdown().catch(() => undefined), late]);
  clearTimeout(timer);
}
