// Turning one photo into what a frame reads, with sharp (libvips): decoded, turned upright by its EXIF
// orientation, resized to the profile, converted to sRGB (sharp's default output), flattened onto black where
// transparent, and encoded as baseline JPEG with no metadata but the date taken (so the orientation tag is gone).
// sharp's prebuilt libvips reads HEIF only with AV1 inside (AVIF); iPhone HEIC holds HEVC, decoded here by
// heic-decode (libheif compiled to WebAssembly, in a worker thread: heic.ts) and handed to sharp as pixels.
import type { Metadata, Sharp } from "sharp";
import exifReader from "exif-reader";

type Tags = exifReader.Exif;
import { FrameFiError } from "../errors.js";
import { MAX_HEIC_PIXELS, type HeicDecoder } from "./heic.js";
import type { FrameProfile } from "./profile.js";
import { captionText } from "./caption.js";
import { hasLook, type Look } from "./look.js";
import { finish, halfOf, pairUp, placeIn, shownBox, type Pixels } from "./picture.js";
import { loadSharp, type SharpFn } from "./sharp.js";
import { gpsPosition, iptcPlace, nearestTown, xmpPlace } from "./place.js";

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

function exifTags(exif: Buffer | undefined): Tags | undefined {
  if (!exif) return undefined;
  try {
    return exifReader(exif);
  } catch {
    return undefined;
  }
}

/** "0000:00:00 00:00:00", what a camera whose clock was never set writes, as exif-reader reads it (30 Nov 1899). */
const UNSET_CLOCK = Date.UTC(0, -1, 0);

/** The EXIF date taken as its clock time read as UTC (EXIF has no zone), as exif-reader gives it; none for an unset clock. */
function exifDate(tags: Tags | undefined): number | undefined {
  const date = tags?.Photo?.DateTimeOriginal ?? tags?.Image?.DateTime;
  const ms = date instanceof Date ? date.getTime() : Number.NaN;
  return Number.isNaN(ms) || ms === UNSET_CLOCK ? undefined : ms;
}

/** EXIF's "YYYY:MM:DD HH:MM:SS" for a time in ms read as UTC clock time. */
function exifText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace(/-/g, ":").replace("T", " ");
}

function isHevcHeif(meta: Metadata): boolean {
  return meta.format === "heif" && meta.compression === "hevc";
}

/** Reads the date a photo was taken (EXIF DateTimeOriginal), or undefined; never throws. */
export async function dateTaken(path: string): Promise<number | undefined> {
  try {
    const sharp = await loadSharp();
    return exifDate(exifTags((await sharp(path).metadata()).exif));
  } catch {
    return undefined;
  }
}

/** A photo's header, checked, and what its metadata says for the date stamp and a caption. */
interface Source {
  data: Buffer;
  meta: Metadata;
  tags: Tags | undefined;
  /** The date written into the output: EXIF date taken, else the file's time with dateFromMtime. */
  stamp: number | undefined;
}

async function inspect(sharp: SharpFn, data: Buffer, profile: FrameProfile, mtimeMs: number): Promise<Source> {
  const meta = await sharp(data, { limitInputPixels: false }).metadata();
  checkSize(meta);
  const tags = exifTags(meta.exif);
  return { data, meta, tags, stamp: exifDate(tags) ?? (profile.dateFromMtime ? mtimeMs : undefined) };
}

/** Calls `use` with the photo decoded and upright. */
function upright<T>(sharp: SharpFn, src: Source, heic: HeicDecoder, use: (image: Sharp) => Promise<T>): Promise<T> {
  // HEIC pixels come out of libheif already turned as the file says (its irot/imir boxes).
  if (!isHevcHeif(src.meta)) return use(sharp(src.data, { limitInputPixels: MAX_PIXELS }).autoOrient());
  return heic.decode(src.data, src.meta.width! * src.meta.height!, (image) =>
    use(
      sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength), { raw: { width: image.width, height: image.height, channels: 4 } }),
    ),
  );
}

