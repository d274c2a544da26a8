// Go's fmt for the values a template holds: Sprint, Sprintln and Sprintf with the verbs, flags,
// width and precision Go has, including its inline error forms (%!d(string=x), %!s(MISSING),
// %!(EXTRA ...)). Printf features this engine lacks ("%[1]d" indexes, "*" widths, "%#v") throw
// an UnsupportedFormat error instead of printing something Go would not print.
import { isMap, sortedKeys, typeName, type GoValue } from "./value.js";

export class UnsupportedFormat extends Error {}

interface Flags {
  plus: boolean;
  minus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width: number | null;
  prec: number | null;
}

const noFlags = (): Flags => ({ plus: false, minus: false, sharp: false, space: false, zero: false, width: null, prec: null });

const runeCount = (s: string): number => [...s].length;

/** Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
export const isPrint = (c: string): boolean => c === " " || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(c);

/** strconv.Quote (or QuoteToASCII when asciiOnly). */
export function quote(s: string, asciiOnly = false): string {
  return `"${[...s].map((c) => escapeRune(c, '"', asciiOnly)).join("")}"`;
}

function quoteRune(cp: number, asciiOnly: boolean): string {
  const valid = cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
  return `'${escapeRune(String.fromCodePoint(valid ? cp : 0xfffd), "'", asciiOnly)}'`;
}

function escapeRune(c: string, q: string, asciiOnly: boolean): string {
  const cp = c.codePointAt(0)!;
  if (c === q || c === "\\") return `\\${c}`;
  if (asciiOnly ? cp < 0x80 && isPrint(c) : isPrint(c)) return c;
  switch (c) {
    case "\x07":
      return "\\a";
    case "\b":
      return "\\b";
    case "\f":
      return "\\f";
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
    case "\v":
      return "\\v";
  }
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, "0")}`;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, "0")}`;
  return `\\U${cp.toString(16).padStart(8, "0")}`;
}

