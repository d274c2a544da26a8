// Reading an HTTP/1.1 request head and chunked framing lines: pure functions over bytes and text,
// no sockets. Strict where requests could be smuggled past a proxy: Transfer-Encoding together
// with Content-Length, differing Content-Lengths, a Transfer-Encoding other than "chunked", bare
// CR, control bytes and non-token header names are all refused. Obsolete line folding is joined
// with one space, as Go does. The head may end its lines with a bare LF, as Go accepts; chunked
// framing needs CRLF.

export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Bytes a header value may not hold: controls other than HTAB, and DEL (RFC 9110 5.5).
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
// A request target: visible bytes only.
const BAD_TARGET = /[\x00-\x20\x7f]/;
const CHUNK_SIZE = /^[0-9a-fA-F]{1,15}$/;

/** Why a request was refused: the status to answer and Go's reason (which picks the exact answer). */
export class Refused {
  constructor(
    readonly status: number,
    readonly detail: string,
    /** Whether the request is HTTP/1.0, once its request line was read (an answer of ours goes out in its version). */
    readonly http10?: boolean,
  ) {}
}

/** A request head as read: the request line, the headers as sent, and what framing and keep-alive need. */
export interface ParsedHead {
  method: string;
  /** The request target as sent ("*", "/path?q", "http://host/path"). */
  target: string;
  http10: boolean;
  /** Node's flat [name, value, …] list, names as sent, values without surrounding spaces and tabs. */
  rawHeaders: string[];
  /** Content-Length; undefined when absent. */
  contentLength: number | undefined;
  /** Transfer-Encoding: chunked. */
  chunked: boolean;
  /** Whether the client asks to keep the connection (the version's default, or its Connection header). */
  keepAlive: boolean;
  /** Expect: 100-continue on HTTP/1.1. */
  expectContinue: boolean;
}

/**
 * Where the head in `buf` ends: the offset of the line break before the empty line ("\r\n\r\n",
 * or with bare LFs), or -1 while it is incomplete. The search starts at `from` (the head arrives in
 * pieces: resume at `resumeAt(buf)` of the last incomplete piece).
 */
export function headEnd(buf: Buffer, from: number): number {
  let i = buf.indexOf(0x0a, from);
  while (i !== -1) {
    const next = buf[i + 1];
    if (next === 0x0a || (next === 0x0d && buf[i + 2] === 0x0a)) return buf[i - 1] === 0x0d ? i - 1 : i;
    if (next === undefined || (next === 0x0d && i + 2 >= buf.length)) break;
    i = buf.indexOf(0x0a, i + 1);
  }
  return -1;
}

/** Where the search for the head's end resumes once more of an incomplete head has arrived. */
export function resumeAt(buf: Buffer): number {
  return Math.max(0, buf.length - 3);
}

/** The offset after the empty line that ends the head found at `end` (what headEnd returned): where the body starts. */
export function afterHead(buf: Buffer, end: number): number {
  const lf = buf[end] === 0x0d ? end + 1 : end;
  return buf[lf + 1] === 0x0a ? lf + 2 : lf + 3;
}

/** The path and query of the request target, also for the absolute form "http://host/path". */
export function target(url: string): string {
  if (url.startsWith("/")) return url;
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?]*(.*)$/.exec(url);
  return m ? m[1] || "/" : url;
}

/** Strips leading and trailing spaces and tabs only (String.trim would also eat a UTF-8 byte 0xA0). */
function trimSpaceTab(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

const withoutCR = (line: string): string => (line.endsWith("\r") ? line.slice(0, -1) : line);

/**
 * Obsolete line folding: a line starting with a space or tab continues the header line before
 * it, joined with one space. One pass, so a head of many folded lines costs linear time.
 */
function unfold(lines: string[]): string[] {
  const out: string[] = [];
  let pieces: string[] | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const c = line.charCodeAt(0);
    if (i >= 2 && (c === 0x20 || c === 0x09)) {
      pieces ??= [trimSpaceTab(withoutCR(out.pop()!))];
      pieces.push(" ", trimSpaceTab(withoutCR(line)));
      continue;
    }
    if (pieces) out.push(pieces.join(""));
    pieces = undefined;
    out.push(line);
  }
  if (pieces) out.push(pieces.join(""));
  return out;
}

