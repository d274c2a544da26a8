// multipart/form-data as Go's net/http reads it (Request.ParseMultipartForm over mime/multipart
// and mime.ParseMediaType), over a body that is already in memory: the first boundary line may
// end in a bare LF (then every line does), text before it is skipped, a part ends at the next
// "--boundary" that follows a line break and is itself followed by whitespace, "-" or the end,
// quoted-printable parts are decoded, and the limits and error texts are Go's.

import { WebhookError } from "../errors.js";

/** A body Go refuses; `message` is Go's error text. */
export class MultipartError extends WebhookError {
  override readonly name = "MultipartError";
  constructor(problem: string) {
    super("WEBHOOK_MULTIPART", { problem });
  }
}

export interface FormFile {
  /** Part headers under canonical names, every value kept (Go's textproto.MIMEHeader). */
  header: Map<string, string[]>;
  content: Buffer;
}

export interface Form {
  /** Field values by name, in order (part without a filename). */
  values: Map<string, Buffer[]>;
  files: Map<string, FormFile[]>;
}

const TSPECIALS = new Set('()<>@,;:\\"/[]?='.split(""));

function isTokenChar(c: string): boolean {
  const code = c.charCodeAt(0);
  return code > 0x20 && code < 0x7f && !TSPECIALS.has(c);
}

function consumeToken(v: string): [string, string] {
  let i = 0;
  while (i < v.length && isTokenChar(v[i]!)) i++;
  return [v.slice(0, i), v.slice(i)];
}

function trimLeftSpace(v: string): string {
  return v.replace(/^[\t\n\v\f\r ]+/, "");
}

function consumeValue(v: string): [string, string] {
  if (v === "") return ["", ""];
  if (v[0] !== '"') return consumeToken(v);
  // Slices joined once: a character at a time, a long quoted value costs hundreds of MB.
  const pieces: string[] = [];
  let from = 1;
  for (let i = 1; i < v.length; i++) {
    const c = v[i]!;
    if (c === '"') {
      pieces.push(v.slice(from, i));
      return [pieces.join(""), v.slice(i + 1)];
    }
    if (c === "\\" && i + 1 < v.length && TSPECIALS.has(v[i + 1]!)) {
      pieces.push(v.slice(from, i));
      from = ++i;
      continue;
    }
    if (c === "\r" || c === "\n") return ["", v];
  }
  return ["", v];
}

function consumeMediaParam(v: string): [string, string, string] {
  let rest = trimLeftSpace(v);
  if (!rest.startsWith(";")) return ["", "", v];
  rest = trimLeftSpace(rest.slice(1));
  let param: string;
  [param, rest] = consumeToken(rest);
  param = param.toLowerCase();
  if (param === "") return ["", "", v];
  rest = trimLeftSpace(rest);
  if (!rest.startsWith("=")) return ["", "", v];
  rest = trimLeftSpace(rest.slice(1));
  const [value, rest2] = consumeValue(rest);
  if (value === "" && rest2 === rest) return ["", "", v];
  return [param, value, rest2];
}

function percentHexUnescape(s: string): string | undefined {
  if (/%(?![0-9a-fA-F]{2})/.test(s)) return undefined;
  return Buffer.from(
    s.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
    "latin1",
  ).toString("latin1");
}

function decode2231(v: string): string | undefined {
  const parts = v.split("'");
  if (parts.length < 3) return undefined;
  const charset = parts[0]!.toLowerCase();
  if (charset !== "us-ascii" && charset !== "utf-8") return undefined;
  return percentHexUnescape(parts.slice(2).join("'"));
}

/**
 * Go's mime.ParseMediaType over a string of bytes (one char per byte): the lower-cased type and
 * its parameters, RFC 2231 continuations joined; throws Go's error text.
 */
