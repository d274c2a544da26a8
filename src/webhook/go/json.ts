// JSON as Go's encoding/json sees it in the reference: numbers keep their literal text
// (json.Decoder.UseNumber), only the first value of the input is read, and encoding sorts object
// keys and escapes <, > and & the way json.Marshal does.

import { decodeBytes, replaceRawBytes } from "./bytes.js";

/** A JSON number kept as written ("1.0" stays "1.0", big integers keep every digit). */
export class JsonNumber {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

class JsonSyntaxError extends Error {
  override readonly name = "JsonSyntaxError";
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** Parses the first JSON value of `text`; trailing data is ignored, as Go's Decoder.Decode does. */
export function parseJson(text: string): JsonValue {
  let i = 0;
  const fail = (what: string): never => {
    if (i >= text.length) throw new JsonSyntaxError("unexpected EOF");
    throw new JsonSyntaxError(`invalid character ${JSON.stringify(text[i])} ${what} at offset ${i}`);
  };
  const skip = (): void => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++;
  };
  const str = (): string => {
    // fast path: no escapes
    const start = ++i;
    for (;;) {
      const c = text.charCodeAt(i);
      if (Number.isNaN(c)) fail("in string literal");
      if (c === 0x22) return text.slice(start, i++);
      if (c === 0x5c) break;
      if (c < 0x20) fail("in string literal");
      i++;
    }
    let out = text.slice(start, i);
    for (;;) {
      const c = text.charCodeAt(i);
      if (Number.isNaN(c)) fail("in string literal");
      if (c === 0x22) {
        i++;
        return out;
      }
      if (c < 0x20) fail("in string literal");
      if (c !== 0x5c) {
        out += text[i++];
        continue;
      }
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"':
          out += '"';
          break;
        case "\\":
          out += "\\";
          break;
        case "/":
          out += "/";
          break;
        case "b":
          out += "\b";
          break;
        case "f":
          out += "\f";
          break;
        case "n":
          out += "\n";
          break;
        case "r":
          out += "\r";
          break;
        case "t":
          out += "\t";
          break;
        case "u": {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("in \\u hexadecimal character escape");
          i += 4;
          // Go joins a surrogate pair and turns a lone surrogate into U+FFFD.
          let code = parseInt(hex, 16);
          if (code >= 0xd800 && code <= 0xdbff && text[i] === "\\" && text[i + 1] === "u" && /^[dD][c-fC-F][0-9a-fA-F]{2}$/.test(text.slice(i + 2, i + 6))) {
            code = 0x10000 + ((code - 0xd800) << 10) + (parseInt(text.slice(i + 2, i + 6), 16) - 0xdc00);
            i += 6;
          } else if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
          out += String.fromCodePoint(code);
          break;
        }
        default:
          i--;
          fail("in string escape code");
      }
    }
  };
  const num = (): JsonNumber => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === "-") fail("looking for beginning of value");
    i += m![0].length;
    return new JsonNumber(m![0]);
  };
  const lit = (word: string, v: JsonValue): JsonValue => {
    if (text.startsWith(word, i)) {
      i += word.length;
      return v;
    }
    return fail("in literal");
  };
  const value = (depth: number): JsonValue => {
    if (depth > 10000) throw new JsonSyntaxError("exceeded max depth");
    skip();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: { [key: string]: JsonValue } = {};
      skip();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        skip();
        if (text[i] !== '"') fail("looking for beginning of object key string");
        const k = str();
        skip();
        if (text[i] !== ":") fail("after object key");
        i++;
        const v = value(depth + 1);
        Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
        skip();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail("after object key:value pair");
      }
    }
    if (c === "[") {
      i++;
      const arr: JsonValue[] = [];
      skip();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        skip();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return arr;
        }
        fail("after array element");
      }
    }
    if (c === '"') return str();
    if (c === "t") return lit("true", true);
    if (c === "f") return lit("false", false);
    if (c === "n") return lit("null", null);
    return num();
  };
  return value(0);
}

/** Parses JSON bytes as Go does: each byte that is not UTF-8 reads as U+FFFD. */
export function parseJsonBytes(bytes: Buffer): JsonValue {
  return parseJson(replaceRawBytes(decodeBytes(bytes)));
}

export function isObject(v: unknown): v is { [key: string]: unknown } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}

const ESC: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "<": "\\u003c",
  ">": "\\u003e",
  "&": "\\u0026",
  "\u2028": "\\u2028",
  "\u2029": "\\u2029",
};

/** Go's string encoding; a byte that is not UTF-8 (an escaped one, see bytes.ts) becomes \\ufffd. */
function quote(s: string): string {
  return (
    '"' +
    s.replace(
      /["\\\n\r\t<>&\u2028\u2029\u0000-\u001f]|[\udc80-\udcff]/gu,
      (c) => ESC[c] ?? (c.charCodeAt(0) >= 0xdc80 ? "\\ufffd" : "\\u00" + c.charCodeAt(0).toString(16).padStart(2, "0")),
    ) +
    '"'
  );
}

/** Encodes like Go's json.Marshal on the decoded value: sorted keys, HTML-safe escapes. */
export function marshalJson(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return quote(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "null";
  if (v instanceof JsonNumber) return v.text;
  if (Array.isArray(v)) return "[" + v.map(marshalJson).join(",") + "]";
  if (typeof v === "object") {
    const o = v as Record<string, unknown>;
    return (
      "{" +
      Object.keys(o)
        .sort()
        .map((k) => quote(k) + ":" + marshalJson(o[k]))
        .join(",") +
      "}"
    );
  }
  return "null";
}

/** Renders a value as Go's fmt "%v" does for the reference's decoded values (maps/arrays as JSON). */
export function valueToString(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "string") return v;
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === "boolean" || typeof v === "number") return String(v);
  return marshalJson(v);
}

/** Go's %q as the reference's log lines use it (JSON quoting). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}