const canBackquote = (s: string): boolean => !/[`\u0000-\u0008\u000a-\u001f\u007f\ufeff]/.test(s);

// ---- floating point, digit by digit as strconv does ----

interface Decimal {
  /** Significant digits without trailing zeros ("" for zero). */
  d: string;
  /** Position of the decimal point relative to the digits. */
  dp: number;
}

/** The exact decimal value of a finite, non-negative double. */
function exactDecimal(x: number): Decimal {
  if (x === 0) return { d: "", dp: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exp: number;
  if (biased === 0) exp = -1074;
  else {
    mant |= 1n << 52n;
    exp = biased - 1075;
  }
  let digits: string;
  let dp: number;
  if (exp >= 0) {
    digits = (mant << BigInt(exp)).toString();
    dp = digits.length;
  } else {
    digits = (mant * 5n ** BigInt(-exp)).toString();
    dp = digits.length + exp;
  }
  return { d: digits.replace(/0+$/, ""), dp };
}

/** The shortest digits that read back as x (JavaScript and Go agree on these). */
function shortestDecimal(x: number): Decimal {
  if (x === 0) return { d: "", dp: 0 };
  const [mantissa, exponent] = x.toExponential().split("e");
  return { d: mantissa!.replace(".", "").replace(/0+$/, ""), dp: Number(exponent) + 1 };
}

/** Rounds to nd digits, ties to even (strconv's decimal.Round). */
function roundDecimal(a: Decimal, nd: number): Decimal {
  if (nd < 0 || nd >= a.d.length) return a;
  const next = a.d[nd]!;
  const up = next === "5" && nd + 1 === a.d.length ? nd > 0 && Number(a.d[nd - 1]) % 2 === 1 : next >= "5";
  if (!up) return { d: a.d.slice(0, nd).replace(/0+$/, ""), dp: a.d.slice(0, nd) === "" ? 0 : a.dp };
  let i = nd - 1;
  while (i >= 0 && a.d[i] === "9") i--;
  if (i < 0) return { d: "1", dp: a.dp + 1 };
  return { d: a.d.slice(0, i) + String(Number(a.d[i]) + 1), dp: a.dp };
}

function fmtE(a: Decimal, prec: number, e: string): string {
  let out = a.d.length === 0 ? "0" : a.d[0]!;
  if (prec > 0) out += "." + a.d.slice(1, prec + 1).padEnd(prec, "0");
  const exp = a.d.length === 0 ? 0 : a.dp - 1;
  const abs = Math.abs(exp);
  return `${out}${e}${exp < 0 ? "-" : "+"}${abs < 10 ? `0${abs}` : String(abs)}`;
}

function fmtF(a: Decimal, prec: number): string {
  let out = a.dp > 0 ? a.d.slice(0, a.dp).padEnd(a.dp, "0") : "0";
  if (prec > 0) {
    out += ".";
    for (let i = 1; i <= prec; i++) {
      const j = a.dp + i - 1;
      out += j >= 0 && j < a.d.length ? a.d[j] : "0";
    }
  }
  return out;
}

/** strconv.FormatFloat(x, verb, prec, 64) for verbs e E f F g G; prec -1 means shortest. */
function formatFloat(x: number, verb: string, prec: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "+Inf" : "-Inf";
  const neg = x < 0 || Object.is(x, -0);
  const abs = Math.abs(x);
  const shortest = prec < 0;
  let a: Decimal;
  const lower = verb.toLowerCase();
  if (shortest) {
    a = shortestDecimal(abs);
    prec = lower === "e" ? Math.max(a.d.length - 1, 0) : lower === "f" ? Math.max(a.d.length - a.dp, 0) : a.d.length;
  } else {
    const exact = exactDecimal(abs);
    if (lower === "e") a = roundDecimal(exact, prec + 1);
    else if (lower === "f") a = roundDecimal(exact, exact.dp + prec);
    else {
      if (prec === 0) prec = 1;
      a = roundDecimal(exact, prec);
    }
  }
  let body: string;
  if (lower === "e") body = fmtE(a, prec, verb === "E" ? "E" : "e");
  else if (lower === "f") body = fmtF(a, prec);
  else {
    let eprec = prec;
    if (eprec > a.d.length && a.d.length >= a.dp) eprec = a.d.length;
    if (shortest) eprec = 6;
    const exp = a.dp - 1;
    if (exp < -4 || exp >= eprec) {
      body = fmtE(a, Math.min(prec, a.d.length) - 1, verb === "G" ? "E" : "e");
    } else {
      body = fmtF(a, Math.max((prec > a.dp ? a.d.length : prec) - a.dp, 0));
    }
  }
  return (neg ? "-" : "") + body;
}

// ---- the printer ----

class Printer {
  out = "";
  f: Flags = noFlags();

  private writePadding(n: number, zero: boolean): void {
    if (n > 0) this.out += (zero ? "0" : " ").repeat(n);
  }

  /** Pads s to the width; zero padding is only for numbers, which handle it themselves. */
  private pad(s: string): void {
    const n = this.f.width === null ? 0 : this.f.width - runeCount(s);
    if (this.f.minus) {
      this.out += s;
      this.writePadding(n, false);
    } else {
      this.writePadding(n, false);
      this.out += s;
    }
  }

  private padText(s: string): void {
    if (this.f.zero && this.f.width !== null) throw new UnsupportedFormat("zero padding of non-numbers");
    this.pad(s);
  }

  badVerb(verb: string, arg: GoValue): void {
    this.out += `%!${verb}(`;
    if (arg === null || arg === undefined) this.out += "<nil>";
    else {
      this.out += `${typeName(arg)}=`;
      this.printArg(arg, "v");
    }
    this.out += ")";
  }

  printArg(arg: GoValue, verb: string): void {
    if (arg === null || arg === undefined) {
      if (verb === "T" || verb === "v") this.padText("<nil>");
      else this.badVerb(verb, arg);
      return;
    }
    if (verb === "T") {
      this.padText(typeName(arg));
      return;
    }
    if (verb === "p") throw new UnsupportedFormat("%p");
    switch (typeof arg) {
      case "boolean":
        if (verb === "t" || verb === "v") this.padText(String(arg));
        else this.badVerb(verb, arg);
        return;
      case "bigint":
        this.printInteger(arg, verb);
        return;
      case "number":
        this.printFloat(arg, verb);
        return;
      case "string":
        this.printString(arg, verb);
        return;
    }
    if (Array.isArray(arg)) {
      this.out += "[";
      arg.forEach((v, i) => {
        if (i > 0) this.out += " ";
        this.printElement(v, verb);
      });
      this.out += "]";
      return;
    }
    if (isMap(arg)) {
      this.out += "map[";
      sortedKeys(arg).forEach((k, i) => {
        if (i > 0) this.out += " ";
        this.printArg(k, verb);
        this.out += ":";
        this.printElement(arg[k], verb);
      });
      this.out += "]";
    }
  }

  /** An element of a slice or map: a nil interface prints as <nil> whatever the verb. */
  private printElement(v: GoValue, verb: string): void {
    if (v === null || v === undefined) this.out += "<nil>";
    else this.printArg(v, verb);
  }

  private printInteger(v: bigint, verb: string): void {
    const f = this.f;
    let base: number;
    switch (verb) {
      case "v":
      case "d":
        base = 10;
        break;
      case "b":
        base = 2;
        break;
      case "o":
      case "O":
        base = 8;
        break;
      case "x":
      case "X":
        base = 16;
        break;
      case "c":
        this.padText(String.fromCodePoint(validRune(v)));
        return;
      case "q":
        this.padText(quoteRune(Number(v >= 0n && v <= 0x10ffffn ? v : 0xfffdn), f.plus));
        return;
      case "U": {
        const cp = v >= 0n && v <= 0x10ffffn ? Number(v) : -1;
        let s = `U+${(v < 0n ? -v : v).toString(16).toUpperCase().padStart(4, "0")}`;
        if (v < 0n) s = `U+${(v & 0xffffffffffffffffn).toString(16).toUpperCase()}`;
        if (f.sharp && cp >= 0 && isPrint(String.fromCodePoint(cp))) s += ` '${String.fromCodePoint(cp)}'`;
        this.pad(s);
        return;
      }
      default:
        this.badVerb(verb, v);
        return;
    }
    const negative = v < 0n;
    let digits = (negative ? -v : v).toString(base);
    if (verb === "X") digits = digits.toUpperCase();
    let prec = 0;
    if (f.prec !== null) {
      prec = f.prec;
      if (prec === 0 && v === 0n) {
        this.writePadding(f.width ?? 0, false);
        return;
      }
    } else if (f.zero && !f.minus && f.width !== null) {
      prec = f.width;
      if (negative || f.plus || f.space) prec--;
    }
    digits = digits.padStart(prec, "0");
    if (f.sharp) {
      if (verb === "b") digits = `0b${digits}`;
      else if (verb === "o" && !digits.startsWith("0")) digits = `0${digits}`;
      else if (verb === "x") digits = `0x${digits}`;
      else if (verb === "X") digits = `0X${digits}`;
    }
    if (verb === "O") digits = `0o${digits}`;
    if (negative) digits = `-${digits}`;
    else if (f.plus) digits = `+${digits}`;
    else if (f.space) digits = ` ${digits}`;
    this.pad(digits);
  }

  private printFloat(v: number, verb: string): void {
    const f = this.f;
    let num: string;
    switch (verb) {
      case "v":
        num = formatFloat(v, "g", f.prec ?? -1);
        break;
      case "g":
      case "G":
        num = formatFloat(v, verb, f.prec ?? -1);
        break;
      case "e":
      case "E":
      case "f":
      case "F":
        num = formatFloat(v, verb === "F" ? "f" : verb, f.prec ?? 6);
        break;
      case "b":
      case "x":
      case "X":
        throw new UnsupportedFormat(`%${verb} of floating-point numbers`);
      default:
        this.badVerb(verb, v);
        return;
    }
    if (f.sharp) throw new UnsupportedFormat(`%#${verb}`);
    if (num[0] !== "-" && num[0] !== "+") num = `+${num}`;
    if (f.space && num[0] === "+" && !f.plus) num = ` ${num.slice(1)}`;
    if (num[1] === "I" || num[1] === "N") {
      if (num[1] === "N" && !f.space && !f.plus) num = num.slice(1);
      this.pad(num);
      return;
    }
    if (f.plus || num[0] !== "+") {
      if (f.zero && !f.minus && f.width !== null && f.width > num.length) {
        this.out += num[0];
        this.writePadding(f.width - num.length, true);
        this.out += num.slice(1);
        return;
      }
      this.pad(num);
      return;
    }
    if (f.zero && !f.minus && f.width !== null && f.width > num.length - 1) {
      this.writePadding(f.width - (num.length - 1), true);
      this.out += num.slice(1);
      return;
    }
    this.pad(num.slice(1));
  }

  private printString(s: string, verb: string): void {
    const f = this.f;
    const truncated = f.prec === null ? s : [...s].slice(0, f.prec).join("");
    switch (verb) {
      case "v":
      case "s":
        this.padText(truncated);
        return;
      case "q":
        if (f.sharp && canBackquote(truncated)) this.padText(`\`${truncated}\``);
        else this.padText(quote(truncated, f.plus));
        return;
      case "x":
      case "X": {
        if (f.sharp || f.space) throw new UnsupportedFormat(`%${f.sharp ? "#" : " "}${verb} of strings`);
        let bytes = Buffer.from(s, "utf8");
        if (f.prec !== null) bytes = bytes.subarray(0, f.prec);
        const hex = bytes.toString("hex");
        this.padText(verb === "X" ? hex.toUpperCase() : hex);
        return;
      }
      default:
        this.badVerb(verb, s);
    }
  }
}

