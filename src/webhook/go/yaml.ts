// Hooks files as the reference reads them: gopkg.in/yaml.v2 decodes the first YAML document (JSON
// is YAML) into plain values, resolving unquoted scalars by yaml.v2's rules (YAML 1.1 booleans such
// as yes/on, 0x1F and 017 integers, .inf), then ghodss/yaml turns map keys into strings. The
// parsing itself is the `yaml` package's; only the resolution is done here.
import { Composer, isAlias, isMap, isScalar, isSeq, Parser, type Document, type Node } from "yaml";

/** A decoded YAML value: integers are bigint, floats are number, maps keep the last of repeated keys. */
export type YamlValue = null | boolean | bigint | number | string | YamlValue[] | YamlMap;
export type YamlMap = Map<string, YamlValue>;

export class YamlError extends Error {
  override readonly name = "YamlError";
  constructor(
    message: string,
    /** 1-based line and column, when known. */
    readonly line?: number,
    readonly col?: number,
  ) {
    super(message);
  }
}

/** yaml.v2 caps alias expansion too: a small file must not expand into gigabytes (a real hooks file holds thousands of values). */
const MAX_DECODED_NODES = 250_000;

const BOOLS = new Map<string, boolean>([
  ...["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"].map((s) => [s, true] as const),
  ...["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"].map((s) => [s, false] as const),
]);
const NULLS = new Set(["", "~", "null", "Null", "NULL"]);
const SPECIAL_FLOATS = new Map<string, number>([
  ...[".nan", ".NaN", ".NAN"].map((s) => [s, NaN] as const),
  ...[".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"].map((s) => [s, Infinity] as const),
  ...["-.inf", "-.Inf", "-.INF"].map((s) => [s, -Infinity] as const),
]);
const INT64_MIN = -(1n << 63n);
const UINT64_MAX = (1n << 64n) - 1n;
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** Go's strconv.ParseInt/ParseUint(s, 0, 64) without underscores: 0x, 0o, 0b and leading-0 octal. */
function parseGoInteger(s: string): bigint | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(s);
  if (!m) return undefined;
  let digits = m[2]!;
  if (/^0[oO]/.test(digits)) digits = "0o" + digits.slice(2);
  else if (digits.length > 1 && digits[0] === "0" && /^[0-7]+$/.test(digits)) digits = "0o" + digits.slice(1);
  const n = BigInt(digits) * (m[1] === "-" ? -1n : 1n);
  if (n < INT64_MIN || n > UINT64_MAX) return undefined;
  return n;
}

/** A finite float, as Go's strconv.ParseFloat accepts it (out of range is an error there). */
function parseFiniteFloat(s: string): number | undefined {
  const v = Number(s);
  return Number.isFinite(v) ? v : undefined;
}

/** yaml.v2's resolve() for an untagged plain scalar. */
function resolvePlain(text: string): YamlValue {
  if (NULLS.has(text)) return null;
  const b = BOOLS.get(text);
  if (b !== undefined) return b;
  const f = SPECIAL_FLOATS.get(text);
  if (f !== undefined) return f;
  const first = text[0]!;
  if (first === ".") {
    const v = /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text) ? parseFiniteFloat(text) : undefined;
    return v ?? text;
  }
  if (first === "+" || first === "-" || (first >= "0" && first <= "9")) {
    const plain = text.replace(/_/g, "");
    const n = parseGoInteger(plain);
    if (n !== undefined) return n;
    if (YAML_STYLE_FLOAT.test(plain)) {
      const v = parseFiniteFloat(plain);
      if (v !== undefined) return v;
    }
    // "-0b101": ParseInt with base 0 already took "0b…"; yaml.v2 also reads a negative one.
    const negBinary = /^-0b([01]+)$/.exec(plain);
    if (negBinary) {
      const v = -BigInt("0b" + negBinary[1]);
      if (v >= INT64_MIN) return v;
    }
  }
  return text;
}

const TAG = "tag:yaml.org,2002:";

