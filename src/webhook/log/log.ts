// The server's log, in the format of Go's log package as the reference sets it up:
// "[webhook] 2006/01/02 15:04:05 message" on stderr (or the -logfile), written only with -verbose
// (or -debug, or -logfile). With -log-format json each line is one JSON object instead:
// {"time","level","request_id","hook_id","event"} (request_id and hook_id when known; a caller
// passes them as fields, or the message starts with "[rid] "). Every line passes through a redactor so
// secrets from the hooks file never reach the log, in any form a line can hold them: raw, percent-
// encoded (a URL, a form body), JSON- or Go-quoted (argv, JSON bodies). A leaf: it imports nothing
// of ours (the line for each answered request is server/exchange-log.ts).

export type LogFormat = "text" | "json";

/** What a log line is about, for the JSON format; the text format shows the request id in brackets. */
export interface LogFields {
  rid?: string;
  hook?: string;
}

type Level = "info" | "error" | "debug";

export class Log {
  /** Matches any secret in any of its logged forms; undefined when there are none. */
  private secrets: RegExp | undefined;

  constructor(
    readonly enabled: boolean,
    private out: (s: string) => void = (s) => process.stderr.write(s),
    private readonly format: LogFormat = "text",
  ) {}

  /** Sends the lines from now on elsewhere (the -logfile, once it is open). */
  redirect(out: (s: string) => void): void {
    this.out = out;
  }

  /** Strings replaced by "***" wherever they would appear in a log line, in any encoding. */
  setSecrets(secrets: Iterable<string>): void {
    // Longest first, so a secret containing another is hidden whole.
    const list = [...new Set(secrets)].filter((s) => s.length >= 2).sort((a, b) => b.length - a.length);
    this.secrets = list.length === 0 ? undefined : new RegExp(list.map(anyForm).join("|"), "g");
  }

  redact(text: string): string {
    return this.secrets ? text.replace(this.secrets, "***") : text;
  }

  /** log.Print: prefix, message, and a newline unless the message ends with one. */
  print(message: string, fields?: LogFields): void {
    if (!this.enabled) return;
    this.write("info", message, fields);
  }

  /** print() at level "debug" in JSON logs: detail for whoever debugs a hook. */
  debug(message: string, fields?: LogFields): void {
    if (!this.enabled) return;
    this.write("debug", message, fields);
  }

  /** Writes even when not verbose (start-up errors the user must see). */
  always(message: string, fields?: LogFields): void {
    this.write("error", message, fields);
  }

  /** Raw text without the prefix (the -debug request dumps). */
  raw(text: string, fields?: LogFields): void {
    if (!this.enabled) return;
    if (this.format === "json") this.out(jsonLine("debug", this.redact(text).replace(/\n$/, ""), fields));
    else this.out(this.redact(text));
  }

  private write(level: Level, message: string, fields?: LogFields): void {
    const text = this.redact(message);
    if (this.format === "json") this.out(jsonLine(level, text.replace(/\n$/, ""), fields));
    else this.out(prefix() + text + (text.endsWith("\n") ? "" : "\n"));
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
}

/** A hex digit in either case, for a regular expression. */
function hexDigit(n: number): string {
  const d = n.toString(16);
  return /[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d;
}

function hex(n: number, width: number): string {
  let out = "";
  for (let i = width - 1; i >= 0; i--) out += hexDigit((n >> (4 * i)) & 15);
  return out;
}

// The short escapes of JSON and Go's %q.
const SHORT_ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\x07": "a", "\v": "v" };

/**
 * A regular expression source matching `secret` in every form a log line may hold it, each
 * character in any of its forms: as is, percent-encoded (either case of hex; "+" for a space),
 * and escaped as JSON and Go's %q do (\", \\, \/, \n, \u00XX, \xXX, \U000XXXXX).
 */
function anyForm(secret: string): string {
  let out = "";
  for (const ch of secret) {
    const cp = ch.codePointAt(0)!;
    const bytes = [...Buffer.from(ch, "utf8")];
    const forms = [escapeRegExp(ch), bytes.map((b) => `%${hex(b, 2)}`).join(""), bytes.map((b) => `\\\\x${hex(b, 2)}`).join("")];
    if (ch === " ") forms.push("\\+");
    const short = SHORT_ESCAPES[ch];
    if (short !== undefined) forms.push(`\\\\${escapeRegExp(short)}`);
    if (cp <= 0xffff) forms.push(`\\\\u${hex(cp, 4)}`);
    else {
      const hi = 0xd800 + ((cp - 0x10000) >> 10);
      const lo = 0xdc00 + ((cp - 0x10000) & 0x3ff);
      forms.push(`\\\\u${hex(hi, 4)}\\\\u${hex(lo, 4)}`);
    }
    forms.push(`\\\\U${hex(cp, 8)}`);
    out += `(?:${forms.join("|")})`;
  }
  return out;
}

/** One JSON log line. A message that starts with "[rid] " gives the request id when none is passed. */
function jsonLine(level: Level, message: string, fields: LogFields = {}): string {
  let rid = fields.rid;
  let event = message;
  const m = /^\[([^\]\s]*)\] /.exec(message);
  if (m) {
    rid ??= m[1];
    event = message.slice(m[0].length);
  }
  const line: Record<string, string> = { time: new Date().toISOString(), level };
  if (rid !== undefined) line["request_id"] = rid;
  if (fields.hook !== undefined) line["hook_id"] = fields.hook;
  line["event"] = event;
  return JSON.stringify(line) + "\n";
}

export function prefix(now = new Date()): string {
  const p = (n: number): string => String(n).padStart(2, "0");
  return `[webhook] ${now.getFullYear()}/${p(now.getMonth() + 1)}/${p(now.getDate())} ${p(now.getHours())}:${p(now.getMinutes())}:${p(now.getSeconds())} `;
}
