// The Content-Type Go's net/http picks for a response that did not set one (http.DetectContentType): the WHATWG
// MIME sniffing patterns Go checks, in Go's order, over the first 512 bytes. A hook's output or response-message
// that happens to start like one of them ("BM…", "ID3…") gets that type from the reference too.

/** Matches `data` (`start`: the first byte after leading whitespace) to a type, or undefined. */
type Signature = (data: Buffer, start: number) => string | undefined;

const bytes = (s: string): Buffer => Buffer.from(s, "latin1");

/** `data` starts with `sig` exactly. */
const exact =
  (sig: string, type: string): Signature =>
  (data) =>
    data.subarray(0, sig.length).equals(bytes(sig)) ? type : undefined;

/** `data` (after whitespace with `skipSpace`) ANDed with `mask` byte by byte is `pattern`. */
function masked(mask: string, pattern: string, type: string, skipSpace = false): Signature {
  const m = bytes(mask);
  const p = bytes(pattern);
  return (data, start) => {
    const d = skipSpace ? data.subarray(start) : data;
    if (d.length < p.length) return undefined;
    for (let i = 0; i < p.length; i++) if ((d[i]! & m[i]!) !== p[i]) return undefined;
    return type;
  };
}

/** An HTML tag, case-insensitive, after whitespace, followed by a space or ">". */
function html(tag: string): Signature {
  const t = bytes(tag);
  return (data, start) => {
    const d = data.subarray(start);
    if (d.length < t.length + 1) return undefined;
    for (let i = 0; i < t.length; i++) {
      const want = t[i]!;
      const got = want >= 0x41 && want <= 0x5a ? d[i]! & 0xdf : d[i]!;
      if (got !== want) return undefined;
    }
    const next = d[t.length];
    return next === 0x20 || next === 0x3e ? "text/html; charset=utf-8" : undefined;
  };
}

/** An ISO base media file whose "ftyp" box names an "mp4" brand (the major brand's version skipped). */
const mp4: Signature = (data) => {
  if (data.length < 12) return undefined;
  const box = data.readUInt32BE(0);
  if (data.length < box || box % 4 !== 0 || data.toString("latin1", 4, 8) !== "ftyp") return undefined;
  for (let at = 8; at < box; at += 4) {
    if (at !== 12 && data.toString("latin1", at, at + 3) === "mp4") return "video/mp4";
  }
  return undefined;
};

/** No byte that marks binary data. */
const text: Signature = (data, start) => {
  for (let i = start; i < data.length; i++) {
    const b = data[i]!;
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return undefined;
  }
  return "text/plain; charset=utf-8";
};

const RIFF_MASK = "\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff";

const SIGNATURES: Signature[] = [
  ...[
    "<!DOCTYPE HTML",
    "<HTML",
    "<HEAD",
    "<SCRIPT",
    "<IFRAME",
    "<H1",
    "<DIV",
    "<FONT",
    "<TABLE",
    "<A",
    "<STYLE",
    "<TITLE",
    "<B",
    "<BODY",
    "<BR",
    "<P",
    "<!--",
  ].map(html),
  masked("\xff\xff\xff\xff\xff", "<?xml", "text/xml; charset=utf-8", true),
  exact("%PDF-", "application/pdf"),
  exact("%!PS-Adobe-", "application/postscript"),
  masked("\xff\xff\x00\x00", "\xfe\xff\x00\x00", "text/plain; charset=utf-16be"),
  masked("\xff\xff\x00\x00", "\xff\xfe\x00\x00", "text/plain; charset=utf-16le"),
  exact("\xef\xbb\xbf", "text/plain; charset=utf-8"),
  exact("\x00\x00\x01\x00", "image/x-icon"),
  exact("\x00\x00\x02\x00", "image/x-icon"),
  exact("BM", "image/bmp"),
  exact("GIF87a", "image/gif"),
  exact("GIF89a", "image/gif"),
  masked(`${RIFF_MASK}\xff\xff`, "RIFF\x00\x00\x00\x00WEBPVP", "image/webp"),
  exact("\x89PNG\r\n\x1a\n", "image/png"),
  exact("\xff\xd8\xff", "image/jpeg"),
  masked(RIFF_MASK, "FORM\x00\x00\x00\x00AIFF", "audio/aiff"),
  masked("\xff\xff\xff", "ID3", "audio/mpeg"),
  masked("\xff\xff\xff\xff\xff", "OggS\x00", "application/ogg"),
  masked("\xff".repeat(8), "MThd\x00\x00\x00\x06", "audio/midi"),
  masked(RIFF_MASK, "RIFF\x00\x00\x00\x00AVI ", "video/avi"),
  masked(RIFF_MASK, "RIFF\x00\x00\x00\x00WAVE", "audio/wave"),
  mp4,
  exact("\x1a\x45\xdf\xa3", "video/webm"),
  masked(`${"\x00".repeat(34)}\xff\xff`, `${"\x00".repeat(34)}LP`, "application/vnd.ms-fontobject"),
  exact("\x00\x01\x00\x00", "font/ttf"),
  exact("OTTO", "font/otf"),
  exact("ttcf", "font/collection"),
  exact("wOFF", "font/woff"),
  exact("wOF2", "font/woff2"),
  exact("\x1f\x8b\x08", "application/x-gzip"),
  exact("PK\x03\x04", "application/zip"),
  exact("Rar!\x1a\x07\x00", "application/x-rar-compressed"),
  exact("Rar!\x1a\x07\x01\x00", "application/x-rar-compressed"),
  exact("\x00asm", "application/wasm"),
  text,
];

export function detectContentType(body: string | Buffer): string {
  const data = (typeof body === "string" ? Buffer.from(body.slice(0, 512), "utf8") : body).subarray(0, 512);
  let start = 0;
  while (start < data.length && [0x09, 0x0a, 0x0c, 0x0d, 0x20].includes(data[start]!)) start++;
  for (const signature of SIGNATURES) {
    const type = signature(data, start);
    if (type !== undefined) return type;
  }
  return "application/octet-stream";
}