function parseMediaType(v: string): { type: string; params: Map<string, string> } {
  const semi = v.indexOf(";");
  const base = semi === -1 ? v : v.slice(0, semi);
  const type = base.toLowerCase().trim();
  const [typ, afterType] = consumeToken(type);
  if (typ === "") throw new MultipartError("mime: no media type");
  if (afterType !== "") {
    if (!afterType.startsWith("/")) throw new MultipartError("mime: expected slash after first token");
    const [sub, afterSub] = consumeToken(afterType.slice(1));
    if (sub === "") throw new MultipartError("mime: expected token after slash");
    if (afterSub !== "") throw new MultipartError("mime: unexpected content after media subtype");
  }
  const params = new Map<string, string>();
  const continuation = new Map<string, Map<string, string>>();
  let rest = v.slice(base.length);
  while (rest.length > 0) {
    rest = trimLeftSpace(rest);
    if (rest === "") break;
    const [key, value, next] = consumeMediaParam(rest);
    if (key === "") {
      if (next.trim() === ";") break;
      throw new MultipartError("mime: invalid media parameter");
    }
    let pmap = params;
    const star = key.indexOf("*");
    if (star !== -1) {
      const baseName = key.slice(0, star);
      pmap = continuation.get(baseName) ?? new Map<string, string>();
      continuation.set(baseName, pmap);
    }
    if (pmap.has(key)) throw new MultipartError("mime: duplicate parameter name");
    pmap.set(key, value);
    rest = next;
  }
  for (const [key, pieces] of continuation) {
    const single = pieces.get(key + "*");
    if (single !== undefined) {
      const dec = decode2231(single);
      if (dec !== undefined) params.set(key, dec);
      continue;
    }
    let buf = "";
    let valid = false;
    for (let n = 0; ; n++) {
      const simple = pieces.get(`${key}*${n}`);
      if (simple !== undefined) {
        valid = true;
        buf += simple;
        continue;
      }
      const encoded = pieces.get(`${key}*${n}*`);
      if (encoded === undefined) break;
      valid = true;
      buf += (n === 0 ? decode2231(encoded) : percentHexUnescape(encoded)) ?? "";
    }
    if (valid) params.set(key, buf);
  }
  return { type, params };
}

// Go's limits (mime/multipart, net/textproto).
const PEEK_BUFFER = 4096;
const MAX_PARTS = 1000;
const MAX_HEADERS = 10000;
const MAP_ENTRY_OVERHEAD = 200;
const FILE_HEADER_SIZE = 100;

const tooLarge = (): MultipartError => new MultipartError("multipart: message too large");

const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]*$/;

/** Go's textproto.CanonicalMIMEHeaderKey over a byte string; unchanged when it holds a non-token byte. */
function canonicalKey(k: string): string {
  if (!HEADER_TOKEN.test(k)) return k;
  let upper = true;
  let out = "";
  for (const c of k) {
    out += upper ? c.toUpperCase() : c.toLowerCase();
    upper = c === "-";
  }
  return out;
}

/**
 * Strips the characters `strip` holds from both ends. A loop, not a regular expression: /[…]+$/
 * backtracks over every run of them, quadratic in a header an attacker sends.
 */
