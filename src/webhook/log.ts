// The server's log, in the format of Go's log package as the reference sets it up:
// "[webhook] 2006/01/02 15:04:05 message" on stderr, written only with -verbose (or -debug).
// Every line passes through a redactor so secrets from the hooks file never reach the log.

export class Log {
  private secrets: string[] = [];

  constructor(readonly enabled: boolean, private readonly out: (s: string) => void = (s) => process.stderr.write(s)) {}

  /** Strings replaced by "***" wherever they would appear in a log line. */
  setSecrets(secrets: Iterable<string>): void {
    // Longest first, so a secret containing another is hidden whole.
    this.secrets = [...new Set(secrets)].filter((s) => s.length >= 2).sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    for (const s of this.secrets) if (text.includes(s)) text = text.split(s).join("***");
    return text;
  }

  /** log.Print: prefix, message, and a newline unless the message ends with one. */
  print(message: string): void {
    if (!this.enabled) return;
    this.write(message);
  }

  /** Writes even when not verbose (start-up errors the user must see). */
  always(message: string): void {
    this.write(message);
  }

  /** Raw text without the prefix (the -debug request dumps). */
  raw(text: string): void {
    if (this.enabled) this.out(this.redact(text));
  }

  private write(message: string): void {
    const text = this.redact(message);
    this.out(prefix() + text + (text.endsWith("\n") ? "" : "\n"));
  }
}

export function prefix(now = new Date()): string {
  const p = (n: number): string => String(n).padStart(2, "0");
  return `[webhook] ${now.getFullYear()}/${p(now.getMonth() + 1)}/${p(now.getDate())} ${p(now.getHours())}:${p(now.getMinutes())}:${p(now.getSeconds())} `;
}

/** humanize.IBytes as the reference's request log uses it: "15 B", "1.5 KiB". */
export function iBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1024)), units.length - 1);
  const val = Math.floor((n / 1024 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
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
  const m = Math.floor(s / 60);
  return `${m}m${trim(s - m * 60, 9)}s`;
}
