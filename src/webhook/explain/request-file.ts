// A saved HTTP request, as -test-request reads it and -record-requests writes it. Two forms:
//   raw   the request as sent: request line, headers, empty line, body (what a reverse proxy's dump
//         or `nc -l` shows); lines may end in CRLF or LF; the body is Content-Length bytes, chunked,
//         or everything after the empty line
//   JSON  {"method", "url", "headers": {name: value or [values]}, "body"} (or "bodyBase64" for bytes
//         that are not text), and "remoteAddr" ("ip:port") for ip-whitelist rules
//   trace what `curl --trace FILE` writes: the bytes of its "=> Send header" and "=> Send data" parts,
//         in hex, are the raw request
// Pure: bytes in, a request or the problem out. The head is read by the transport's own parser
// (http/head.ts), so a saved request means what it would mean on the wire.
import { isUtf8 } from "node:buffer";
import { afterHead, chunkSize, headEnd, parseHead, Refused, target, TOKEN } from "../http/head.js";
import type { RequestHead } from "../http/contract.js";
import { canonicalHeaderKey } from "../go/header.js";

/** The remote address of a request whose file does not say (the raw form cannot). */
export const DEFAULT_REMOTE_ADDR = "127.0.0.1:0";
/** More header lines than this is not a request anyone saved. */
const MAX_HEADERS = 1000;

export interface SavedRequest extends RequestHead {
  body: Buffer;
}

/** What is wrong with the bytes, in a few words. */
export interface Problem {
  problem: string;
}