export function trimChars(s: string, strip: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && strip.includes(s[a]!)) a++;
  while (b > a && strip.includes(s[b - 1]!)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

function trimSpace(s: string): string {
  return trimChars(s, " \t\r\n");
}

/** Go's quotedprintable.Reader over a whole part body; decodes in place of a copy, never larger. */
function decodeQuotedPrintable(body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(body.length);
  let o = 0;
  let pos = 0;
  while (pos < body.length) {
    const lf = body.indexOf(0x0a, pos);
    const end = lf === -1 ? body.length : lf + 1;
    const start = pos;
    const atEof = end === body.length;
    pos = end;
    let n = end - start;
    while (n > 0 && (body[start + n - 1] === 0x0a || body[start + n - 1] === 0x0d || body[start + n - 1] === 0x20 || body[start + n - 1] === 0x09)) n--;
    const hasLF = body[end - 1] === 0x0a;
    const hasCR = hasLF && end - 2 >= start && body[end - 2] === 0x0d;
    // The line is body[start, start + n) followed by `tail`.
    let tail: number[] = [];
    let lineError: string | undefined;
    if (n > 0 && body[start + n - 1] === 0x3d) {
      const stripped = body.subarray(start + n, end);
      n--;
      const okEnd = stripped[0] === 0x0a || (stripped[0] === 0x0d && stripped[1] === 0x0a) || (stripped.length === 0 && n > 0 && atEof);
      if (!okEnd) lineError = `quotedprintable: invalid bytes after =: ${goQuoteBytes(stripped)}`;
    } else if (hasLF) tail = hasCR ? [0x0d, 0x0a] : [0x0a];
    const len = n + tail.length;
    const at = (k: number): number | undefined => (k < n ? body[start + k] : tail[k - n]);
    for (let i = 0; i < len; i++) {
      let b = at(i)!;
      if (b === 0x3d) {
        const hex = hexByte(at(i + 1), at(i + 2));
        if (hex === undefined) {
          if (len - i >= 2 && at(i + 1) !== 0x0d && at(i + 1) !== 0x0a) b = 0x3d;
          else if (len - i < 3) throw new MultipartError("unexpected EOF");
          else
            throw new MultipartError(
              `quotedprintable: invalid hex byte 0x${at(i + 1)!
                .toString(16)
                .padStart(2, "0")}`,
            );
        } else {
          b = hex;
          i += 2;
        }
      } else if (b !== 0x09 && b !== 0x0d && b !== 0x0a && b < 0x80 && (b < 0x20 || b > 0x7e)) {
        throw new MultipartError(`quotedprintable: invalid unescaped byte 0x${b.toString(16).padStart(2, "0")} in body`);
      }
      out[o++] = b;
    }
    if (lineError) throw new MultipartError(lineError);
  }
  return out.subarray(0, o);
}

function hexDigit(b: number | undefined): number | undefined {
  if (b === undefined) return undefined;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x41 + 10;
  if (b >= 0x61 && b <= 0x66) return b - 0x61 + 10;
  return undefined;
}

function hexByte(a: number | undefined, b: number | undefined): number | undefined {
  const h = hexDigit(a);
  const l = hexDigit(b);
  return h === undefined || l === undefined ? undefined : (h << 4) | l;
}

/** Go's %q of bytes (ASCII printable kept, the rest escaped). */
function goQuoteBytes(b: Buffer): string {
  let out = '"';
  for (const c of b) {
    if (c === 0x22 || c === 0x5c) out += "\\" + String.fromCharCode(c);
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c);
    else out += "\\x" + c.toString(16).padStart(2, "0");
  }
  return out + '"';
}

/** Reads a body the way mime/multipart's Reader.ReadForm does. */
class Reader {
  private pos = 0;
  private partsRead = 0;
  private nl: Buffer;
  private nlDashBoundary: Buffer;
  private readonly dashBoundary: Buffer;
  private readonly dashBoundaryDash: Buffer;

  constructor(
    private readonly body: Buffer,
    boundary: string,
  ) {
    const b = Buffer.from(`\r\n--${boundary}--`, "latin1");
    this.nl = b.subarray(0, 2);
    this.nlDashBoundary = b.subarray(0, b.length - 2);
    this.dashBoundaryDash = b.subarray(2);
    this.dashBoundary = b.subarray(2, b.length - 2);
  }

  /** One line including its "\n"; `eof` when the body ended before a "\n". */
  private readLine(): { line: Buffer; eof: boolean } {
    const lf = this.body.indexOf(0x0a, this.pos);
    const end = lf === -1 ? this.body.length : lf + 1;
    if (end - this.pos > PEEK_BUFFER) {
      this.pos += PEEK_BUFFER;
      throw new MultipartError("multipart: NextPart: bufio: buffer full");
    }
    const line = this.body.subarray(this.pos, end);
    this.pos = end;
    return { line, eof: lf === -1 };
  }

  private static skipLWSP(b: Buffer): Buffer {
    let i = 0;
    while (i < b.length && (b[i] === 0x20 || b[i] === 0x09)) i++;
    return b.subarray(i);
  }

  private isFinalBoundary(line: Buffer): boolean {
    if (!startsWith(line, this.dashBoundaryDash)) return false;
    const rest = Reader.skipLWSP(line.subarray(this.dashBoundaryDash.length));
    return rest.length === 0 || rest.equals(this.nl);
  }