function validRune(v: bigint): number {
  if (v < 0n || v > 0x10ffffn) return 0xfffd;
  const n = Number(v);
  return n >= 0xd800 && n <= 0xdfff ? 0xfffd : n;
}

const isStringArg = (v: GoValue): boolean => typeof v === "string";

/** fmt.Sprint: spaces between operands when neither is a string. */
export function sprint(args: GoValue[]): string {
  const p = new Printer();
  args.forEach((a, i) => {
    if (i > 0 && !isStringArg(a) && !isStringArg(args[i - 1])) p.out += " ";
    p.printArg(a, "v");
  });
  return p.out;
}

/** fmt.Sprintln: spaces between all operands and a newline at the end. */
export function sprintln(args: GoValue[]): string {
  const p = new Printer();
  args.forEach((a, i) => {
    if (i > 0) p.out += " ";
    p.printArg(a, "v");
  });
  return `${p.out}\n`;
}

/** fmt.Sprintf. */
export function sprintf(format: string, args: GoValue[]): string {
  const p = new Printer();
  let argNum = 0;
  let i = 0;
  const end = format.length;
  const parseNum = (): number | null => {
    const start = i;
    while (i < end && format[i]! >= "0" && format[i]! <= "9") i++;
    return i > start ? Number(format.slice(start, i)) : null;
  };
  while (i < end) {
    const next = format.indexOf("%", i);
    if (next < 0) {
      p.out += format.slice(i);
      break;
    }
    p.out += format.slice(i, next);
    i = next + 1;
    const f = noFlags();
    flags: for (; i < end; i++) {
      switch (format[i]) {
        case "#":
          f.sharp = true;
          break;
        case "0":
          f.zero = !f.minus;
          break;
        case "+":
          f.plus = true;
          break;
        case "-":
          f.minus = true;
          f.zero = false;
          break;
        case " ":
          f.space = true;
          break;
        default:
          break flags;
      }
    }
    if (format[i] === "[" || format[i] === "*") throw new UnsupportedFormat(`"%${format[i]}" in printf formats`);
    f.width = parseNum();
    if (i + 1 < end && format[i] === ".") {
      i++;
      if (format[i] === "[" || format[i] === "*") throw new UnsupportedFormat(`"%.${format[i]}" in printf formats`);
      f.prec = parseNum() ?? 0;
    }
    if (i >= end) {
      p.out += "%!(NOVERB)";
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i)!);
    i += verb.length;
    if (verb === "%") {
      p.out += "%";
      continue;
    }
    if (verb === "v") {
      if (f.sharp) throw new UnsupportedFormat("%#v");
      f.plus = false;
    }
    if (argNum >= args.length) {
      p.out += `%!${verb}(MISSING)`;
      continue;
    }
    p.f = f;
    p.printArg(args[argNum++], verb);
  }
  if (argNum < args.length) {
    p.f = noFlags();
    p.out += "%!(EXTRA ";
    args.slice(argNum).forEach((a, k) => {
      if (k > 0) p.out += ", ";
      if (a === null || a === undefined) p.out += "<nil>";
      else {
        p.out += `${typeName(a)}=`;
        p.printArg(a, "v");
      }
    });
    p.out += ")";
  }
  return p.out;
}