/** A scalar with an explicit tag: !!str keeps the text; the standard types must resolve to that type. */
function resolveTagged(tag: string, text: string): YamlValue {
  switch (tag) {
    case `${TAG}str`:
      return text;
    case `${TAG}binary`:
      return Buffer.from(text.replace(/\s+/g, ""), "base64").toString("latin1");
    case `${TAG}null`:
    case `${TAG}bool`:
    case `${TAG}int`:
    case `${TAG}float`: {
      const v = resolvePlain(text);
      const kind = v === null ? "null" : typeof v === "boolean" ? "bool" : typeof v === "bigint" ? "int" : typeof v === "number" ? "float" : "str";
      if (`${TAG}${kind}` === tag) return v;
      if (tag === `${TAG}float` && typeof v === "bigint") return Number(v);
      throw new YamlError(`cannot decode !!${kind} \`${text}\` as a !!${tag.slice(TAG.length)}`);
    }
    default:
      // A custom tag (!foo) leaves the value as its text.
      return text;
  }
}

/** Go's strconv.FormatFloat(v, 'g', -1, 32), which ghodss/yaml uses to turn floats into strings. */
export function formatFloat32(v: number): string {
  const f = Math.fround(v);
  if (Number.isNaN(f)) return "NaN";
  if (f === Infinity) return "+Inf";
  if (f === -Infinity) return "-Inf";
  if (f === 0) return Object.is(f, -0) ? "-0" : "0";
  // The shortest decimal that reads back as the same float32; an exact tie rounds to even, as Go does.
  const [exact, e0] = f.toPrecision(100).replace(/^-/, "").split("e") as [string, string | undefined];
  let digits = exact.replace(".", "");
  let x = (e0 === undefined ? exact.indexOf(".") - 1 : Number(e0)) - (digits.length - digits.replace(/^0+/, "").length);
  digits = digits.replace(/^0+/, "");
  for (let p = 1; p <= 9; p++) {
    const [d, shift] = roundDigits(digits, p);
    if (Math.fround(Number(`${f < 0 ? "-" : ""}0.${d}e${x + 1 + shift}`)) === f) {
      digits = d.replace(/0+$/, "") || "0";
      x += shift;
      break;
    }
  }
  const sign = f < 0 ? "-" : "";
  // 'g' with the shortest precision switches to an exponent below 1e-4 and from 1e6.
  if (x < -4 || x >= 6) {
    const frac = digits.length > 1 ? "." + digits.slice(1) : "";
    const ex = Math.abs(x) < 10 ? `0${Math.abs(x)}` : String(Math.abs(x));
    return `${sign}${digits[0]}${frac}e${x < 0 ? "-" : "+"}${ex}`;
  }
  if (x < 0) return `${sign}0.${"0".repeat(-x - 1)}${digits}`;
  if (digits.length <= x + 1) return sign + digits + "0".repeat(x + 1 - digits.length);
  return `${sign}${digits.slice(0, x + 1)}.${digits.slice(x + 1)}`;
}

/** The first p digits of a digit string, rounded half to even; shift is 1 when 9…9 rounds up to 10…0. */
function roundDigits(digits: string, p: number): [string, number] {
  if (digits.length <= p) return [digits, 0];
  const head = digits.slice(0, p);
  const rest = digits.slice(p);
  const half = rest[0] === "5" && /^5?0*$/.test(rest);
  const up = rest[0]! > "5" || (rest[0] === "5" && !half) || (half && Number(head[p - 1]) % 2 === 1);
  if (!up) return [head, 0];
  const n = (BigInt(head) + 1n).toString();
  return n.length > p ? [n.slice(0, p), 1] : [n, 0];
}

/** ghodss/yaml's spelling of a non-string map key. */
function keyString(k: YamlValue): string {
  if (typeof k === "string") return k;
  if (typeof k === "bigint") return k.toString();
  if (typeof k === "boolean") return String(k);
  if (typeof k === "number") {
    const s = formatFloat32(k);
    return s === "+Inf" ? ".inf" : s === "-Inf" ? "-.inf" : s === "NaN" ? ".nan" : s;
  }
  throw new YamlError(`a map key must be a string, number or boolean, not ${k === null ? "null" : Array.isArray(k) ? "a list" : "a map"}`);
}

