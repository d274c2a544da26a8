// Turning one photo into what a frame reads, with sharp (libvips): decoded, turned upright by its EXIF
// orientation, resized to the profile, converted to sRGB (sharp's default output), flattened onto black where
// transparent, and encoded as baseline JPEG with no metadata but the date taken (so the orientation tag is gone).
// sharp's prebuilt libvips reads HEIF only with AV1 inside (AVIF); iPhone HEIC holds HEVC, decoded here by
// heic-decode (libheif compiled to WebAssembly, in a worker thread: heic.ts) and handed to sharp as pixels.
import { extname } from "node:path";
import type { Metadata, Sharp } from "sharp";
import exifReader from "exif-reader";
import { FrameFiError } from "../errors.js";
import { MAX_HEIC_PIXELS, type HeicDecoder } from "./heic.js";
import type { FrameProfile } from "./profile.js";

/** The file names a profile converts: everything else is not a photo. */
export const PHOTO_EXTENSIONS = [".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".gif", ".tif", ".tiff", ".avif", ".heic", ".heif", ".hif"];

export function isPhotoName(name: string): boolean {
  return PHOTO_EXTENSIONS.includes(extname(name).toLowerCase());
}

/** A photo that cannot be decoded: reported and skipped. */
export class PhotoDecodeError extends FrameFiError {
  override name = "PhotoDecodeError";
}

/** A photo whose header declares more pixels than are decoded (a decompression bomb, or a huge panorama). */
export class PhotoTooLargeError extends PhotoDecodeError {
  override name = "PhotoTooLargeError";
}

/** Pixels larger than this are refused, as sharp does by default; HEIC has its own, lower limit (heic.ts). */
const MAX_PIXELS = 268_402_689;

function megapixels(n: number): string {
  return `${Math.round(n / 1e6)} MP`;
}

/** Refuses a photo by its header's size, before anything is decoded. */
function checkSize(meta: Metadata): void {
  const width = meta.width ?? 0;
  const height = meta.pageHeight ?? meta.height ?? 0;
  const limit = isHevcHeif(meta) ? MAX_HEIC_PIXELS : MAX_PIXELS;
  if (width * height > limit) {
    const kind = isHevcHeif(meta) ? "HEIC photos" : "photos";
    throw new PhotoTooLargeError("FRAMEFI_PHOTO_TOO_LARGE", { width, height, size: megapixels(width * height), kind, limit: megapixels(limit) });
  }
}

/** The EXIF date taken as its clock time read as UTC (EXIF has no zone), as exif-reader gives it. */
function exifDate(exif: Buffer | undefined): number | undefined {
  if (!exif) return undefined;
  try {
    const tags = exifReader(exif);
    const date = tags.Photo?.DateTimeOriginal ?? tags.Image?.DateTime;
    return date instanceof Date && !Number.isNaN(date.getTime()) ? date.getTime() : undefined;
  } catch {
    return undefined;
  }
}

/** EXIF's "YYYY:MM:DD HH:MM:SS" for a time in ms read as UTC clock time. */
function exifText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace(/-/g, ":").replace("T", " ");
}

function isHevcHeif(meta: Metadata): boolean {
  return meta.format === "heif" && meta.compression === "hevc";
}

/** sharp, loaded on first use: libvips takes tens of milliseconds to load, which a sync without photos to convert need not pay. */
async function loadSharp(): Promise<typeof import("sharp").default> {
  return (await import("sharp")).default;
}

/** Reads the date a photo was taken (EXIF DateTimeOriginal), or undefined; never throws. */
export async function dateTaken(path: string): Promise<number | undefined> {
  try {
    const sharp = await loadSharp();
    return exifDate((await sharp(path).metadata()).exif);
  } catch {
    return undefined;
  }
}

/** The photo (a file's content) as a JPEG for the profile; `mtimeMs` gives the date taken when asked and the photo has none. */
export async function convertPhoto(data: Buffer, profile: FrameProfile, mtimeMs: number, heic: HeicDecoder): Promise<Buffer> {
  try {
    const sharp = await loadSharp();
    const meta = await sharp(data, { limitInputPixels: false }).metadata();
    checkSize(meta);
    const takenMs = exifDate(meta.exif);
    const stamp = takenMs ?? (profile.dateFromMtime ? mtimeMs : undefined);
    const encode = (image: Sharp): Promise<Buffer> => {
      image = image.resize(profile.width, profile.height, {
        fit: profile.resize === "fill" ? "cover" : "inside",
        withoutEnlargement: profile.resize === "fit",
      });
      image = image.flatten({ background: "#000000" }).jpeg({ quality: profile.quality, progressive: false, mozjpeg: false });
      if (stamp !== undefined) image = image.withExif({ IFD2: { DateTimeOriginal: exifText(stamp) } });
      return image.toBuffer();
    };
    // HEIC pixels come out of libheif already turned as the file says (its irot/imir boxes).
    if (!isHevcHeif(meta)) return await encode(sharp(data, { limitInputPixels: MAX_PIXELS }).autoOrient());
    return await heic.decode(data, meta.width! * meta.height!, (image) =>
      encode(
        sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength), { raw: { width: image.width, height: image.height, channels: 4 } }),
      ),
    );
  } catch (e) {
    if (e instanceof PhotoDecodeError) throw e;
    const why = ((e as Error).message ?? String(e)).split("\n")[0]!.replace(/^.*?: /, "");
    throw new PhotoDecodeError("FRAMEFI_PHOTO_UNDECODABLE", { reason: why }, { cause: e });
  }
}
