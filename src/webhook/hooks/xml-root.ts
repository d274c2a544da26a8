// The part of an XML body the reference decodes: mxj reads Go's token stream up to the first element, skipping
// what comes before it (a byte-order mark, text, comments, the declaration, a doctype), decodes that element, and
// never reads further, so whatever follows it (more elements, text, a broken tag) is ignored.

/** The text of the first element of `text`, from its "<" to the end of its closing tag. */
export function firstElement(text: string): string {
  for (let i = 0; ; ) {
    const lt = text.indexOf("<", i);
    if (lt < 0) throw new Error("EOF");
    const skipped = skipMarkup(text, lt);
    if (skipped !== undefined) {
      if (/^<\?xml\s/.test(text.slice(lt, lt + 6))) checkEncoding(text.slice(lt, skipped));
      i = skipped;
      continue;
    }
    if (text[lt + 1] === "/") throw new Error("XML syntax error: an end tag before any element");
    return text.slice(lt, elementEnd(text, lt));
  }
}

/** Where a comment, CDATA section, processing instruction or directive starting at `lt` ends; undefined for a tag. */
function skipMarkup(text: string, lt: number): number | undefined {
  const past = (end: string, from: number): number => {
    const at = text.indexOf(end, from);
    if (at < 0) throw new Error("EOF");
    return at + end.length;
  };
  if (text.startsWith("<!--", lt)) return past("-->", lt + 4);
  if (text.startsWith("<![CDATA[", lt)) return past("]]>", lt + 9);
  if (text.startsWith("<?", lt)) return past("?>", lt + 2);
  if (text.startsWith("<!", lt)) {
    // A doctype's internal subset ("[…]") may hold ">".
    const gt = past(">", lt);
    for (let i = lt + 2; i < gt; i++) if (text[i] === "[") return past(">", past("]", i));
    return gt;
  }
  return undefined;
}

/** Go's decoder declines a declared encoding other than UTF-8 (the reference sets no CharsetReader). */
function checkEncoding(declaration: string): void {
  const enc = /\sencoding\s*=\s*(["'])(.*?)\1/.exec(declaration)?.[2];
  if (enc !== undefined && enc !== "" && enc.toLowerCase() !== "utf-8") {
    throw new Error(`encoding ${JSON.stringify(enc)} declared but Decoder.CharsetReader is nil`);
  }
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
