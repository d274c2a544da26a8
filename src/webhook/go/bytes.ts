// Go strings are bytes; ours are UTF-16. Request bytes that are not valid UTF-8 are carried in
// JavaScript strings as lone surrogates U+DC80–U+DCFF, one per byte (Python's "surrogateescape"),
// and turned back into the same bytes where a value leaves the server (argv, environment,
// files, signatures). Valid UTF-8 never decodes to a lone surrogate, so the round trip is exact.
import { isUtf8 } from "node:buffer";

const ESCAPED = /[\udc80-\udcff]/u;

/**
 * Bytes as a string: valid UTF-8 as text, every other byte as its escape. Written as UTF-16 code
 * units into one buffer: linear in time and memory, however many bytes need escaping.
 */
export function decodeBytes(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString("utf8");
  const out = Buffer.allocUnsafe(bytes.length * 2);
  let o = 0;
  const unit = (u: number): void => {
    out[o++] = u & 0xff;
    out[o++] = u >> 8;
  };
  let i = 0;
  while (i < bytes.length) {
    const n = sequenceLength(bytes, i);
    const c = bytes[i]!;
    if (n === 0) unit(0xdc00 + c);
    else if (n === 1) unit(c);
    else if (n === 2) unit(((c & 0x1f) << 6) | (bytes[i + 1]! & 0x3f));
    else if (n === 3) unit(((c & 0x0f) << 12) | ((bytes[i + 1]! & 0x3f) << 6) | (bytes[i + 2]! & 0x3f));
    else {
      const cp = (((c & 0x07) << 18) | ((bytes[i + 1]! & 0x3f) << 12) | ((bytes[i + 2]! & 0x3f) << 6) | (bytes[i + 3]! & 0x3f)) - 0x10000;
      unit(0xd800 + (cp >> 10));
      unit(0xdc00 + (cp & 0x3ff));
    }
    i += n === 0 ? 1 : n;
  }
  return out.toString("utf16le", 0, o);
}

/** A string of byte values (Node reads request heads as latin1) decoded as bytes. */
export function decodeLatin1(s: string): string {
  return /[^\x00-\x7f]/.test(s) ? decodeBytes(Buffer.from(s, "latin1")) : s;
}

/** The bytes a string stands for: UTF-8, with escaped bytes restored (one pass into one buffer). */
export function encodeBytes(s: string): Buffer {
  if (!ESCAPED.test(s)) return Buffer.from(s, "utf8");
  const out = Buffer.allocUnsafe(s.length * 3);
  let o = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
      out[o++] = 0xf0 | (cp >> 18);
      out[o++] = 0x80 | ((cp >> 12) & 0x3f);
      out[o++] = 0x80 | ((cp >> 6) & 0x3f);
      out[o++] = 0x80 | (cp & 0x3f);
      i++;
    } else if (c >= 0xdc80 && c <= 0xdcff) out[o++] = c - 0xdc00;
    else if (c < 0x80) out[o++] = c;
    else if (c < 0x800) {
      out[o++] = 0xc0 | (c >> 6);
      out[o++] = 0x80 | (c & 0x3f);
    } else {
      // A lone surrogate is written as U+FFFD, as Buffer.from(s, "utf8") writes it.
      const u = c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
      out[o++] = 0xe0 | (u >> 12);
      out[o++] = 0x80 | ((u >> 6) & 0x3f);
      out[o++] = 0x80 | (u & 0x3f);
    }
  }
  return out.subarray(0, o);
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
