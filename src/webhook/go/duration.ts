// Go's time.Duration: parsing ("30s", "1m30s") and printing ("1.234567ms").

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration ("30s", "1m30s", "1.5h", "0"), in milliseconds. */
export function parseGoDuration(s: string): number {
  if (s === "0") return 0;
  const m = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(s);
  if (!m) throw new Error("parse error");
  let ms = 0;
  for (const part of m[2]!.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) ms += Number(part[1]) * UNIT_MS[part[2]!]!;
  if (m[1] === "-") throw new Error("must not be negative");
  return ms;
}

/** Go's time.Duration.String for a span in nanoseconds: "512ns", "1.234567ms", "2.5s". */
export function goDuration(ns: bigint): string {
  const n = Number(ns);
  const trim = (v: number, digits: number): string => v.toFixed(digits).replace(/\.?0+$/, "");
  if (n < 1_000) return `${n}ns`;
  if (n < 1_000_000) return `${trim(n / 1_000, 3)}µs`;
  if (n < 1_000_000_000) return `${trim(n / 1_000_000, 6)}ms`;
  const s = n / 1e9;
  if (s < 60) return `${trim(s, 9)}s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s - h * 3600) / 60);
  return `${h > 0 ? `${h}h` : ""}${m}m${trim(s - h * 3600 - m * 60, 9)}s`;
}

/** A span in milliseconds as Go prints a Duration. */
export function msText(ms: number): string {
  return goDuration(BigInt(Math.round(ms * 1e6)));
}
