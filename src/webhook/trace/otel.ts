// The OpenTelemetry SDK behind trace.ts, loaded only when traces are on: a tracer provider with a
// batch span processor and the OTLP/HTTP exporter (JSON), configured from the standard OTEL_*
// variables the SDK packages leave to the caller (sampler, batch sizes, service name).
import { DiagLogLevel, diag, ROOT_CONTEXT, type Span, SpanKind as OtelKind, SpanStatusCode, type SpanContext, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { SpanKind, Tracer, TraceSpan } from "./trace.js";

const KINDS: Record<SpanKind, OtelKind> = { server: OtelKind.SERVER, internal: OtelKind.INTERNAL, producer: OtelKind.PRODUCER, consumer: OtelKind.CONSUMER };

/** A W3C traceparent (version 00, or a later one read as 00); undefined when it is not valid. */
export function parseTraceparent(text: string): SpanContext | undefined {
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(text.trim());
  if (!m || m[1] === "ff" || (m[1] === "00" && m[5] !== undefined)) return undefined;
  if (/^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return undefined;
  return { traceId: m[2]!, spanId: m[3]!, traceFlags: Number.parseInt(m[4]!, 16) & 1, isRemote: true };
}

/** The SDK's error handler logs an error as JSON with its stack: its message is the line. */
function errorText(m: string): string {
  try {
    const e = JSON.parse(m) as { message?: unknown };
    if (typeof e.message === "string") return e.message;
  } catch {
    // not JSON: the text as it is
  }
  return m.replace(/\s+/g, " ");
}

class OtelSpan implements TraceSpan {
  readonly traceparent: string;

  constructor(readonly span: Span) {
    const c = span.spanContext();
    this.traceparent = `00-${c.traceId}-${c.spanId}-0${c.traceFlags & 1}`;
  }

  setAttribute(name: string, value: string | number): void {
    this.span.setAttribute(name, value);
  }

  end(error?: string): void {
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

function sampler(env: NodeJS.ProcessEnv, warn: (line: string) => void): Sampler {
  const name = env["OTEL_TRACES_SAMPLER"] || "parentbased_always_on";
  const ratio = Number(env["OTEL_TRACES_SAMPLER_ARG"] ?? 1);
  const ratioSampler = (): Sampler => new TraceIdRatioBasedSampler(Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1);
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratioSampler();
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratioSampler() });
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    default:
      warn(`traces: OTEL_TRACES_SAMPLER=${JSON.stringify(name)} is not one this server knows: using parentbased_always_on`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** A whole number from the environment, or undefined (the SDK's default). */
function count(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const n = Number(env[name]);
  return env[name] !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

export function otelTracer(env: NodeJS.ProcessEnv, warn: (line: string) => void): Tracer {
  const protocol = env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] || env["OTEL_EXPORTER_OTLP_PROTOCOL"];
  if (protocol && protocol !== "http/json")
    warn(`traces: OTEL_EXPORTER_OTLP_PROTOCOL=${JSON.stringify(protocol)}: this server exports http/json only (a collector's OTLP/HTTP port takes both)`);
  // The SDK's own complaints (an export that failed) go to the log, errors only.
  const line = (m: string): void => warn(`traces: ${errorText(m)}`);
  const quiet = (): void => undefined;
  diag.setLogger({ error: line, warn: quiet, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.ERROR);
  const resource = resourceFromAttributes({ "service.name": "webhook" }).merge(detectResources({ detectors: [envDetector] }));
  const bsp = {
    scheduledDelayMillis: count(env, "OTEL_BSP_SCHEDULE_DELAY"),
    exportTimeoutMillis: count(env, "OTEL_BSP_EXPORT_TIMEOUT"),
    maxQueueSize: count(env, "OTEL_BSP_MAX_QUEUE_SIZE"),
    maxExportBatchSize: count(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
  };
  const provider = new TracerProvider({
    resource,
    sampler: sampler(env, warn),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...bsp })],
  });
  const tracer = provider.getTracer("webhook");
  return {
    start(name, kind, parent) {
      let context = ROOT_CONTEXT;
      if (typeof parent === "string") {
        const remote = parseTraceparent(parent);
        if (remote) context = trace.setSpanContext(ROOT_CONTEXT, remote);
      } else if (parent) {
        context = trace.setSpan(ROOT_CONTEXT, (parent as OtelSpan).span);
      }
      return new OtelSpan(tracer.startSpan(name, { kind: KINDS[kind] }, context));
    },
    shutdown: () => provider.shutdown(),
  };
}
