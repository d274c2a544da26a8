// Go text/template's predefined functions (text/template/funcs.go): and, or, not, len, index,
// slice, print, printf, println, html, js, urlquery, eq, ne, lt, le, gt, ge.
import { sprint, sprintf, sprintln, isPrint } from "./fmt.js";
import { compareStrings, isMap, isTrue, typeName, type GoValue } from "./value.js";

/**
 * How an argument is passed: "value" is Go's reflect.Value (anything, "no value" included),
 * "any" is interface{} ("no value" becomes nil), "string" must be a string.
 */
export type ParamKind = "value" | "any" | "string";

export interface TemplateFunction {
  params: ParamKind[];
  variadic: ParamKind | null;
  builtin: boolean;
  call(args: GoValue[]): GoValue;
}

/** An error a function returns; execution reports it as "error calling NAME: message". */
export class FuncError extends Error {
  override readonly name = "FuncError";
}

const builtin = (params: ParamKind[], variadic: ParamKind | null, call: (args: GoValue[]) => GoValue): TemplateFunction => ({
  params,
  variadic,
  builtin: true,
  call,
});

// ---- comparisons ----

type BasicKind = "bool" | "int" | "float" | "string" | "invalid";

function basicKind(v: GoValue): BasicKind {
  switch (typeof v) {
    case "boolean":
      return "bool";
    case "bigint":
      return "int";
    case "number":
      return "float";
    case "string":
      return "string";
    default:
      return "invalid";
  }
}

const errBadComparisonType = "invalid type for comparison";
const errBadComparison = "incompatible types for comparison";

function eq(arg1: GoValue, rest: GoValue[]): boolean {
  if (rest.length === 0) throw new FuncError("missing argument for comparison");
  const k1 = basicKind(arg1);
  for (const arg of rest) {
    const k2 = basicKind(arg);
    let truth: boolean;
    if (k1 !== k2) {
      if (arg1 !== undefined && arg !== undefined) throw new FuncError(errBadComparison);
      truth = false;
    } else if (k1 !== "invalid") {
      truth = arg1 === arg;
    } else if (arg1 === undefined || arg === undefined) {
      truth = arg1 === arg;
    } else if (Array.isArray(arg1) !== Array.isArray(arg)) {
      throw new FuncError(`non-comparable types ${sprint([arg1])}: ${typeName(arg1)}, ${typeName(arg)}: ${sprint([arg])}`);
    } else {
      throw new FuncError(`non-comparable type ${sprint([arg])}: ${typeName(arg)}`);
    }
    if (truth) return true;
  }
  return false;
}

function lt(a: GoValue, b: GoValue): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === "invalid" || k2 === "invalid") throw new FuncError(errBadComparisonType);
  if (k1 !== k2) throw new FuncError(errBadComparison);
  switch (k1) {
    case "bool":
      throw new FuncError(errBadComparisonType);
    case "string":
      return compareStrings(a as string, b as string) < 0;
    default:
      return (a as number | bigint) < (b as number | bigint);
  }
}

const le = (a: GoValue, b: GoValue): boolean => lt(a, b) || eq(a, [b]);

// ---- indexing ----

function indexArg(index: GoValue, cap: number): number {
  if (index === undefined || index === null) throw new FuncError("cannot index slice/array with nil");
  if (typeof index !== "bigint") throw new FuncError(`cannot index slice/array with type ${typeName(index)}`);
  if (index < 0n || index > BigInt(cap)) throw new FuncError(`index out of range: ${index}`);
  return Number(index);
}

function index(item: GoValue, indexes: GoValue[]): GoValue {
  if (item === undefined || item === null) throw new FuncError("index of untyped nil");
  for (const i of indexes) {
    if (item === undefined || item === null) throw new FuncError("index of untyped nil");
    if (typeof item === "string") {
      const bytes = Buffer.from(item, "utf8");
      const x = indexArg(i, bytes.length);
      if (x === bytes.length) throw new FuncError("reflect: string index out of range");
      item = BigInt(bytes[x]!);
    } else if (Array.isArray(item)) {
      const x = indexArg(i, item.length);
      if (x === item.length) throw new FuncError("reflect: slice index out of range");
      item = item[x];
    } else if (isMap(item)) {
      if (i === undefined || i === null) throw new FuncError("value is nil; should be of type string");
      if (typeof i !== "string") throw new FuncError(`value has type ${typeName(i)}; should be string`);
      item = Object.hasOwn(item, i) ? item[i] : null;
    } else {
      throw new FuncError(`can't index item of type ${typeName(item)}`);
    }
  }
  return item;
}