  private isBoundaryDelimiterLine(line: Buffer): boolean {
    if (!startsWith(line, this.dashBoundary)) return false;
    const rest = Reader.skipLWSP(line.subarray(this.dashBoundary.length));
    if (this.partsRead === 0 && rest.length === 1 && rest[0] === 0x0a) {
      this.nl = this.nl.subarray(1);
      this.nlDashBoundary = this.nlDashBoundary.subarray(1);
    }
    return rest.equals(this.nl);
  }

  /** The next part's headers (the reader then stands at its body), or null at the final boundary. */
  nextPart(maxMemory: number, maxHeaders: number): Map<string, string[]> | null {
    if (this.dashBoundary.length === 2) throw new MultipartError("multipart: boundary is empty");
    let expectNewPart = false;
    for (;;) {
      const { line, eof } = this.readLine();
      if (eof && this.isFinalBoundary(line)) return null;
      if (eof) throw new MultipartError("multipart: NextPart: EOF");
      if (this.isBoundaryDelimiterLine(line)) {
        this.partsRead++;
        return this.readHeaders(maxMemory, maxHeaders);
      }
      if (this.isFinalBoundary(line)) return null;
      if (expectNewPart) throw new MultipartError(`multipart: expecting a new Part; got line ${goQuoteBytes(line)}`);
      if (this.partsRead === 0) continue;
      if (line.equals(this.nl)) {
        expectNewPart = true;
        continue;
      }
      throw new MultipartError(`multipart: unexpected line in Next(): ${goQuoteBytes(line)}`);
    }
  }

  /** Go's textproto readMIMEHeader with mime/multipart's limits. */
  private readHeaders(maxMemory: number, maxHeaders: number): Map<string, string[]> {
    const header = new Map<string, string[]>();
    let memory = maxMemory - 400;
    const readLineSlice = (): string | undefined => {
      if (this.pos >= this.body.length) return undefined;
      const lf = this.body.indexOf(0x0a, this.pos);
      const end = lf === -1 ? this.body.length : lf;
      let line = this.body.toString("latin1", this.pos, end);
      this.pos = lf === -1 ? end : end + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      return line;
    };
    const first = this.body[this.pos];
    if (first === 0x20 || first === 0x09) {
      throw new MultipartError(`malformed MIME header initial line: ${readLineSlice() ?? ""}`);
    }
    for (;;) {
      let kv = readLineSlice();
      if (kv === undefined) throw new MultipartError("EOF");
      if (kv === "") return header;
      if (!kv.includes(":")) throw new MultipartError(`malformed MIME header: missing colon: ${goQuoteBytes(Buffer.from(kv, "latin1"))}`);
      kv = trimSpace(kv);
      // Continuation lines (obsolete folding) join with one space, in one join.
      if (this.body[this.pos] === 0x20 || this.body[this.pos] === 0x09) {
        const pieces = [kv];
        while (this.body[this.pos] === 0x20 || this.body[this.pos] === 0x09) {
          while (this.body[this.pos] === 0x20 || this.body[this.pos] === 0x09) this.pos++;
          const more = readLineSlice();
          if (more === undefined) break;
          pieces.push(trimSpace(more));
        }
        kv = pieces.join(" ");
      }
      const colon = kv.indexOf(":");
      const key = canonicalKey(kv.slice(0, colon));
      if (key === "") continue;
      if (--maxHeaders < 0) throw tooLarge();
      const value = kv.slice(colon + 1).replace(/^[ \t]+/, "");
      const values = header.get(key);
      if (!values) memory -= key.length + MAP_ENTRY_OVERHEAD;
      memory -= value.length;
      if (memory < 0) throw tooLarge();
      if (values) values.push(value);
      else header.set(key, [value]);
    }
  }

  /** The raw body of the part the reader stands in; the reader then stands at its end. */
  partBody(): Buffer {
    const start = this.pos;
    const body = this.body;
    const after = (at: number): boolean => {
      if (at >= body.length) return true;
      const c = body[at];
      return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a || c === 0x2d;
    };
    if (startsWith(body.subarray(start), this.dashBoundary) && after(start + this.dashBoundary.length)) return body.subarray(start, start);
    let from = start;
    for (;;) {
      const i = body.indexOf(this.nlDashBoundary, from);
      if (i === -1) {
        this.pos = body.length;
        throw new MultipartError("unexpected EOF");
      }
      if (after(i + this.nlDashBoundary.length)) {
        this.pos = i;
        return body.subarray(start, i);
      }
      from = i + this.nlDashBoundary.length;
    }
  }
}