function encode(image: Sharp, profile: FrameProfile, stamp: number | undefined): Promise<Buffer> {
  image = image.flatten({ background: "#000000" }).jpeg({ quality: profile.quality, progressive: false, mozjpeg: false });
  if (stamp !== undefined) image = image.withExif({ IFD2: { DateTimeOriginal: exifText(stamp) } });
  return image.toBuffer();
}

/** Any failure but a refused size reads as "cannot decode this photo". */
async function decoding<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof PhotoDecodeError) throw e;
    const why = ((e as Error).message ?? String(e)).split("\n")[0]!.replace(/^.*?: /, "");
    throw new PhotoDecodeError("FRAMEFI_PHOTO_UNDECODABLE", { reason: why }, { cause: e });
  }
}

/** The caption of a photo, when the look asks for one: date stamp and place (the photo's own, else its GPS's town). */
async function captionOf(look: Look, src: Source): Promise<string | undefined> {
  if (!look.caption) return undefined;
  let place: string | undefined;
  if (look.caption.place) {
    place = iptcPlace(src.meta.iptc) ?? xmpPlace(src.meta.xmp);
    const gps = place === undefined ? gpsPosition(src.tags) : undefined;
    if (gps) place = await nearestTown(gps);
  }
  return captionText(look.caption, src.stamp, place);
}

/** The photo (a file's content) as a JPEG for the profile; `mtimeMs` gives the date taken when asked and the photo has none. */
export function convertPhoto(data: Buffer, profile: FrameProfile, mtimeMs: number, heic: HeicDecoder): Promise<Buffer> {
  return decoding(async () => {
    const sharp = await loadSharp();
    const src = await inspect(sharp, data, profile, mtimeMs);
    const look = profile.look;
    if (!hasLook(look)) {
      // No look: one libvips pipeline, decode to JPEG, as fast as it goes.
      return upright(sharp, src, heic, (image) =>
        encode(
          image.resize(profile.width, profile.height, { fit: profile.resize === "fill" ? "cover" : "inside", withoutEnlargement: profile.resize === "fit" }),
          profile,
          src.stamp,
        ),
      );
    }
    const box = shownBox(profile);
    const placed = await upright(sharp, src, heic, (image) => placeIn(sharp, image, look, profile.resize, box.width, box.height));
    return encode(await finish(sharp, placed, look, await captionOf(look, src)), profile, src.stamp);
  });
}

/** Two portrait photos as one JPEG, side by side (--pair-portraits); the first one's date and caption. */
export function convertPair(
  first: { data: Buffer; mtimeMs: number },
  second: { data: Buffer; mtimeMs: number },
  profile: FrameProfile,
  heic: HeicDecoder,
): Promise<Buffer> {
  return decoding(async () => {
    const sharp = await loadSharp();
    const look = profile.look ?? {};
    const box = shownBox(profile);
    const half = halfOf(look, box.width);
    const srcs = [await inspect(sharp, first.data, profile, first.mtimeMs), await inspect(sharp, second.data, profile, second.mtimeMs)];
    const halves: Pixels[] = [];
    for (const src of srcs) halves.push(await upright(sharp, src, heic, (image) => placeIn(sharp, image, half.look, profile.resize, half.width, box.height)));
    const picture = await pairUp(sharp, halves[0]!, halves[1]!, box.width, box.height);
    return encode(await finish(sharp, picture, look, await captionOf(look, srcs[0]!)), profile, srcs[0]!.stamp);
  });
}

/** Whether a photo stands upright taller than wide, from its header alone (EXIF orientation counted). */
export async function isPortrait(path: string): Promise<boolean> {
  try {
    const sharp = await loadSharp();
    const m = await sharp(path).metadata();
    const turned = (m.orientation ?? 1) >= 5;
    const [w, h] = turned ? [m.height ?? 0, m.width ?? 0] : [m.width ?? 0, m.pageHeight ?? m.height ?? 0];
    return h > w;
  } catch {
    return false;
  }
}