/** Parses a request head (its bytes as latin1, without the empty line that ends it); a Refused when it must be answered with an error. */
export function parseHead(text: string, maxHeaderCount: number): ParsedHead | Refused {
  const lines = unfold(text.split("\n"));
  let requestLine = lines[0]!;
  if (requestLine.endsWith("\r")) requestLine = requestLine.slice(0, -1);
  const sp1 = requestLine.indexOf(" ");
  const sp2 = requestLine.lastIndexOf(" ");
  if (sp1 <= 0 || sp2 === sp1) return new Refused(400, "malformed HTTP request");
  const method = requestLine.slice(0, sp1);
  const url = requestLine.slice(sp1 + 1, sp2);
  const version = requestLine.slice(sp2 + 1);
  if (!TOKEN.test(method) || url === "" || BAD_TARGET.test(url)) return new Refused(400, "malformed HTTP request");
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return /^HTTP\/\d\.\d$/.test(version) ? new Refused(505, "unsupported protocol version") : new Refused(400, "malformed HTTP version");
  }
  const http10 = version === "HTTP/1.0";
  if (lines.length - 1 > maxHeaderCount) return new Refused(431, "too many header fields", http10);
  const rawHeaders: string[] = [];
  let host = 0;
  let te: string | undefined;
  let cl: string | undefined;
  let connection = "";
  let expect = "";
  for (let i = 1; i < lines.length; i++) {
    let line = lines[i]!;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    const colon = line.indexOf(":");
    if (colon <= 0) return new Refused(400, "malformed MIME header line", http10);
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return new Refused(400, "invalid header name", http10);
    const raw = line.slice(colon + 1);
    if (BAD_VALUE.test(raw)) return new Refused(400, "invalid header value", http10);
    const value = trimSpaceTab(raw);
    rawHeaders.push(name, value);
    switch (name.length) {
      case 4:
        if (name.toLowerCase() === "host") host++;
        break;
      case 6:
        if (name.toLowerCase() === "expect") expect = value.toLowerCase();
        break;
      case 10:
        if (name.toLowerCase() === "connection") connection += "," + value.toLowerCase();
        break;
      case 14:
        if (name.toLowerCase() === "content-length") {
          if (!/^\d{1,15}$/.test(value) || (cl !== undefined && cl !== value)) return new Refused(400, "invalid Content-Length", http10);
          cl = value;
        }
        break;
      case 17:
        if (name.toLowerCase() === "transfer-encoding") {
          if (te !== undefined) return new Refused(400, "too many transfer encodings", http10);
          te = value.toLowerCase();
        }
        break;
    }
  }
  if (!http10 && host !== 1) return new Refused(400, host === 0 ? "missing required Host header" : "too many Host headers", http10);
  // Both framings at once is how requests are smuggled past proxies (RFC 9112 6.3).
  if (te !== undefined && cl !== undefined) return new Refused(400, "Transfer-Encoding and Content-Length together", http10);
  if (te !== undefined && te !== "chunked") return new Refused(501, "unsupported transfer encoding", http10);
  const tokens = connection.split(",").map((s) => s.trim());
  return {
    method,
    target: url,
    http10,
    rawHeaders,
    contentLength: cl === undefined ? undefined : Number(cl),
    chunked: te !== undefined,
    keepAlive: http10 ? tokens.includes("keep-alive") : !tokens.includes("close"),
    expectContinue: expect === "100-continue" && !http10,
  };
}

/** A chunk-size line (without its CRLF): the size, or undefined when it is malformed. Extensions after ";" are ignored. */
export function chunkSize(line: string): number | undefined {
  const semi = line.indexOf(";");
  const sizeText = (semi === -1 ? line : line.slice(0, semi)).trimEnd();
  if (!CHUNK_SIZE.test(sizeText) || line.includes("\r") || line.includes("\n")) return undefined;
  return parseInt(sizeText, 16);
}

/** Whether a trailer line (without its CRLF) holds bytes no header line may hold. */
export function badTrailer(line: string): boolean {
  return BAD_VALUE.test(line) || line.indexOf("\r") !== -1;
}
