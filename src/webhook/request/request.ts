// Turning a raw request into the values hooks read: headers (canonical names, first value),
// the URL query (Go's url.ParseQuery rules) and the body payload (JSON, url-encoded form, XML,
// multipart), with the reference's content-type dispatch and log lines.
import { isUtf8 } from "node:buffer";
import { createRequire } from "node:module";
import type * as FastXmlParser from "fast-xml-parser";
import { canonicalHeaderKey } from "../go/header.js";
import { decodeBytes, decodeLatin1 } from "../go/bytes.js";
import { goQuote, isObject, parseJsonBytes } from "../go/json.js";
import { queryUnescape } from "../go/path.js";
import { readMultipartForm, trimChars } from "./multipart.js";
import { firstElement, xmlEntity } from "./xml-root.js";

// The XML parser is loaded on first use: most servers never see XML, and loading it up front
// costs start-up time and memory.
const require = createRequire(import.meta.url);
let xml: { parser: FastXmlParser.XMLParser; validator: typeof FastXmlParser.XMLValidator } | undefined;

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
function headerText(v: string): string {
  return decodeLatin1(v);
}

/** The first value of one header, looked up case-insensitively in Node's raw header list. */
export function rawHeader(rawHeaders: string[], name: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === name.length && rawHeaders[i]!.toLowerCase() === name) return rawHeaders[i + 1];
  }
  return undefined;
}

/** The value of a header sent once; undefined when it was not sent, or sent more than once (which one counts is ambiguous). */
export function singleHeader(rawHeaders: string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length !== name.length || rawHeaders[i]!.toLowerCase() !== name) continue;
    if (value !== undefined) return undefined;
    value = rawHeaders[i + 1];
  }
  return value;
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

// Parsed in document order, entities left alone: the reference's mxj walks Go's token stream,
// where the last text run of an element wins and only the five XML entities and character
// references exist.
const xmlOptions: FastXmlParser.X2jOptions = {
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  commentPropName: "#comment",
  cdataPropName: "#cdata",
  // fast-xml-parser renames Object.prototype's names ("__toString") and refuses __proto__ and constructor; mxj
  // keeps every name as it is. Those names reach it with a leading space (never part of a parsed name) and leave
  // it without; xmlElement stores keys as own properties only.
  transformTagName: hideReservedName,
  transformAttributeName: hideReservedName,
};

/** The names fast-xml-parser refuses or renames: Object.prototype's members, and "prototype". */
const RESERVED_NAMES = new Set([...Object.getOwnPropertyNames(Object.prototype), "prototype"]);

function hideReservedName(name: string): string {
  return RESERVED_NAMES.has(name) ? ` ${name}` : name;
}

/** A name as the document spells it: hideReservedName undone. */
function xmlName(parsed: string): string {
  return parsed.charCodeAt(0) === 0x20 ? parsed.slice(1) : parsed;
}

type XmlNode = Record<string, unknown> & { ":@"?: Record<string, string> };

/** Go's encoding/xml text: the five entities and character references decoded, CRLF read as LF. */
function xmlText(raw: string): string {
  const text = raw.includes("\r") ? raw.replace(/\r\n?/g, "\n") : raw;
  if (!text.includes("&")) return text;
  return text.replace(/&([^;&]*);?/g, (whole, name: string) => {
    const decoded = whole.endsWith(";") ? xmlEntity(name) : undefined;
    if (decoded === undefined) throw new Error(`xml.Decoder.Token() - XML syntax error: invalid character entity ${whole}`);
    return decoded;
  });
}

/** The local part of a parsed name, as Go splits "space:local" at the first colon. */
function localName(parsed: string): string {
  const name = xmlName(parsed);
  const i = name.indexOf(":");
  return i > 0 && i < name.length - 1 ? name.slice(i + 1) : name;
}

const trimXml = (s: string): string => trimChars(s, "\t\r\b\n ");

/** mxj's xmlToMapParser for one element: its value (a string, or a map of attributes, children and text). */
function xmlElement(children: XmlNode[], attrs: Record<string, string> | undefined): unknown {
  let own: string | undefined;
  const na: Record<string, unknown> = {};
  const set = (k: string, v: unknown): void => {
    Object.defineProperty(na, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
  let size = 0;
  for (const [k, v] of Object.entries(attrs ?? {})) {
    const key = "-" + localName(k);
    if (!Object.hasOwn(na, key)) size++;
    set(key, xmlText(v));
  }
  for (const child of children) {
    const name = Object.keys(child).find((k) => k !== ":@")!;
    if (name === "#comment") continue;
    if (name === "#text" || name === "#cdata") {
      const raw = name === "#text" ? xmlText(String(child[name])) : String(((child[name] as XmlNode[])[0] ?? {})["#text"] ?? "");
      const tt = trimXml(raw);
      if (tt === "") continue;
      if (size > 0) {
        if (!Object.hasOwn(na, "#text")) size++;
        set("#text", tt);
      } else own = tt;
      continue;
    }
    const key = localName(name);
    const value = xmlElement(child[name] as XmlNode[], child[":@"]);
    if (Object.hasOwn(na, key)) {
      const prev = na[key];
      // Appended in place: a copy per repeat made many siblings quadratic.
      if (Array.isArray(prev)) prev.push(value);
      else set(key, [prev, value]);
    } else {
      size++;
      set(key, value);
    }
  }
  if (own === undefined) return size > 0 ? na : "";
  if (size > 0) {
    set("#text", own);
    return na;
  }
  return own;
}

/** XML as the reference's mxj decodes it: attributes "-name", text "#text", repeats as arrays. */
export function parseXmlPayload(body: Buffer): Payload {
  try {
    if (!isUtf8(body)) throw new Error("invalid UTF-8");
    return decodeXml(firstElement(body.toString("utf8")));
  } catch (e) {
    // The parser's messages may quote the body (a tag name as long as the request): the log gets its start.
    const why = (e as Error).message;
    throw new Error(`error parsing XML payload: ${why.length > 200 ? `${why.slice(0, 200)}…` : why}`, { cause: e });
  }
}

function decodeXml(text: string): Payload {
  if (!xml) {
    const fxp = require("fast-xml-parser") as typeof FastXmlParser;
    xml = { parser: new fxp.XMLParser(xmlOptions), validator: fxp.XMLValidator };
  }
  const valid = xml.validator.validate(text);
  if (valid !== true) throw new Error(`${valid.err.msg} (line ${valid.err.line})`);
  const doc = xml.parser.parse(text) as XmlNode[];
  const root = doc.find((n) => !("#text" in n) && !("#comment" in n) && !("#cdata" in n));
  if (root === undefined) throw new Error("EOF");
  const name = Object.keys(root).find((k) => k !== ":@")!;
  return { [localName(name)]: xmlElement(root[name] as XmlNode[], root[":@"]) };
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
      if (v !== null && !isObject(v))
        throw new Error(
          `json: cannot unmarshal ${Array.isArray(v) ? "array" : typeof v === "string" ? "string" : "number"} into Go value of type map[string]interface {}`,
        );
      set(key, v);
    } catch (e) {
      logs.push(`error parsing JSON payload file: ${(e as Error).message}`);
      set(key, null);
    }
  }
  return { payload: Object.keys(payload).length ? payload : undefined, logs };
}