function slice(item: GoValue, indexes: GoValue[]): GoValue {
  if (item === undefined || item === null) throw new FuncError("slice of untyped nil");
  if (indexes.length > 3) throw new FuncError(`too many slice indexes: ${indexes.length}`);
  let bytes: Buffer | null = null;
  let len: number;
  if (typeof item === "string") {
    if (indexes.length === 3) throw new FuncError("cannot 3-index slice a string");
    bytes = Buffer.from(item, "utf8");
    len = bytes.length;
  } else if (Array.isArray(item)) {
    len = item.length;
  } else {
    throw new FuncError(`can't slice item of type ${typeName(item)}`);
  }
  const idx = [0, len, len];
  indexes.forEach((x, k) => {
    idx[k] = indexArg(x, len);
  });
  if (idx[0]! > idx[1]!) throw new FuncError(`invalid slice index: ${idx[0]} > ${idx[1]}`);
  if (indexes.length === 3 && idx[1]! > idx[2]!) throw new FuncError(`invalid slice index: ${idx[1]} > ${idx[2]}`);
  return bytes ? bytes.subarray(idx[0], idx[1]).toString("utf8") : (item as GoValue[]).slice(idx[0], idx[1]);
}

function length(item: GoValue): bigint {
  if (item === undefined || item === null) throw new FuncError("reflect: call of reflect.Value.Type on zero Value");
  if (typeof item === "string") return BigInt(Buffer.byteLength(item, "utf8"));
  if (Array.isArray(item)) return BigInt(item.length);
  if (isMap(item)) return BigInt(Object.keys(item).length);
  throw new FuncError(`len of type ${typeName(item)}`);
}

// ---- escapers ----

/** The escapers' argument handling: one string as is, otherwise fmt.Sprint ("no value" for nil). */
function evalArgs(args: GoValue[]): string {
  if (args.length === 1 && typeof args[0] === "string") return args[0];
  return sprint(args.map((a) => (a === null || a === undefined ? "<no value>" : a)));
}

/** template.JSEscapeString. */
function jsEscape(s: string): string {
  let out = "";
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    switch (c) {
      case "\\":
        out += "\\\\";
        continue;
      case "'":
        out += "\\'";
        continue;
      case '"':
        out += '\\"';
        continue;
      case "<":
        out += "\\u003C";
        continue;
      case ">":
        out += "\\u003E";
        continue;
      case "&":
        out += "\\u0026";
        continue;
      case "=":
        out += "\\u003D";
        continue;
    }
    if (cp < 0x20) out += `\\u00${cp.toString(16).toUpperCase().padStart(2, "0")}`;
    else if (cp < 0x80 || isPrint(c)) out += c;
    else out += `\\u${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  }
  return out;
}

/** template.HTMLEscapeString. */
function htmlEscape(s: string): string {
  const map: Record<string, string> = { '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;", "\0": "\uFFFD" };
  return s.replace(/["'&<>\0]/g, (c) => map[c]!);
}

/** url.QueryEscape. */
function queryEscape(s: string): string {
  let out = "";
  for (const byte of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === " ") out += "+";
    else out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export const BUILTINS: Record<string, TemplateFunction> = {
  and: builtin(["value"], "value", () => undefined), // short-circuit evaluation lives in exec
  or: builtin(["value"], "value", () => undefined),
  not: builtin(["value"], null, ([a]) => !isTrue(a)),
  len: builtin(["value"], null, ([a]) => length(a)),
  index: builtin(["value"], "value", ([item, ...rest]) => index(item, rest)),
  slice: builtin(["value"], "value", ([item, ...rest]) => slice(item, rest)),
  print: builtin([], "any", (args) => sprint(args)),
  printf: builtin(["string"], "any", ([format, ...rest]) => sprintf(format as string, rest)),
  println: builtin([], "any", (args) => sprintln(args)),
  html: builtin([], "any", (args) => htmlEscape(evalArgs(args))),
  js: builtin([], "any", (args) => jsEscape(evalArgs(args))),
  urlquery: builtin([], "any", (args) => queryEscape(evalArgs(args))),
  eq: builtin(["value"], "value", ([a, ...rest]) => eq(a, rest)),
  ne: builtin(["value", "value"], null, ([a, b]) => !eq(a, [b])),
  lt: builtin(["value", "value"], null, ([a, b]) => lt(a, b)),
  le: builtin(["value", "value"], null, ([a, b]) => le(a, b)),
  gt: builtin(["value", "value"], null, ([a, b]) => !le(a, b)),
  ge: builtin(["value", "value"], null, ([a, b]) => !lt(a, b)),
};