/** The request saved in `bytes`, or what is wrong with them. */
export function parseSavedRequest(bytes: Buffer): SavedRequest | Problem {
  const start = bytes.findIndex((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
  if (start === -1) return { problem: "the file is empty" };
  if (bytes[start] === 0x7b) return parseJsonForm(bytes);
  const rest = bytes.subarray(start);
  return /^(== Info:|=> Send )/.test(rest.subarray(0, 16).toString("latin1")) ? parseCurlTrace(rest) : parseRawForm(rest);
}

/** One hex line of a curl trace: "0010: 6f 79 20 … (16 bytes, padded to 48 columns) oy HTTP…". */
const TRACE_LINE = /^[0-9a-f]{4,}: (.*)$/;

/** The request curl sent, from its --trace output (the hex dump of what it sent; what it received is left out). */
function parseCurlTrace(bytes: Buffer): SavedRequest | Problem {
  const sent: number[] = [];
  let sending = false;
  for (const line of bytes.toString("latin1").split("\n")) {
    if (/^(=>|<=|==) /.test(line)) {
      sending = line.startsWith("=> Send header") || line.startsWith("=> Send data");
      continue;
    }
    const m = TRACE_LINE.exec(line.replace(/\r$/, ""));
    if (!sending || !m) continue;
    for (const pair of m[1]!.slice(0, 48).split(" ")) {
      if (pair === "") continue;
      if (!/^[0-9a-f]{2}$/.test(pair)) return { problem: `a line of the curl trace is not hex bytes: ${JSON.stringify(line.slice(0, 60))}` };
      sent.push(parseInt(pair, 16));
    }
  }
  if (sent.length === 0) return { problem: "the curl trace holds no sent request (=> Send header)" };
  return parseRawForm(Buffer.from(sent));
}

function parseRawForm(bytes: Buffer): SavedRequest | Problem {
  let end = headEnd(bytes, 0);
  const bodyAt = end === -1 ? bytes.length : afterHead(bytes, end);
  if (end === -1) end = bytes.length;
  let headText = bytes
    .subarray(0, end)
    .toString("latin1")
    .replace(/\r?\n$/, "");
  let head = parseHead(headText, MAX_HEADERS);
  // A request written by hand often lacks Host, which only a connection needs.
  if (head instanceof Refused && head.detail === "missing required Host header") {
    headText += "\r\nHost: localhost";
    head = parseHead(headText, MAX_HEADERS);
  }
  if (head instanceof Refused) return { problem: `${head.detail} (status ${head.status} on the wire)` };
  if (!target(head.target).startsWith("/")) return { problem: "the request target is not a path such as /hooks/deploy" };
  const rest = bytes.subarray(Math.min(bodyAt, bytes.length));
  let body: Buffer | Problem;
  if (head.contentLength !== undefined) {
    body =
      head.contentLength <= rest.length
        ? rest.subarray(0, head.contentLength)
        : { problem: `the body has ${rest.length} bytes, Content-Length says ${head.contentLength}` };
  } else if (head.chunked) {
    body = dechunk(rest);
  } else {
    body = rest;
  }
  if (!Buffer.isBuffer(body)) return body;
  return { method: head.method, url: target(head.target), rawHeaders: head.rawHeaders, remoteAddr: DEFAULT_REMOTE_ADDR, body: Buffer.from(body) };
}

/** A chunked body's data; its lines may end in LF alone (a file edited by hand). */
function dechunk(b: Buffer): Buffer | Problem {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lf = b.indexOf(0x0a, at);
    if (lf === -1) return { problem: "the chunked body ends before its last chunk" };
    const size = chunkSize(b.subarray(at, lf).toString("latin1").replace(/\r$/, ""));
    if (size === undefined) return { problem: "a chunk size line is not hexadecimal" };
    at = lf + 1;
    if (size === 0) return Buffer.concat(parts);
    if (at + size > b.length) return { problem: "a chunk is shorter than its size" };
    parts.push(b.subarray(at, at + size));
    at += size;
    if (b[at] === 0x0d) at++;
    if (b[at] !== 0x0a) return { problem: "a chunk does not end with a line break" };
    at++;
  }
}

function parseJsonForm(bytes: Buffer): SavedRequest | Problem {
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString("utf8"));
  } catch (e) {
    return { problem: `invalid JSON (${(e as Error).message})` };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { problem: "the JSON is not an object" };
  const o = v as Record<string, unknown>;
  const method = o["method"] ?? "POST";
  const url = o["url"];
  const remoteAddr = o["remoteAddr"] ?? DEFAULT_REMOTE_ADDR;
  if (typeof method !== "string" || !TOKEN.test(method)) return { problem: '"method" must be an HTTP method such as "POST"' };
  if (typeof url !== "string" || url === "" || /[\x00-\x20\x7f]/.test(url))
    return { problem: '"url" must be the path and query, such as "/hooks/deploy?token=x"' };
  if (!target(url).startsWith("/")) return { problem: '"url" must start with / (the path and query)' };
  if (typeof remoteAddr !== "string") return { problem: '"remoteAddr" must be "ip:port"' };
  const rawHeaders: string[] = [];
  const headers = o["headers"] ?? {};
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return { problem: '"headers" must be an object of names and values' };
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) return { problem: `header name ${JSON.stringify(name.slice(0, 60))} is not a token` };
    const values = Array.isArray(value) ? value : [value];
    for (const x of values) {
      if (typeof x !== "string" || /[\x00-\x08\x0a-\x1f\x7f]/.test(x))
        return { problem: `header ${name} must be a string (or a list of them) without control characters` };
      rawHeaders.push(name, x);
    }
    if (rawHeaders.length > 2 * MAX_HEADERS) return { problem: `more than ${MAX_HEADERS} headers` };
  }
  const text = o["body"];
  const b64 = o["bodyBase64"];
  if (text !== undefined && typeof text !== "string") return { problem: '"body" must be a string (use "bodyBase64" for bytes)' };
  if (b64 !== undefined && (typeof b64 !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64))) return { problem: '"bodyBase64" must be base64' };
  const body = b64 !== undefined ? Buffer.from(b64 as string, "base64") : Buffer.from(text ?? "", "utf8");
  return { method, url: target(url), rawHeaders, remoteAddr, body };
}

/** The JSON form of a request, as -record-requests writes it: what parseSavedRequest reads back unchanged. */
export function jsonForm(head: RequestHead, body: Buffer): string {
  // One value as a string, a repeated header as the list of its values, in the order sent: what
  // hooks read (the first value of each name, whatever its case) stays.
  const headers = Object.create(null) as Record<string, string | string[]>;
  for (let i = 0; i < head.rawHeaders.length; i += 2) {
    const [name, value] = [canonicalHeaderKey(head.rawHeaders[i]!), head.rawHeaders[i + 1]!];
    const before = headers[name];
    headers[name] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
  }
  const shown: Record<string, unknown> = { method: head.method, url: head.url, remoteAddr: head.remoteAddr, headers };
  // Text as text, unless JSON's escapes would make it over twice as long (control characters take 6
  // bytes each): base64 then, so a recording stays near the size of the request.
  const text = isUtf8(body) ? JSON.stringify(body.toString("utf8")) : undefined;
  if (text !== undefined && text.length <= 2 * body.length + 2) shown["body"] = body.toString("utf8");
  else shown["bodyBase64"] = body.toString("base64");
  return JSON.stringify(shown, null, 2) + "\n";
}
