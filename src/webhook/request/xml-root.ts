// The part of an XML body the reference decodes: mxj reads Go's token stream up to the first element, skipping
// what comes before it (a byte-order mark, text, comments, processing instructions, a doctype) once Go's decoder
// accepted it, decodes that element, and never reads further: whatever follows it is ignored. Every step here is
// linear in the body.

/** The text of the first element of `text`, from its "<" to the end of its closing tag; Error as Go refuses. */
export function firstElement(text: string): string {
  for (let i = 0; ; ) {
    const lt = text.indexOf("<", i);
    checkText(text, i, lt < 0 ? text.length : lt);
    if (lt < 0) throw new Error("EOF");
    const skipped = skipMarkup(text, lt, true);
    if (skipped !== undefined) {
      i = skipped;
      continue;
    }
    if (text[lt + 1] === "/") throw new Error("XML syntax error: an end tag before any element");
    if (!NAME_START.test(text[lt + 1] ?? "")) throw new Error("XML syntax error: expected an element name after <");
    return text.slice(lt, elementEnd(text, lt));
  }
}

const NAME_START = /^[A-Za-z_:\u00c0-\ufffd]$/;

/** Text outside markup as Go's decoder reads it: XML characters only, entities it knows, no "]]>". */
function checkText(text: string, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x26) {
      const semi = text.indexOf(";", i);
      const name = semi < 0 || semi > to ? "" : text.slice(i + 1, semi);
      if (xmlEntity(name) === undefined) throw new Error(`XML syntax error: invalid character entity &${name.slice(0, 20)}`);
      i = semi;
    } else if (c === 0x5d && text.startsWith("]]>", i)) {
      throw new Error("XML syntax error: unescaped ]]> not in CDATA section");
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < to) {
      i++; // a pair: a character beyond U+FFFF (a lone surrogate cannot come from UTF-8)
    } else if (!xmlCharacter(c)) {
      throw new Error(`XML syntax error: illegal character code U+${c.toString(16).toUpperCase().padStart(4, "0")}`);
    }
  }
}

const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", apos: "'", quot: '"' };

/** What `&name;` stands for as Go's decoder reads it (the five entities, character references); undefined if refused. */
export function xmlEntity(name: string): string | undefined {
  if (Object.hasOwn(ENTITIES, name)) return ENTITIES[name];
  const m = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(name);
  if (!m) return undefined;
  const code = m[1] !== undefined ? parseInt(m[1], 16) : Number(m[2]);
  // Go turns a surrogate's number into U+FFFD (string(rune(n))), then checks the character.
  const char = code >= 0xd800 && code <= 0xdfff ? 0xfffd : code;
  return xmlCharacter(char) ? String.fromCodePoint(char) : undefined;
}

/** A character Go accepts in XML (its isInCharacterRange); a UTF-16 surrogate is not one. */
function xmlCharacter(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

/**
 * Where a comment, CDATA section, processing instruction or directive starting at `lt` ends (undefined for a tag),
 * refused where Go's decoder refuses it. With `prolog`, an <?xml?> declaration is checked as Go checks it.
 */
function skipMarkup(text: string, lt: number, prolog = false): number | undefined {
  const past = (end: string, from: number): number => {
    const at = text.indexOf(end, from);
    if (at < 0) throw new Error("EOF");
    return at + end.length;
  };
  if (text.startsWith("<!--", lt)) {
    const end = past("--", lt + 4);
    if (text[end] !== ">") throw new Error('XML syntax error: invalid sequence "--" not allowed in comments');
    return end + 1;
  }
  if (text.startsWith("<![", lt)) {
    if (!text.startsWith("<![CDATA[", lt)) throw new Error("XML syntax error: invalid <![ sequence");
    return past("]]>", lt + 9);
  }
  if (text.startsWith("<!-", lt)) throw new Error("XML syntax error: invalid sequence <!- not part of <!--");
  if (text.startsWith("<?", lt)) {
    const end = past("?>", lt + 2);
    const target = /^[A-Za-z_:][\w.:-]*/.exec(text.slice(lt + 2, Math.min(end, lt + 66)))?.[0];
    if (target === undefined) throw new Error("XML syntax error: expected target name after <?");
    if (prolog && target === "xml") checkDeclaration(text.slice(lt + 5, end - 2));
    return end;
  }
  if (text.startsWith("<!", lt)) {
    if (text[lt + 2] === ">") throw new Error("XML syntax error: an empty <!> directive");
    return directiveEnd(text, lt + 2);
  }
  return undefined;
}

/** Go reads a declaration's version and encoding by looking for `name=` and a quote, wherever they stand. */
function checkDeclaration(content: string): void {
  const version = declared(content, "version");
  if (version !== "" && version !== "1.0") throw new Error(`unsupported version ${JSON.stringify(version)}; only version 1.0 is supported`);
  const enc = declared(content, "encoding");
  if (enc !== "" && enc.toLowerCase() !== "utf-8") throw new Error(`encoding ${JSON.stringify(enc)} declared but Decoder.CharsetReader is nil`);
}

function declared(content: string, param: string): string {
  const key = `${param}=`;
  for (let i = 0; ; ) {
    const k = content.indexOf(key, i);
    if (k < 0 || k + key.length >= content.length) return "";
    const quote = content[k + key.length]!;
    i = k + key.length + 1;
    if (quote === "'" || quote === '"') {
      const end = content.indexOf(quote, i);
      return end < 0 ? "" : content.slice(i, end);
    }
  }
}

/** The end of a directive's body starting at `from`: its ">" outside quotes and nested "<…>", comments skipped. */
function directiveEnd(text: string, from: number): number {
  let depth = 0;
  let quote = "";
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (quote !== "") {
      if (c === quote) quote = "";
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === ">") {
      if (depth === 0) return i + 1;
      depth--;
    } else if (c === "<") {
      if (text.startsWith("<!--", i)) {
        const end = text.indexOf("-->", i + 4);
        if (end < 0) break;
        i = end + 2;
      } else {
        depth++;
      }
    }
  }
  throw new Error("EOF");
}

/** The index just past the element starting at `start`; the text's end when it is not closed (the parser says why). */
function elementEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; ; ) {
    const lt = text.indexOf("<", i);
    if (lt < 0) return text.length;
    let skipped: number | undefined;
    try {
      skipped = skipMarkup(text, lt);
    } catch {
      return text.length;
    }
    if (skipped !== undefined) {
      i = skipped;
      continue;
    }
    const gt = tagEnd(text, lt);
    if (gt < 0) return text.length;
    if (text[lt + 1] === "/") depth--;
    else if (text[gt - 1] !== "/") depth++;
    i = gt + 1;
    if (depth === 0) return i;
  }
}

/** The ">" that ends the tag starting at `lt`, past quoted attribute values; -1 when there is none. */
function tagEnd(text: string, lt: number): number {
  for (let i = lt + 1; i < text.length; i++) {
    const c = text[i];
    if (c === ">") return i;
    if (c === '"' || c === "'") {
      i = text.indexOf(c, i + 1);
      if (i < 0) return -1;
    }
  }
  return -1;
}
