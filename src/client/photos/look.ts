// The picture options beyond size and quality (issue 35): what fills the frame around a fitted photo, how a
// fill crops, two portraits side by side, a caption burned in, and a panel that stretches. Checked once, here,
// with a message that names the option; absent options leave a profile exactly as it was (same cache folder).
import { UsageError } from "../cli/usage.js";

/** A colour as sharp takes it. */
export interface Rgb {
  r: number;
  g: number;
  b: number;
}

export interface Look {
  /** With fit: the output is exactly the frame's size, the rest filled with a blur of the photo or a colour. */
  background?: "blur" | Rgb;
  /** With fill: crop around what libvips' attention strategy finds (skin tones, saturation, edges). */
  crop?: "smart";
  /** Two portrait photos taken close in time become one picture, side by side (a landscape frame). */
  pairPortraits?: boolean;
  caption?: { date: boolean; place: boolean; format: string };
  /** A pixel's width over its height as the panel shows it (1 = square pixels). */
  pixelAspect?: number;
}

/** The settings this file reads, as given (flags by their long name, the [frame] section by its key). */
export interface LookSettings {
  background?: string | undefined;
  crop?: string | undefined;
  pairPortraits?: boolean | string | undefined;
  caption?: string | undefined;
  captionFormat?: string | undefined;
  pixelAspect?: string | undefined;
}

export const LOOK_KEYS: Record<string, keyof LookSettings> = {
  BACKGROUND: "background",
  CROP: "crop",
  PAIR_PORTRAITS: "pairPortraits",
  CAPTION: "caption",
  CAPTION_FORMAT: "captionFormat",
  PIXEL_ASPECT: "pixelAspect",
};

/** libvips' default limit on the pixels of an image it reads (sharp's limitInputPixels). */
const MAX_SHOWN_PIXELS = 268_402_689;

export const DEFAULT_CAPTION_FORMAT = "%e %B %Y";
const NAMED: Record<string, Rgb> = {
  black: { r: 0, g: 0, b: 0 },
  white: { r: 255, g: 255, b: 255 },
  grey: { r: 128, g: 128, b: 128 },
  gray: { r: 128, g: 128, b: 128 },
};

export function parseColour(text: string): Rgb | undefined {
  const v = text.trim().toLowerCase();
  if (NAMED[v]) return NAMED[v];
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/.exec(v);
  if (!m) return undefined;
  const hex = m[1]!.length === 3 ? [...m[1]!].map((c) => c + c).join("") : m[1]!;
  return { r: Number.parseInt(hex.slice(0, 2), 16), g: Number.parseInt(hex.slice(2, 4), 16), b: Number.parseInt(hex.slice(4, 6), 16) };
}

/** The caption format's tokens: strftime's, the few a caption needs. */
export const FORMAT_TOKENS = /%[YmdeBbHM%]/g;

function parseCaption(value: string, format: string | undefined, name: string, formatName: string): Look["caption"] {
  const parts = value
    .toLowerCase()
    .split(",")
    .map((p) => p.trim());
  if (parts.length > 2 || new Set(parts).size !== parts.length || !parts.every((p) => p === "date" || p === "place")) {
    throw new UsageError("FRAMEFI_BAD_CAPTION", { option: name, value });
  }
  const f = format ?? DEFAULT_CAPTION_FORMAT;
  // Printable text only, and no % but the tokens: the format is drawn as it is.
  if (f.length > 40 || /[\0-\x1f\x7f-\x9f]/.test(f) || f.replace(FORMAT_TOKENS, "").includes("%")) {
    throw new UsageError("FRAMEFI_BAD_CAPTION_FORMAT", { option: formatName, value: f });
  }
  return { date: parts.includes("date"), place: parts.includes("place"), format: f };
}

/** "16:9" (the aspect the whole panel is shown at) or a number, a pixel's width over its height. */
function parsePixelAspect(value: string, name: string, width: number, height: number): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(?::\s*(\d+(?:\.\d+)?)\s*)?$/.exec(value);
  const n = m?.[2] !== undefined ? Number(m[1]) / Number(m[2]) / (width / height) : Number(m?.[1]);
  if (!m || !(n >= 0.5 && n <= 2)) throw new UsageError("FRAMEFI_BAD_PIXEL_ASPECT", { option: name, value });
  return n;
}

type NameOf = (key: keyof LookSettings | "fit" | "fill") => string;

/** The look of a profile of `resize` at width × height, from settings already merged (command line over file). */
export function parseLook(
  s: LookSettings,
  nameOf: NameOf,
  resize: "fit" | "fill",
  width: number,
  height: number,
  yes: (v: boolean | string | undefined, name: string) => boolean,
): Look {
  const look: Look = {};
  if (s.background !== undefined) {
    if (resize !== "fit") throw new UsageError("FRAMEFI_NEEDS_FIT", { option: nameOf("background"), fit: nameOf("fit"), fill: nameOf("fill") });
    const v = s.background.trim().toLowerCase();
    const colour = v === "blur" ? "blur" : parseColour(v);
    if (!colour) throw new UsageError("FRAMEFI_BAD_BACKGROUND", { option: nameOf("background"), value: s.background });
    look.background = colour;
  }
  if (s.crop !== undefined) {
    if (resize !== "fill") throw new UsageError("FRAMEFI_NEEDS_FILL", { option: nameOf("crop"), fit: nameOf("fit"), fill: nameOf("fill") });
    const v = s.crop.trim().toLowerCase();
    if (v !== "smart" && v !== "centre" && v !== "center") throw new UsageError("FRAMEFI_BAD_CROP", { option: nameOf("crop"), value: s.crop });
    if (v === "smart") look.crop = "smart";
  }
  if (yes(s.pairPortraits, nameOf("pairPortraits"))) {
    if (width <= height) throw new UsageError("FRAMEFI_PAIR_NEEDS_LANDSCAPE", { option: nameOf("pairPortraits"), size: `${width}x${height}` });
    look.pairPortraits = true;
  }
  if (s.caption !== undefined) look.caption = parseCaption(s.caption, s.captionFormat, nameOf("caption"), nameOf("captionFormat"));
  else if (s.captionFormat !== undefined) throw new UsageError("FRAMEFI_FORMAT_NEEDS_CAPTION", { option: nameOf("captionFormat"), caption: nameOf("caption") });
  if (s.pixelAspect !== undefined) {
    const pa = parsePixelAspect(s.pixelAspect, nameOf("pixelAspect"), width, height);
    if (Math.abs(pa - 1) > 0.001) look.pixelAspect = pa;
  }
  // A look passes the whole frame through libvips as raw pixels, which it reads up to its default pixel limit.
  const shownWidth = Math.round(width * (look.pixelAspect ?? 1));
  if (hasLook(look) && shownWidth * height > MAX_SHOWN_PIXELS) {
    throw new UsageError("FRAMEFI_LOOK_TOO_LARGE", { shown: `${shownWidth}×${height}`, size: `${width}x${height}`, option: nameOf(resize) });
  }
  return look;
}

/** Whether a look changes anything: a profile without one converts as before, in one libvips pipeline. */
export function hasLook(look: Look | undefined): look is Look {
  return look !== undefined && Object.keys(look).length > 0;
}
