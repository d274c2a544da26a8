// Go strings are bytes; ours are UTF-16. Request bytes that are not valid UTF-8 are carried in
// JavaScript strings as lone surrogates U+DC80–U+DCFF, one per byte (Python's "surrogateescape"),
// and turned back into the same bytes where a value leaves the server (argv, environment,
// files, signatures). Valid UTF-8 never decodes to a lone surrogate, so the round trip is exact.
import { isUtf8 } from "node:buffer";

const ESCAPED = /[\udc80-\udcff]/u;

/** Bytes as a string: valid UTF-8 as text, every other byte as its escape. */
export function decodeBytes(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString("utf8");
  let out = "";
  let i = 0;
  while (i < bytes.length) {
    const n = sequenceLength(bytes, i);
    if (n === 0) {
      out += String.fromCharCode(0xdc00 + bytes[i]!);
      i++;
    } else {
      out += bytes.toString("utf8", i, i + n);
      i += n;
    }
  }
  return out;
}

/** A string of byte values (Node reads request heads as latin1) decoded as bytes. */
export function decodeLatin1(s: string): string {
  return /[^\x00-\x7f]/.test(s) ? decodeBytes(Buffer.from(s, "latin1")) : s;
}

/** The bytes a string stands for: UTF-8, with escaped bytes restored. */
export function encodeBytes(s: string): Buffer {
  if (!ESCAPED.test(s)) return Buffer.from(s, "utf8");
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc80 || c > 0xdcff) continue;
    const prev = i > 0 ? s.charCodeAt(i - 1) : 0;
    if (prev >= 0xd800 && prev <= 0xdbff) continue; // the low half of a pair
    parts.push(Buffer.from(s.slice(start, i), "utf8"), Buffer.of(c - 0xdc00));
    start = i + 1;
  }
  parts.push(Buffer.from(s.slice(start), "utf8"));
  return Buffer.concat(parts);
}

/** Whether the string carries bytes that are not valid UTF-8. */
export function hasRawBytes(s: string): boolean {
  return ESCAPED.test(s);
}

/** Escaped bytes as U+FFFD, one each, as Go's decoders (JSON, range over a string) see them. */
export function replaceRawBytes(s: string): string {
  return ESCAPED.test(s) ? s.replace(/[\udc80-\udcff]/gu, "\ufffd") : s;
}

/** Length of the valid UTF-8 sequence at i (shortest form, no surrogates, ≤ U+10FFFF), or 0. */
function sequenceLength(b: Buffer, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number): boolean => i + k < b.length && (b[i + k]! & 0xc0) === 0x80;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xe0 && c1 < 0xa0) return 0;
    if (c === 0xed && c1 >= 0xa0) return 0;
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xf0 && c1 < 0x90) return 0;
    if (c === 0xf4 && c1 >= 0x90) return 0;
    return 4;
  }
  return 0;
}

/** humanize.IBytes as the reference's request log uses it: "15 B", "1.5 KiB". */
export function iBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  const e = Math.min(Math.floor(Math.log(n) / Math.log(1024)), units.length - 1);
  const val = Math.floor((n / 1024 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}
