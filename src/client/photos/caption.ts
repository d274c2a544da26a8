// A caption burned into the picture: the date taken (EXIF, in the caption's format) and the place (place.ts), in
// the font the project ships (assets/fonts, DejaVu Sans Bold, open licence: the same look on a Pi without fonts),
// white on a soft black outline so it reads on light and dark photos alike, small, in the bottom-right corner.
// The text comes from the photo's metadata: control characters go, Pango markup is escaped, the length is bounded.
import { fileURLToPath } from "node:url";
import type { OverlayOptions, Sharp } from "sharp";
import { UNPRINTABLE } from "../../shared/unprintable.js";
import { FORMAT_TOKENS, type Look } from "./look.js";

export const FONT_FILE = fileURLToPath(new URL("../../../../assets/fonts/DejaVuSans-Bold.ttf", import.meta.url));
const FONT = "DejaVu Sans Bold";
/** A caption longer than this is cut: it is a line in a corner, not a text. */
const MAX_CHARS = 80;

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** The date (ms read as UTC clock time, as EXIF dates are kept) in the caption's strftime-like format. */
export function formatDate(ms: number, format: string): string {
  const d = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, "0");
  const parts: Record<string, string> = {
    "%Y": String(d.getUTCFullYear()),
    "%m": two(d.getUTCMonth() + 1),
    "%d": two(d.getUTCDate()),
    "%e": String(d.getUTCDate()),
    "%B": MONTHS[d.getUTCMonth()]!,
    "%b": MONTHS[d.getUTCMonth()]!.slice(0, 3),
    "%H": two(d.getUTCHours()),
    "%M": two(d.getUTCMinutes()),
    "%%": "%",
  };
  return format.replace(FORMAT_TOKENS, (t) => parts[t]!);
}

/** The caption's text, or undefined when the photo has none of what was asked. */
export function captionText(caption: NonNullable<Look["caption"]>, takenMs: number | undefined, place: string | undefined): string | undefined {
  const parts: string[] = [];
  if (caption.date && takenMs !== undefined) parts.push(formatDate(takenMs, caption.format));
  if (caption.place && place) parts.push(place);
  const text = parts.join(" · ").replace(UNPRINTABLE, "").trim();
  if (!text) return undefined;
  return [...text].length > MAX_CHARS ? `${[...text].slice(0, MAX_CHARS - 1).join("")}…` : text;
}

function escapeMarkup(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The text's height in pixels for a picture `height` tall: small, but legible across a room. */
export function captionSize(height: number): number {
  return Math.max(12, Math.round(height * 0.035));
}

/** The caption as two overlays (outline, then text) for a width × height picture, bottom-right. */
export async function captionOverlays(sharp: typeof import("sharp").default, text: string, width: number, height: number): Promise<OverlayOptions[]> {
  const px = captionSize(height);
  const margin = Math.round(px * 0.8);
  const pad = Math.max(3, Math.round(px / 5));
  const render = (colour: string): Sharp =>
    sharp({
      text: {
        text: `<span foreground="${colour}">${escapeMarkup(text)}</span>`,
        font: `${FONT} ${px}`,
        fontfile: FONT_FILE,
        dpi: 72,
        rgba: true,
        width: Math.max(1, width - 2 * margin),
        wrap: "word-char",
      },
    });
  const white = await render("white")
    .extend({ top: pad, bottom: pad, left: pad, right: pad, background: { r: 0, g: 0, b: 0, alpha: 0 } })
    .png()
    .toBuffer({ resolveWithObject: true });
  const { width: w, height: h } = white.info;
  // The outline: the text's shape, widened by a blur whose edge is then made dense again.
  if (w > width || h > height) return [];
  // Two pipelines: libvips would blur before extracting the channel, and linear() leaves an alpha channel alone.
  const shape = await sharp(white.data).extractChannel(3).raw().toBuffer();
  const alpha = await sharp(shape, { raw: { width: w, height: h, channels: 1 } })
    .blur(Math.max(1, pad / 2.5))
    .linear(8, 0)
    .toColourspace("b-w")
    .raw()
    .toBuffer();
  const shade = await sharp({ create: { width: w, height: h, channels: 3, background: { r: 0, g: 0, b: 0 } } })
    .joinChannel(alpha, { raw: { width: w, height: h, channels: 1 } })
    .png()
    .toBuffer();
  const left = Math.max(0, width - margin - w);
  const top = Math.max(0, height - margin - h);
  return [
    { input: shade, left, top },
    { input: white.data, left, top },
  ];
}
