// Turning a raw request into the values hooks read: headers (canonical names, first value),
// the URL query (Go's url.ParseQuery rules) and the body payload (JSON, url-encoded form, XML,
// multipart), with the reference's content-type dispatch and log lines.
import { createRequire } from "node:module";
import type Busboy from "busboy";
import type * as FastXmlParser from "fast-xml-parser";
import { canonicalHeaderKey } from "./values.js";

// The XML and multipart parsers are loaded on first use: most servers never see either, and
// loading them up front costs start-up time and memory.
const require = createRequire(import.meta.url);
let xml: { parser: FastXmlParser.XMLParser; validator: typeof FastXmlParser.XMLValidator } | undefined;
let busboyModule: typeof Busboy | undefined;
import { isObject, parseJson } from "./json.js";

/** Go's url.QueryUnescape; undefined for a malformed escape. */
function queryUnescape(s: string): string | undefined {
  if (!s.includes("%") && !s.includes("+")) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "+") bytes.push(0x20);
    else if (c === "%") {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      const b = Buffer.from(c, "utf8");
      for (const x of b) bytes.push(x);
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

export interface ParsedQuery {
  values: Record<string, string>;
  error?: string;
}

/**
 * Go's url.ParseQuery, keeping the first value of each key. A plain object (a null-prototype one
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

/** Node reads header bytes as latin1; Go keeps the bytes, which are UTF-8 text in practice. */
export function headerText(v: string): string {
  return /[^\x00-\x7f]/.test(v) ? Buffer.from(v, "latin1").toString("utf8") : v;
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
  const text = body.toString("utf8");
  const first = /\S/.exec(text)?.[0];
  try {
    if (first === undefined) throw new Error("EOF");
    const v = parseJson(text);
    if (first === "[") return { root: v };
    if (v === null) return undefined;
    if (!isObject(v)) throw new Error(`json: cannot unmarshal ${typeof v === "string" ? "string" : "value"} into Go value of type map[string]interface {}`);
    return v;
  } catch (e) {
    throw new Error(`error parsing JSON ${first === "[" ? "array " : ""}payload ${(e as Error).message}`);
  }
}

export function parseFormPayload(body: Buffer): Payload {
  const q = parseQuery(body.toString("utf8"));
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
 * Multipart form data as the reference reads it: the first value of each field, and file parts
 * decoded as JSON when their Content-Type is application/json or the hook lists them in
 * parse-parameters-as-json. Other file parts are read and dropped. Field values beyond
 * maxMemory + 10 MiB fail the request, as Go's ParseMultipartForm does.
 */
export function parseMultipart(
  contentType: string,
  body: Buffer,
  maxMemory: number,
  jsonFields: Set<string>,
): Promise<MultipartResult> {
  return new Promise((resolve, reject) => {
    let bb: Busboy.Busboy;
    try {
      busboyModule ??= require("busboy") as typeof Busboy;
      bb = busboyModule({
        headers: { "content-type": contentType },
        limits: { fieldSize: Infinity },
      });
    } catch (e) {
      reject(e);
      return;
    }
    const payload: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    const logs: string[] = [];
    let valueBytes = 0;
    let failed = false;
    let settled = false;
    const pending: Promise<void>[] = [];
    const fail = (e: Error): void => {
      if (!failed) {
        failed = true;
        settled = true;
        reject(e);
      }
    };
    const addField = (name: string, value: string): void => {
      valueBytes += value.length;
      if (valueBytes > maxMemory + 10 * 1024 * 1024) fail(new Error("multipart: message too large"));
      logs.push(`found multipart form value ${JSON.stringify(name)}`);
      if (!(name in payload)) payload[name] = value;
    };
    bb.on("field", addField);
    // Every part's stream settles one promise, on its end or its error: a body cut off inside a
    // part errors the part's stream (an unhandled 'error' would end the process) and busboy.
    const readPart = (stream: NodeJS.ReadableStream, onEnd: (data: Buffer) => void, keep: boolean): void => {
      const chunks: Buffer[] = [];
      if (keep) stream.on("data", (c: Buffer) => chunks.push(c));
      else stream.resume();
      pending.push(
        new Promise<void>((done) => {
          stream.on("end", () => {
            if (keep) onEnd(Buffer.concat(chunks));
            done();
          });
          stream.on("error", (e: Error) => {
            fail(e);
            done();
          });
        }),
      );
    };
    const seenFiles = new Set<string>();
    bb.on("file", (name, stream, info) => {
      if (info.filename === undefined) {
        // busboy calls an application/octet-stream part a file; Go only parts with a filename.
        readPart(stream, (data) => addField(name, data.toString("utf8")), true);
        return;
      }
      const first = !seenFiles.has(name);
      seenFiles.add(name);
      const asJson = first && (jsonFields.has(name) || info.mimeType === "application/json");
      readPart(
        stream,
        (data) => {
          logs.push(`parsing multipart form file ${JSON.stringify(name)} as JSON`);
          try {
            const v = parseJson(data.toString("utf8"));
            if (v !== null && !isObject(v)) throw new Error("json: cannot unmarshal into Go value of type map[string]interface {}");
            payload[name] = v;
          } catch (e) {
            logs.push(`error parsing JSON payload file: ${(e as Error).message}`);
            payload[name] = null;
          }
        },
        asJson,
      );
    });
    bb.on("error", (e: Error) => fail(e));
    bb.on("close", () => {
      settled = true;
      void Promise.all(pending).then(() => {
        if (!failed) resolve({ payload: Object.keys(payload).length ? payload : undefined, logs });
      });
    });
    bb.end(body);
    // The whole body was handed over at once, so busboy has seen all of it once the streams it
    // opened have had a turn; a part opened after the closing boundary never ends (a busboy
    // quirk), and the request must still get an answer.
    setImmediate(() =>
      setImmediate(() => {
        if (!settled) fail(new Error("multipart: part after the closing boundary"));
      }),
    );
  });
}
