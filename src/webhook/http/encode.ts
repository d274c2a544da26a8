// Writing HTTP/1.1 answers: pure functions from an HttpResponse (and what the request asked for)
// to the bytes on the wire. Like Go, a header with an invalid name is left out and CR/LF in a
// value become spaces; the transport alone frames the message.
import type { HttpResponse } from "./contract.js";
import { TOKEN } from "./head.js";
import { STATUS_TEXT } from "./status.js";

/** What the answer's framing depends on: the request's version and method, and whether the connection stays open. */
export interface Exchange {
  http10: boolean;
  isHead: boolean;
  keepAlive: boolean;
}

let dateLine = "";
let dateSecond = 0;
/** The Date header line, formatted once a second. */
export function date(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateLine = `Date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

// These headers from the application would desynchronise the framing.
const FRAMING = new Set(["content-length", "transfer-encoding", "connection"]);

function encodeHeaders(headers: [string, string][], noBody: boolean): string {
  let out = "";
  for (const [name, value] of headers) {
    if (!TOKEN.test(name) || (noBody && name === "Content-Type") || FRAMING.has(name.toLowerCase())) continue;
    out += `${name}: ${value.includes("\r") || value.includes("\n") ? value.replace(/[\r\n]/g, " ") : value}\r\n`;
  }
  return out;
}

/**
 * The status line and headers, in the request's HTTP version, `framing` (Content-Length or
 * Transfer-Encoding, and Connection lines) and `dateLine` last. A 1xx answer the application asked
 * for goes first, with the headers set so far (Go's WriteHeader of a 1xx code), then the final answer.
 */
export function encodeHead(res: HttpResponse, framing: string, noBody: boolean, version: string, dateLine: string): string {
  let head = "";
  if (res.informational) {
    const { status, headers } = res.informational;
    const sorted = [...headers].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    head += `${version} ${status} ${STATUS_TEXT[status] ?? `status code ${status}`}\r\n${encodeHeaders(sorted, true)}\r\n`;
  }
  head += `${version} ${res.status} ${STATUS_TEXT[res.status] ?? `status code ${res.status}`}\r\n`;
  return head + encodeHeaders(res.headers, noBody) + dateLine + framing + "\r\n";
}

/** Statuses that carry no body. */
export function noBody(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}

export function versionOf(x: Exchange): string {
  return x.http10 ? "HTTP/1.0" : "HTTP/1.1";
}

/** Go names the connection's fate only where the version's default does not say it. */
export function connectionHeader(x: Exchange): string {
  if (x.http10) return x.keepAlive ? "Connection: keep-alive\r\n" : "";
  return x.keepAlive ? "" : "Connection: close\r\n";
}

/** One buffer holding an answer whose body is whole (a string or bytes): the head and, unless HEAD, the body. */
export function encodeResponse(res: HttpResponse, x: Exchange, dateLine: string): Buffer {
  const body = res.body as string | Buffer;
  const bodiless = noBody(res.status);
  const size = bodiless ? 0 : typeof body === "string" ? Buffer.byteLength(body) : body.length;
  // Go cannot know the length of a HEAD answer the handler wrote nothing for, so it sends none.
  const length = bodiless || (x.isHead && size === 0) ? "" : `Content-Length: ${size}\r\n`;
  const head = encodeHead(res, length + connectionHeader(x), bodiless, versionOf(x), dateLine);
  if (x.isHead || bodiless || size === 0) return Buffer.from(head, "utf8");
  const headLen = Buffer.byteLength(head);
  const out = Buffer.allocUnsafe(headLen + size);
  out.write(head, 0, "utf8");
  if (typeof body === "string") out.write(body, headLen, "utf8");
  else body.copy(out, headLen);
  return out;
}

/** The head of an answer whose body is streamed: chunked on HTTP/1.1, raw until close on HTTP/1.0. */
export function encodeStreamHead(res: HttpResponse, x: Exchange, dateLine: string): string {
  const chunked = !x.http10 && !x.isHead && !noBody(res.status);
  return encodeHead(res, (chunked ? "Transfer-Encoding: chunked\r\n" : "") + connectionHeader(x), noBody(res.status), versionOf(x), dateLine);
}

/** The answers to the request target "*": Go's server answers OPTIONS itself, the router redirects the rest. */
export function starResponse(method: string): HttpResponse {
  return method === "OPTIONS" ? { status: 200, headers: [], body: "" } : { status: 301, headers: [["Location", "/%2A"]], body: "" };
}

/** The reasons Go's server names in its status line and body ("400 Bad Request: missing required Host header"). */
const GO_NAMED = new Set(["missing required Host header", "invalid header name", "invalid header value", "unsupported protocol version"]);
/** The reasons Go's server answers with a bare "400 Bad Request". */
const GO_BARE = new Set([
  "malformed HTTP request",
  "malformed HTTP version",
  "malformed MIME header line",
  "invalid Content-Length",
  "too many transfer encodings",
  "too many Host headers",
]);
const GO_ERROR_HEADERS = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n";

/**
 * The exact bytes Go's server writes for a request it cannot read, before any handler (no Date, no length: the
 * connection closes); undefined for refusals of our own (408, 413, our framing rules), which get plain().
 */
export function goRefusal(status: number, detail: string): string | undefined {
  const line = `${status} ${STATUS_TEXT[status]}`;
  if (status === 431) return `HTTP/1.1 ${line}${GO_ERROR_HEADERS}${line}`;
  if (status === 501 && detail === "unsupported transfer encoding") return `HTTP/1.1 ${line}${GO_ERROR_HEADERS}Unsupported transfer encoding`;
  if (GO_NAMED.has(detail)) return `HTTP/1.1 ${line}: ${detail}${GO_ERROR_HEADERS}${line}: ${detail}`;
  if (status === 400 && GO_BARE.has(detail)) return `HTTP/1.1 ${line}${GO_ERROR_HEADERS}${line}`;
  return undefined;
}

/** A plain-text answer for a request the transport refuses itself. */
export function plain(status: number, detail = ""): HttpResponse {
  return {
    status,
    headers: [["Content-Type", "text/plain; charset=utf-8"]],
    body: `${status} ${STATUS_TEXT[status] ?? ""}${detail ? `: ${detail}` : ""}`,
  };
}
