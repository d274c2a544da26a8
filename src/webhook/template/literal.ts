// Go literals inside actions: numbers (strconv.ParseInt/ParseUint/ParseFloat with base 0, as
// text/template's newNumber uses them), character constants and quoted strings (strconv.Unquote).

export interface NumberValue {
  isInt: boolean;
  isUint: boolean;
  isFloat: boolean;
  int: bigint;
  float: number;
  /** The text was a character constant such as 'a'. */
  isRune: boolean;
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const UINT64_MAX = (1n << 64n) - 1n;

const INT_SYNTAX = /^[+-]?(0[xX](_?[0-9a-fA-F])+|0[bB](_?[01])+|0[oO](_?[0-7])+|0(_?[0-7])*|[1-9](_?[0-9])*)$/;
const FLOAT_SYNTAX = /^[+-]?(\d(_?\d)*(\.(\d(_?\d)*)?)?|\.\d(_?\d)*)([eE][+-]?\d(_?\d)*)?$/;

function parseInteger(text: string): bigint | null {
  if (!INT_SYNTAX.test(text)) return null;
  const negative = text.startsWith("-");
  let body = text.replace(/^[+-]/, "").replace(/_/g, "");
  if (/^0[0-7]+$/.test(body)) body = `0o${body.slice(1)}`; // a leading 0 means octal
  const magnitude = BigInt(body);
  return negative ? -magnitude : magnitude;
}

/** A number or character constant, or the error message Go gives for it. */
export function parseNumber(text: string, isCharConstant: boolean): NumberValue | string {
  if (isCharConstant) {
    const decoded = decodeEscapes(text.slice(1, -1), "'");
    const runes = decoded === null ? [] : [...decoded.text];
    if (decoded === null || runes.length !== 1) return `malformed character constant: ${text}`;
    const r = BigInt(decoded.runeValue ?? runes[0]!.codePointAt(0)!);
    return { isInt: true, isUint: true, isFloat: true, int: r, float: Number(r), isRune: true };
  }
  if (text.endsWith("i")) return `unsupported: imaginary number ${text}`;
  if (/^[+-]?0[xX].*[pP]/.test(text)) return `unsupported: hexadecimal floating-point number ${text}`;
  const n: NumberValue = { isInt: false, isUint: false, isFloat: false, int: 0n, float: 0, isRune: false };
  const i = parseInteger(text);
  if (i !== null) {
    if (i >= 0n && i <= UINT64_MAX && !text.startsWith("-")) n.isUint = true;
    if (i >= INT64_MIN && i <= INT64_MAX) {
      n.isInt = true;
      n.int = i;
    }
    if (n.isInt || n.isUint) {
      n.isFloat = true;
      n.float = Number(i);
    }
  }
  if (!n.isInt && !n.isUint && FLOAT_SYNTAX.test(text)) {
    const f = Number(text.replace(/_/g, ""));
    if (!/[.eEpP]/.test(text)) return `integer overflow: ${JSON.stringify(text)}`;
    if (Number.isFinite(f)) {
      n.isFloat = true;
      n.float = f;
      if (Number.isInteger(f) && BigInt(f) >= INT64_MIN && BigInt(f) <= INT64_MAX) {
        n.isInt = true;
        n.int = BigInt(f);
      }
    }
  }
  if (!n.isInt && !n.isUint && !n.isFloat) return `illegal number syntax: ${JSON.stringify(text)}`;
  return n;
}

/** strconv.Unquote for "..." and `...` literals; null when the syntax is invalid. */
export function unquote(quoted: string): string | null {
  if (quoted.startsWith("`")) return quoted.slice(1, -1).replace(/\r/g, "");
  const decoded = decodeEscapes(quoted.slice(1, -1), '"');
  return decoded === null ? null : decoded.text;
}

const SIMPLE_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, "\\": 92 };

/**
 * Decodes Go escape sequences into UTF-8 bytes (\x and octal escapes are single bytes), then
 * into a string. `runeValue` is the value of a lone \x or octal escape, for character constants.
 */
function decodeEscapes(body: string, quote: "'" | '"'): { text: string; runeValue?: number } | null {
  if (!body.includes("\\")) return body.includes(quote) ? null : { text: body };
  const bytes: number[] = [];
  let runeValue: number | undefined;
  for (let i = 0; i < body.length; ) {
    const c = body[i]!;
    if (c === quote) return null;
    if (c !== "\\") {
      const cp = body.codePointAt(i)!;
      bytes.push(...Buffer.from(String.fromCodePoint(cp), "utf8"));
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const e = body[i + 1];
    if (e === undefined) return null;
    if (e in SIMPLE_ESCAPES) {
      bytes.push(SIMPLE_ESCAPES[e]!);
      i += 2;
    } else if (e === quote) {
      bytes.push(e.charCodeAt(0));
      i += 2;
    } else if (e === "x" || e === "u" || e === "U") {
      const len = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = body.slice(i + 2, i + 2 + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) return null;
      const v = parseInt(hex, 16);
      if (e === "x") {
        bytes.push(v);
        runeValue = v;
      } else {
        if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return null;
        bytes.push(...Buffer.from(String.fromCodePoint(v), "utf8"));
      }
      i += 2 + len;
    } else if (e >= "0" && e <= "7") {
      const oct = body.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(oct)) return null;
      const v = parseInt(oct, 8);
      if (v > 255) return null;
      bytes.push(v);
      runeValue = v;
      i += 4;
    } else {
      return null;
    }
  }
  const text = Buffer.from(bytes).toString("utf8");
  return runeValue !== undefined && bytes.length === 1 ? { text: String.fromCharCode(runeValue), runeValue } : { text };
}
