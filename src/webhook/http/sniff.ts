// The Content-Type Go's net/http picks for a response that did not set one (http.DetectContentType),
// for the kinds of output hooks produce: HTML, XML, PDF, common images, text or binary.
const HTML_TAGS = ["<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME", "<H1", "<DIV", "<FONT", "<TABLE", "<A", "<STYLE", "<TITLE", "<B", "<BODY", "<BR", "<P", "<!--"];

const PLAIN = /^[\t\n\r\x20-\x7e]*$/;

export function detectContentType(body: string | Buffer): string {
  if (typeof body === "string") {
    const head = body.slice(0, 512);
    // Fast path: printable ASCII that cannot start a signature below.
    if (PLAIN.test(head) && !/^\s*<|^%PDF-|^GIF8/.test(head)) return "text/plain; charset=utf-8";
  }
  const data = (typeof body === "string" ? Buffer.from(body.slice(0, 512), "utf8") : body).subarray(0, 512);
  let i = 0;
  while (i < data.length && (data[i] === 0x09 || data[i] === 0x0a || data[i] === 0x0c || data[i] === 0x0d || data[i] === 0x20)) i++;
  const rest = data.subarray(i).toString("latin1");
  const upper = rest.slice(0, 16).toUpperCase();
  for (const tag of HTML_TAGS) {
    if (upper.startsWith(tag)) {
      const next = rest[tag.length];
      if (next === " " || next === ">") return "text/html; charset=utf-8";
    }
  }
  if (rest.startsWith("<?xml")) return "text/xml; charset=utf-8";
  const raw = data.toString("latin1");
  if (raw.startsWith("%PDF-")) return "application/pdf";
  if (raw.startsWith("\x89PNG\r\n\x1a\n")) return "image/png";
  if (raw.startsWith("\xff\xd8\xff")) return "image/jpeg";
  if (raw.startsWith("GIF87a") || raw.startsWith("GIF89a")) return "image/gif";
  if (raw.startsWith("PK\x03\x04")) return "application/zip";
  if (raw.startsWith("\x1f\x8b\x08")) return "application/x-gzip";
  for (const b of data) {
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return "application/octet-stream";
  }
  return "text/plain; charset=utf-8";
}