class Decoder {
  private count = 0;

  constructor(
    private readonly doc: Document.Parsed,
    private readonly position: (offset: number) => { line: number; col: number },
  ) {}

  private fail(message: string, node: Node | null | undefined): never {
    const offset = node?.range?.[0];
    const at = offset === undefined ? undefined : this.position(offset);
    throw new YamlError(message, at?.line, at?.col);
  }

  decode(node: Node | null | undefined, depth = 0): YamlValue {
    if (++this.count > MAX_DECODED_NODES) this.fail("the document expands to too many values (aliases nested too deep)", node);
    if (depth > 1000) this.fail("the document is nested too deep", node);
    if (node === null || node === undefined) return null;
    if (isAlias(node)) {
      const target = node.resolve(this.doc);
      if (!target) this.fail(`unknown anchor '${node.source}' referenced`, node);
      return this.decode(target, depth + 1);
    }
    if (isScalar(node)) {
      const text = String(node.value);
      try {
        if (node.tag) return resolveTagged(node.tag, text);
        // Quoted and block scalars are strings; only plain ones are resolved.
        return node.type === "PLAIN" ? resolvePlain(text) : text;
      } catch (e) {
        if (e instanceof YamlError) this.fail(e.message, node);
        throw e;
      }
    }
    if (isSeq(node)) return node.items.map((item) => this.decode(item as Node, depth + 1));
    if (isMap(node)) {
      const out: YamlMap = new Map();
      for (const pair of node.items) {
        const key = pair.key as Node | null;
        if (isScalar(key) && key.type === "PLAIN" && !key.tag && key.value === "<<") {
          this.merge(pair.value as Node | null, out, depth + 1);
          continue;
        }
        const k = this.decode(key, depth + 1);
        let name: string;
        try {
          name = keyString(k);
        } catch (e) {
          this.fail((e as Error).message, key);
        }
        out.set(name, this.decode(pair.value as Node | null, depth + 1));
      }
      return out;
    }
    this.fail("unsupported YAML node", node);
  }

  /** `<<`: yaml.v2 sets the merged keys where the `<<` stands; a list merges its last map first. */
  private merge(node: Node | null, out: YamlMap, depth: number): void {
    const target = isAlias(node) ? node.resolve(this.doc) : node;
    const maps = isSeq(target) ? [...target.items].reverse() : [target];
    for (const m of maps) {
      const v = this.decode(m as Node, depth + 1);
      if (!(v instanceof Map)) this.fail("map merge requires map or sequence of maps as the value", node);
      for (const [k, x] of v) out.set(k, x);
    }
  }
}

/** The first document of a YAML (or JSON) text, decoded as yaml.v2 and ghodss/yaml decode it. */
export function decodeYaml(source: string): YamlValue {
  const text = source.startsWith("\uFEFF") ? source.slice(1) : source;
  const lineStarts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  const position = (offset: number) => {
    let line = 0;
    while (line + 1 < lineStarts.length && lineStarts[line + 1]! <= offset) line++;
    return { line: line + 1, col: offset - lineStarts[line]! + 1 };
  };
  const composer = new Composer({ schema: "failsafe", version: "1.1", uniqueKeys: false, prettyErrors: false });
  let doc: Document.Parsed | undefined;
  // Only the first document is read, so later ones cannot fail the file (as in yaml.v2).
  for (const d of composer.compose(new Parser().parse(text), true)) {
    doc = d as Document.Parsed;
    break;
  }
  if (!doc) return null;
  const err = doc.errors[0];
  if (err) {
    const at = position(err.pos[0]);
    throw new YamlError(err.message.split("\n")[0]!, at.line, at.col);
  }
  return new Decoder(doc, position).decode(doc.contents as Node | null);
}
