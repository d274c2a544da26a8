// Go's canonical MIME header keys.

/** Go's textproto.CanonicalMIMEHeaderKey: "x-hub-signature" → "X-Hub-Signature". */
export function canonicalHeaderKey(name: string): string {
  let upper = true;
  let out = "";
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    // A name with a byte that is not a header token character is returned unchanged, as in Go.
    if (c === 0x20 || c > 0x7e || c < 0x21 || c === 0x3a) return name;
    let ch = name[i]!;
    if (upper && c >= 0x61 && c <= 0x7a) ch = String.fromCharCode(c - 32);
    else if (!upper && c >= 0x41 && c <= 0x5a) ch = String.fromCharCode(c + 32);
    out += ch;
    upper = c === 0x2d;
  }
  return out;
}
