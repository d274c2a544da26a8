// Lexer for Go text/template syntax ("{{" "}}" delimiters), following text/template/parse/lex.go:
// trim markers "{{- " and " -}}", comments "{{/* */}}", and the tokens inside actions.
// An error becomes an "error" item that ends the stream, so the parser reports errors in the
// order Go does (a parse error early in the file wins over a lexical error later).

export type ItemType =
  | "error"
  | "eof"
  | "text"
  | "leftDelim"
  | "rightDelim"
  | "space"
  | "identifier"
  | "keyword"
  | "field"
  | "variable"
  | "dot"
  | "string"
  | "rawString"
  | "charConstant"
  | "number"
  | "complex"
  | "bool"
  | "nil"
  | "char"
  | "pipe"
  | "assign"
  | "declare"
  | "leftParen"
  | "rightParen";

export interface Item {
  type: ItemType;
  /** Offset of the item in the input (UTF-16 units). */
  pos: number;
  val: string;
}

const KEYWORDS = new Set(["block", "break", "continue", "define", "else", "end", "if", "range", "template", "with"]);

const isSpace = (c: string | undefined): boolean => c === " " || c === "\t" || c === "\r" || c === "\n";
const isAlphaNumeric = (c: string | undefined): boolean => c !== undefined && /^[_\p{L}\p{Nd}]$/u.test(c);

/** The code point at `pos` as a string (one or two UTF-16 units), or undefined at the end. */
function charAt(input: string, pos: number): string | undefined {
  const cp = input.codePointAt(pos);
  return cp === undefined ? undefined : String.fromCodePoint(cp);
}

/** Go's %#U: U+0041 'A' (the quoted form only for printable characters). */
function describeRune(c: string): string {
  const cp = c.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase().padStart(4, "0");
  return /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(c) ? `U+${hex} '${c}'` : `U+${hex}`;
}