function startsWith(b: Buffer, prefix: Buffer): boolean {
  return b.length >= prefix.length && b.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** Go's Part.FormName and Part.FileName from the Content-Disposition header. */
function disposition(header: Map<string, string[]>): { name: string; filename: string } {
  const v = header.get("Content-Disposition")?.[0] ?? "";
  let type = "";
  let params = new Map<string, string>();
  try {
    ({ type, params } = parseMediaType(v));
  } catch {
    params = new Map();
  }
  const name = type === "form-data" ? (params.get("name") ?? "") : "";
  const raw = params.get("filename") ?? "";
  return { name, filename: raw === "" ? "" : baseName(raw) };
}

/** Go's filepath.Base on Unix. */
function baseName(p: string): string {
  let end = p.length;
  while (end > 0 && p[end - 1] === "/") end--;
  const trimmed = p.slice(0, end);
  if (trimmed === "") return "/";
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

/**
 * Go's Request.ParseMultipartForm(maxMemory) over a complete body: `contentType` is the request's
 * Content-Type header. Throws a MultipartError with Go's text for what Go refuses.
 */
export function readMultipartForm(contentType: string, body: Buffer, maxMemory: number): Form {
  if (contentType === "") throw new MultipartError("request Content-Type isn't multipart/form-data");
  let media: { type: string; params: Map<string, string> };
  try {
    media = parseMediaType(contentType);
  } catch {
    throw new MultipartError("request Content-Type isn't multipart/form-data");
  }
  if (media.type !== "multipart/form-data") throw new MultipartError("request Content-Type isn't multipart/form-data");
  const boundary = media.params.get("boundary");
  if (boundary === undefined) throw new MultipartError("no multipart boundary param in Content-Type");

  const reader = new Reader(body, boundary);
  const form: Form = { values: new Map(), files: new Map() };
  let maxFileMemory = maxMemory;
  let maxMemoryBytes = maxMemory + 10 * 1024 * 1024;
  if (maxMemoryBytes <= 0) maxMemoryBytes = maxMemory < 0 ? 0 : Number.MAX_SAFE_INTEGER;
  let maxHeaders = MAX_HEADERS;
  let maxParts = MAX_PARTS;
  for (;;) {
    const header = reader.nextPart(maxMemoryBytes, maxHeaders);
    if (header === null) return form;
    if (maxParts-- <= 0) throw tooLarge();
    const { name, filename } = disposition(header);
    const cte = header.get("Content-Transfer-Encoding")?.[0];
    const quoted = cte !== undefined && cte.toLowerCase() === "quoted-printable";
    if (quoted) header.delete("Content-Transfer-Encoding");
    const raw = reader.partBody();
    if (name === "") continue;
    const content = quoted ? decodeQuotedPrintable(raw) : raw;
    maxMemoryBytes -= name.length + MAP_ENTRY_OVERHEAD;
    if (maxMemoryBytes < 0) throw tooLarge();
    if (filename === "") {
      maxMemoryBytes -= content.length;
      if (maxMemoryBytes < 0) throw tooLarge();
      push(form.values, name, content);
      continue;
    }
    let headerSize = 400;
    for (const [k, vs] of header) {
      headerSize += k.length + MAP_ENTRY_OVERHEAD;
      for (const v of vs) headerSize += v.length;
    }
    maxMemoryBytes -= headerSize + MAP_ENTRY_OVERHEAD + FILE_HEADER_SIZE;
    if (maxMemoryBytes < 0) throw tooLarge();
    for (const vs of header.values()) maxHeaders -= vs.length;
    // Go writes a file larger than what is left of maxMemory to disk; it is here in memory already.
    if (content.length <= maxFileMemory) {
      maxFileMemory -= content.length;
      maxMemoryBytes -= content.length;
    }
    push(form.files, name, { header, content });
  }
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
