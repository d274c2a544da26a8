// A frame profile and the sync's photo options, from the command line or the `[frame]` section of the .env file
// (the command line wins). Everything here is checked once, with a message that names the option and the fix.
import { createHash } from "node:crypto";
import { UsageError } from "../cli/usage.js";
import { hasLook, LOOK_KEYS, parseLook, type Look, type LookSettings } from "./look.js";

export interface FrameProfile {
  width: number;
  height: number;
  /** "fit": the whole photo, at most width × height (never enlarged); "fill": exactly width × height, cropped. */
  resize: "fit" | "fill";
  /** JPEG quality, 1–100. */
  quality: number;
  format: "jpeg";
  /** Write EXIF DateTimeOriginal from the file's modification time when the photo has none. */
  dateFromMtime: boolean;
  /** Background, smart crop, portrait pairs, caption, pixel aspect (look.ts); absent when none is asked. */
  look?: Look;
}

/** A capacity limit on what the sync puts on the card; the newest photos are kept. */
export interface CapacityLimit {
  /** At most this many files from the folder. */
  maxFiles?: number;
  /** At most this many bytes on the card in all: a number, or a share of the card's size. */
  maxBytes?: { bytes: number } | { percent: number };
}

export interface PhotoOptions {
  /** Undefined: files are copied as they are. */
  profile: FrameProfile | undefined;
  /** What happens to files that are not photos when a profile is set. */
  others: "copy" | "skip";
  dedupe: boolean;
  limit: CapacityLimit;
  /** The conversion cache folder (see cacheDir). */
  cacheDir: string;
}

/** The option values as given: flags by their long name, the [frame] section by its key. */
export interface PhotoSettings extends LookSettings {
  fit?: string | undefined;
  fill?: string | undefined;
  quality?: string | undefined;
  format?: string | undefined;
  others?: string | undefined;
  dedupe?: boolean | string | undefined;
  maxSize?: string | undefined;
  maxFiles?: string | undefined;
  dateFromMtime?: boolean | string | undefined;
  cache?: string | undefined;
}

/** The [frame] section's keys and the setting each gives. */
export const FRAME_KEYS: Record<string, keyof PhotoSettings> = {
  FIT: "fit",
  FILL: "fill",
  QUALITY: "quality",
  FORMAT: "format",
  OTHERS: "others",
  DEDUPE: "dedupe",
  MAX_SIZE: "maxSize",
  MAX_FILES: "maxFiles",
  DATE_FROM_MTIME: "dateFromMtime",
  CACHE: "cache",
  ...LOOK_KEYS,
};

/** The option's name as the user wrote it: `--fit` on the command line, `FIT` in the [frame] section. */
export type NameOf = (key: keyof PhotoSettings) => string;

function parseBoxSize(text: string, name: string): { width: number; height: number } {
  const m = /^\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*$/.exec(text);
  const width = Number(m?.[1]);
  const height = Number(m?.[2]);
  if (!m || width < 16 || height < 16 || width > 16384 || height > 16384) {
    throw new UsageError("FRAMEFI_BAD_FRAME_SIZE", { option: name, value: text });
  }
  return { width, height };
}

function parseBool(value: boolean | string | undefined, name: string): boolean {
  if (value === undefined || typeof value === "boolean") return value === true;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off|)$/i.test(value)) return false;
  throw new UsageError("FRAMEFI_BAD_YES_NO", { option: name, value });
}

const UNITS: Record<string, number> = { "": 1, B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 1024, MIB: 1024 ** 2, GIB: 1024 ** 3, TIB: 1024 ** 4 };

/** "90%", "2GB", "500MiB", "123456" (bytes). */
export function parseMaxSize(text: string, name: string): { bytes: number } | { percent: number } {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(%|[kmgt]i?b|b)?\s*$/i.exec(text);
  const n = Number(m?.[1]);
  const unit = (m?.[2] ?? "").toUpperCase();
  if (m && unit === "%" && n > 0 && n <= 100) return { percent: n };
  if (m && unit !== "%" && n > 0) return { bytes: Math.floor(n * UNITS[unit]!) };
  throw new UsageError("FRAMEFI_BAD_MAX_SIZE", { option: name, value: text });
}