export function lex(input: string): Item[] {
  const items: Item[] = [];
  let pos = 0;
  let parenDepth = 0;

  const emit = (type: ItemType, start: number, end: number): void => {
    items.push({ type, pos: start, val: input.slice(start, end) });
  };
  const fail = (start: number, message: string): Item[] => {
    items.push({ type: "error", pos: start, val: message });
    return items;
  };
  const hasLeftTrimMarker = (p: number): boolean => input[p] === "-" && isSpace(input[p + 1]);
  const hasRightTrimMarker = (p: number): boolean => isSpace(input[p]) && input[p + 1] === "-";
  const atRightDelim = (p: number): { delim: boolean; trim: boolean } => {
    if (input.startsWith("}}", p)) return { delim: true, trim: false };
    if (hasRightTrimMarker(p) && input.startsWith("}}", p + 2)) return { delim: true, trim: true };
    return { delim: false, trim: false };
  };
  const skipSpaces = (p: number): number => {
    while (isSpace(input[p])) p++;
    return p;
  };
  const atTerminator = (p: number): boolean => {
    const c = input[p];
    if (c === undefined || isSpace(c) || ".,|:()".includes(c)) return true;
    return input.startsWith("}}", p);
  };
  const scanAlphaNumeric = (p: number): number => {
    for (;;) {
      const c = charAt(input, p);
      if (!isAlphaNumeric(c)) return p;
      p += c!.length;
    }
  };

  for (;;) {
    // Text up to the next action.
    const x = input.indexOf("{{", pos);
    if (x < 0) {
      if (pos < input.length) emit("text", pos, input.length);
      items.push({ type: "eof", pos: input.length, val: "" });
      return items;
    }
    let textEnd = x;
    if (hasLeftTrimMarker(x + 2)) while (textEnd > pos && isSpace(input[textEnd - 1])) textEnd--;
    if (textEnd > pos) emit("text", pos, textEnd);

    // The left delimiter, or a comment.
    const afterMarker = hasLeftTrimMarker(x + 2) ? 2 : 0;
    if (input.startsWith("/*", x + 2 + afterMarker)) {
      const start = x + 2 + afterMarker;
      const close = input.indexOf("*/", start + 2);
      if (close < 0) return fail(start, "unclosed comment");
      let p = close + 2;
      const { delim, trim } = atRightDelim(p);
      if (!delim) return fail(start, "comment ends before closing delimiter");
      p += (trim ? 2 : 0) + 2;
      pos = trim ? skipSpaces(p) : p;
      continue;
    }
    emit("leftDelim", x, x + 2);
    pos = x + 2 + afterMarker;
    parenDepth = 0;

    // Inside the action.
    for (;;) {
      const { delim, trim } = atRightDelim(pos);
      if (delim) {
        if (parenDepth !== 0) return fail(pos, "unclosed left paren");
        if (trim) pos += 2;
        emit("rightDelim", pos, pos + 2);
        pos += 2;
        if (trim) pos = skipSpaces(pos);
        break;
      }
      const start = pos;
      const c = charAt(input, pos);
      if (c === undefined) return fail(start, "unclosed action");
      if (isSpace(c)) {
        let p = skipSpaces(pos);
        const spaces = p - pos;
        // A space followed by "-}}" belongs to the closing delimiter.
        if (hasRightTrimMarker(p - 1) && input.startsWith("}}", p + 1)) {
          p--;
          if (spaces === 1) {
            pos = p;
            continue;
          }
        }
        emit("space", start, p);
        pos = p;
        continue;
      }
      pos += c.length;
      switch (c) {
        case "=":
          emit("assign", start, pos);
          continue;
        case ":":
          if (input[pos] !== "=") return fail(start, "expected :=");
          pos++;
          emit("declare", start, pos);
          continue;
        case "|":
          emit("pipe", start, pos);
          continue;
        case '"': {
          for (;;) {
            const d = input[pos];
            if (d === "\\") {
              pos++;
              if (input[pos] === undefined || input[pos] === "\n") return fail(start, "unterminated quoted string");
              pos++;
            } else if (d === undefined || d === "\n") {
              return fail(start, "unterminated quoted string");
            } else {
              pos++;
              if (d === '"') break;
            }
          }
          emit("string", start, pos);
          continue;
        }
        case "`": {
          const close = input.indexOf("`", pos);
          if (close < 0) return fail(start, "unterminated raw quoted string");
          pos = close + 1;
          emit("rawString", start, pos);
          continue;
        }
        case "'": {
          for (;;) {
            const d = input[pos];
            if (d === "\\") {
              pos++;
              if (input[pos] === undefined || input[pos] === "\n") return fail(start, "unterminated character constant");
              pos++;
            } else if (d === undefined || d === "\n") {
              return fail(start, "unterminated character constant");
            } else {
              pos++;
              if (d === "'") break;
            }
          }
          emit("charConstant", start, pos);
          continue;
        }
        case "$":
        case ".": {
          if (c === "." && input[pos] !== undefined && input[pos]! >= "0" && input[pos]! <= "9") break; // a number
          if (atTerminator(pos)) {
            emit(c === "$" ? "variable" : "dot", start, pos);
            continue;
          }
          pos = scanAlphaNumeric(pos);
          if (!atTerminator(pos)) return fail(start, `bad character ${describeRune(charAt(input, pos)!)}`);
          emit(c === "$" ? "variable" : "field", start, pos);
          continue;
        }
        case "(":
          parenDepth++;
          emit("leftParen", start, pos);
          continue;
        case ")":
          parenDepth--;
          if (parenDepth < 0) return fail(start, "unexpected right paren");
          emit("rightParen", start, pos);
          continue;
      }
      if (c === "." || c === "+" || c === "-" || (c >= "0" && c <= "9")) {
        pos = start;
        const scanned = scanNumber(input, pos);
        pos = scanned.end;
        if (!scanned.ok) return fail(start, `bad number syntax: ${JSON.stringify(input.slice(start, pos))}`);
        if (input[pos] === "+" || input[pos] === "-") {
          const imaginary = scanNumber(input, pos);
          pos = imaginary.end;
          if (!imaginary.ok || input[pos - 1] !== "i") {
            return fail(start, `bad number syntax: ${JSON.stringify(input.slice(start, pos))}`);
          }
          emit("complex", start, pos);
          continue;
        }
        emit("number", start, pos);
        continue;
      }
      if (isAlphaNumeric(c)) {
        pos = scanAlphaNumeric(pos);
        if (!atTerminator(pos)) return fail(start, `bad character ${describeRune(charAt(input, pos)!)}`);
        const word = input.slice(start, pos);
        if (KEYWORDS.has(word)) emit("keyword", start, pos);
        else if (word === "true" || word === "false") emit("bool", start, pos);
        else if (word === "nil") emit("nil", start, pos);
        else emit("identifier", start, pos);
        continue;
      }
      if (c.length === 1 && c >= " " && c <= "~") {
        emit("char", start, pos);
        continue;
      }
      return fail(start, `unrecognized character in action: ${describeRune(c)}`);
    }
  }
}

/** Go's scanNumber: sign, base prefix, digits, fraction, exponent, imaginary suffix. */
function scanNumber(input: string, pos: number): { ok: boolean; end: number } {
  const accept = (valid: string): boolean => {
    const c = input[pos];
    if (c !== undefined && valid.includes(c)) {
      pos++;
      return true;
    }
    return false;
  };
  const acceptRun = (valid: string): void => {
    while (accept(valid));
  };
  accept("+-");
  let digits = "0123456789_";
  if (accept("0")) {
    if (accept("xX")) digits = "0123456789abcdefABCDEF_";
    else if (accept("oO")) digits = "01234567_";
    else if (accept("bB")) digits = "01_";
  }
  acceptRun(digits);
  if (accept(".")) acceptRun(digits);
  if (digits.length === 11 && accept("eE")) {
    accept("+-");
    acceptRun("0123456789_");
  }
  if (digits.length === 23 && accept("pP")) {
    accept("+-");
    acceptRun("0123456789_");
  }
  accept("i");
  const next = charAt(input, pos);
  if (isAlphaNumeric(next)) return { ok: false, end: pos + next!.length };
  return { ok: true, end: pos };
}
