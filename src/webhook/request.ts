// Turning a raw request into the values hooks read: headers (canonical names, first value),
// the URL query (Go's url.ParseQuery rules) and the body payload (JSON, url-encoded form, XML,
// multipart), with the reference's content-type dispatch and log lines.
import { createRequire } from "node:module";
import type * as FastXmlParser from "fast-xml-parser";
import { canonicalHeaderKey } from "./values.js";
import { decodeBytes, decodeLatin1 } from "./bytes.js";
import { isObject, parseJsonBytes } from "./json.js";
import { readMultipartForm } from "./multipart.js";

// The XML parser is loaded on first use: most servers never see XML, and loading it up front
// costs start-up time and memory.
const require = createRequire(import.meta.url);
let xml: { parser: FastXmlParser.XMLParser; validator: typeof FastXmlParser.XMLValidator } | undefined;

/** Go's url.QueryUnescape over a string of bytes (one char per byte); undefined for a malformed escape. */
function queryUnescape(s: string): string | undefined {
  if (!s.includes("%") && !s.includes("+")) return decodeLatin1(s);
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x2b) bytes.push(0x20);
    else if (c === 0x25) {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(c & 0xff);
  }
  return decodeBytes(Buffer.from(bytes));
}

export interface ParsedQuery {
  values: Record<string, string>;
  error?: string;
}

/**
 * Go's url.ParseQuery over a string of bytes (the request target or a body read as latin1),
 * keeping the first value of each key. A plain object (a null-prototype one
 * is a slow dictionary, ~1.4 µs to fill); readers look keys up as own properties only.
 */
export function parseQuery(q: string): ParsedQuery {
  const values: Record<string, string> = {};
  let error: string | undefined;
  for (const pair of q.split("&")) {
    if (pair === "") continue;
    if (pair.includes(";")) {
      error ??= "invalid semicolon separator in query";
      continue;
    }
    const eq = pair.indexOf("=");
    const k = queryUnescape(eq === -1 ? pair : pair.slice(0, eq));
    const v = queryUnescape(eq === -1 ? "" : pair.slice(eq + 1));
    if (k === undefined || v === undefined) {
      error ??= `invalid URL escape ${JSON.stringify(pair)}`;
      continue;
    }
    if (Object.hasOwn(values, k)) continue;
    // "__proto__" would set the prototype instead of a key.
    if (k === "__proto__") Object.defineProperty(values, k, { value: v, enumerable: true, writable: true, configurable: true });
    else values[k] = v;
  }
  return error === undefined ? { values } : { values, error };
}

/** First value of each header under its canonical name; Host and Transfer-Encoding are not headers in Go. */
export function parseHeaders(rawHeaders: string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const k = canonicalHeaderKey(rawHeaders[i]!);
    if (k === "Host" || k === "Transfer-Encoding") continue;
    if (!(k in out)) out[k] = headerText(rawHeaders[i + 1]!);
  }
  return out;
}

/** The transport reads header bytes as latin1; Go keeps the bytes. */
export function headerText(v: string): string {
  return decodeLatin1(v);
}

/** The first value of one header, looked up case-insensitively in Node's raw header list. */
export function rawHeader(rawHeaders: string[], name: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === name.length && rawHeaders[i]!.toLowerCase() === name) return rawHeaders[i + 1];
  }
  return undefined;
}

export type Payload = Record<string, unknown> | undefined;

/** The JSON body as the reference decodes it: an object, or a top-level array under "root". */
export function parseJsonPayload(body: Buffer): Payload {
  let at = 0;
  while (at < body.length && (body[at] === 0x20 || body[at] === 0x09 || body[at] === 0x0a || body[at] === 0x0d)) at++;
  const first = at < body.length ? String.fromCharCode(body[at]!) : undefined;
  try {
    if (first === undefined) throw new Error("EOF");
    const v = parseJsonBytes(body);
    if (first === "[") return { root: v };
    if (v === null) return undefined;
    if (!isObject(v)) throw new Error(`json: cannot unmarshal ${typeof v === "string" ? "string" : "value"} into Go value of type map[string]interface {}`);
    return v;
  } catch (e) {
    throw new Error(`error parsing JSON ${first === "[" ? "array " : ""}payload ${(e as Error).message}`);
  }
}

export function parseFormPayload(body: Buffer): Payload {
  const q = parseQuery(body.toString("latin1"));
  if (q.error) throw new Error(`error parsing form payload ${q.error}`);
  return q.values;
}

const xmlOptions: FastXmlParser.X2jOptions = {
  ignoreAttributes: false,
  attributeNamePrefix: "-",
  textNodeName: "#text",
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  removeNSPrefix: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  processEntities: true,
  htmlEntities: false,
};

/** XML as the reference's mxj decodes it: attributes "-name", text "#text", repeats as arrays. */
export function parseXmlPayload(body: Buffer): Payload {
  const text = body.toString("utf8");
  if (!xml) {
    const fxp = require("fast-xml-parser") as typeof FastXmlParser;
    xml = { parser: new fxp.XMLParser(xmlOptions), validator: fxp.XMLValidator };
  }
  const valid = xml.validator.validate(text);
  if (valid !== true) throw new Error(`error parsing XML payload: ${valid.err.msg} (line ${valid.err.line})`);
  const doc = xml.parser.parse(text) as Record<string, unknown>;
  const root = Object.keys(doc)[0];
  if (root === undefined) throw new Error("error parsing XML payload: EOF");
  return { [root]: doc[root] };
}

export interface MultipartResult {
  payload: Payload;
  logs: string[];
}

/**
 * Multipart form data as the reference reads it (Go's ParseMultipartForm over the request's own
 * Content-Type header): the first value of each field, and the first file part of each name
 * decoded as JSON when one of its Content-Type headers is exactly application/json or the hook
 * lists the name in parse-parameters-as-json. Throws a MultipartError with Go's text.
 */
export function parseMultipart(requestContentType: string, body: Buffer, maxMemory: number, jsonFields: Set<string>): MultipartResult {
  const form = readMultipartForm(requestContentType, body, maxMemory);
  const payload: Record<string, unknown> = {};
  const logs: string[] = [];
  const set = (k: string, v: unknown): void => {
    Object.defineProperty(payload, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
  for (const [name, values] of form.values) {
    const key = decodeLatin1(name);
    logs.push(`found multipart form value ${goQuote(key)}`);
    set(key, decodeBytes(values[0]!));
  }
  for (const [name, files] of form.files) {
    const key = decodeLatin1(name);
    const first = files[0]!;
    const asJson = jsonFields.has(key) || (first.header.get("Content-Type") ?? []).includes("application/json");
    if (!asJson) continue;
    logs.push(`parsing multipart form file ${goQuote(key)} as JSON`);
    try {
      const v = parseJsonBytes(first.content);
      if (v !== null && !isObject(v)) throw new Error(`json: cannot unmarshal ${Array.isArray(v) ? "array" : typeof v === "string" ? "string" : "number"} into Go value of type map[string]interface {}`);
      set(key, v);
    } catch (e) {
      logs.push(`error parsing JSON payload file: ${(e as Error).message}`);
      set(key, null);
    }
  }
  return { payload: Object.keys(payload).length ? payload : undefined, logs };
}

/** Go's %q for the names in log lines. */
function goQuote(s: string): string {
  return JSON.stringify(s);
}