/** The conversion cache: `explicit`, else $XDG_CACHE_HOME/framefi, else ~/.cache/framefi. */
export function cacheDir(explicit: string | undefined, env: NodeJS.ProcessEnv, home: string): string {
  if (explicit) return explicit;
  const xdg = env.XDG_CACHE_HOME;
  return xdg?.startsWith("/") ? `${xdg}/framefi` : `${home}/.cache/framefi`;
}

/** Checks and combines the settings (each already merged: command line over [frame] section). */
export function photoOptions(s: PhotoSettings, nameOf: NameOf, env: NodeJS.ProcessEnv, home: string): PhotoOptions {
  if (s.fit !== undefined && s.fill !== undefined) throw new UsageError("FRAMEFI_FIT_AND_FILL", { fit: nameOf("fit"), fill: nameOf("fill") });
  const sizeKey = s.fit !== undefined ? "fit" : s.fill !== undefined ? "fill" : undefined;
  let profile: FrameProfile | undefined;
  if (sizeKey) {
    const box = parseBoxSize(s[sizeKey]!, nameOf(sizeKey));
    let quality = 85;
    if (s.quality !== undefined) {
      quality = /^\s*\d{1,3}\s*$/.test(s.quality) ? Number(s.quality) : NaN;
      if (!(quality >= 1 && quality <= 100)) throw new UsageError("FRAMEFI_BAD_QUALITY", { option: nameOf("quality"), value: s.quality });
    }
    if (s.format !== undefined && s.format.trim().toLowerCase() !== "jpeg" && s.format.trim().toLowerCase() !== "jpg") {
      throw new UsageError("FRAMEFI_BAD_FORMAT", { option: nameOf("format"), value: s.format });
    }
    profile = { ...box, resize: sizeKey, quality, format: "jpeg", dateFromMtime: parseBool(s.dateFromMtime, nameOf("dateFromMtime")) };
    const look = parseLook(s, nameOf, sizeKey, box.width, box.height, parseBool);
    if (hasLook(look)) profile.look = look;
  } else {
    for (const key of ["quality", "format", "others", "dateFromMtime", ...Object.values(LOOK_KEYS)] as const) {
      if (s[key] !== undefined && s[key] !== false)
        throw new UsageError("FRAMEFI_NEEDS_PROFILE", { option: nameOf(key), fit: nameOf("fit"), fill: nameOf("fill") });
    }
  }
  let others: "copy" | "skip" = "copy";
  if (s.others !== undefined) {
    const v = s.others.trim().toLowerCase();
    if (v !== "copy" && v !== "skip") throw new UsageError("FRAMEFI_BAD_OTHERS", { option: nameOf("others"), value: s.others });
    others = v;
  }
  const limit: CapacityLimit = {};
  if (s.maxFiles !== undefined) {
    const n = /^\s*\d+\s*$/.test(s.maxFiles) ? Number(s.maxFiles) : NaN;
    if (!(n >= 1 && Number.isSafeInteger(n))) throw new UsageError("FRAMEFI_BAD_MAX_FILES", { option: nameOf("maxFiles"), value: s.maxFiles });
    limit.maxFiles = n;
  }
  if (s.maxSize !== undefined) limit.maxBytes = parseMaxSize(s.maxSize, nameOf("maxSize"));
  return { profile, others, dedupe: parseBool(s.dedupe, nameOf("dedupe")), limit, cacheDir: cacheDir(s.cache, env, home) };
}

/** Names a profile in the cache: a changed profile converts every photo again. Bump the version when output changes. */
export function profileId(p: FrameProfile): string {
  // A look is added only when there is one, so that the caches of profiles without one stay valid.
  const key = JSON.stringify(["v1", p.width, p.height, p.resize, p.quality, p.format, p.dateFromMtime, ...(p.look ? [p.look] : [])]);
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

export function describeProfile(p: FrameProfile): string {
  return `${p.resize} ${p.width}x${p.height}, JPEG quality ${p.quality}`;
}
