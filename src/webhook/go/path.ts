// Go's URL path and query unescaping, and gorilla/mux's path cleaning, over strings of bytes.
import { decodeBytes, decodeLatin1 } from "./bytes.js";

/** gorilla/mux's path cleaning: collapses "//", "/./" and "/../", keeping a trailing slash. */
export function cleanPath(p: string): string {
  if (p === "") return "/";
  const parts: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  let out = "/" + parts.join("/");
  if (p.endsWith("/") && out !== "/") out += "/";
  return out;
}

/** Go's URL path unescaping over the target's bytes: %XX to bytes; undefined for a malformed escape (Go answers 400). */
export function pathUnescape(p: string): string | undefined {
  if (/%(?![0-9a-fA-F]{2})/.test(p)) return undefined;
  return decodeBytes(
    Buffer.from(
      p.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
      "latin1",
    ),
  );
}

/** Go's url.QueryUnescape over a string of bytes (one char per byte); undefined for a malformed escape. */
export function queryUnescape(s: string): string | undefined {
  if (!s.includes("%") && !s.includes("+")) return decodeLatin1(s);
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x2b) bytes.push(0x20);
    else if (c === 0x25) {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(c & 0xff);
  }
  return decodeBytes(Buffer.from(bytes));
}
