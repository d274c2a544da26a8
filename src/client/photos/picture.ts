// A photo made into the frame's picture when the profile has a look (look.ts): fitted on a blurred, dimmed
// enlargement of itself or a colour, or cropped around what draws the eye (libvips' attention strategy), two
// portraits side by side, a caption, and the whole pre-squeezed for a panel whose pixels are not square. It is
// drawn in "shown" pixels (the frame's width times the pixel aspect), then squeezed to the frame's pixels last,
// so that the panel's stretch undoes the squeeze. Steps pass raw pixels, as libvips resizes once a pipeline.
import type { Sharp } from "sharp";
import { captionOverlays } from "./caption.js";
import type { Look, Rgb } from "./look.js";
import type { FrameProfile } from "./profile.js";
import type { SharpFn } from "./sharp.js";

export interface Pixels {
  data: Buffer;
  width: number;
  height: number;
}

const BLACK: Rgb = { r: 0, g: 0, b: 0 };
/** How much the blurred background is dimmed, so the photo stands out of it. */
const DIM = 0.55;

const rawOf = (p: Pixels): { raw: { width: number; height: number; channels: 3 } } => ({ raw: { width: p.width, height: p.height, channels: 3 } });

async function toPixels(image: Sharp): Promise<Pixels> {
  const { data, info } = await image.flatten({ background: "#000000" }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** The frame's size in shown pixels. */
export function shownBox(profile: FrameProfile): { width: number; height: number } {
  return { width: Math.round(profile.width * (profile.look?.pixelAspect ?? 1)), height: profile.height };
}

/** A blurred, dimmed enlargement of the photo that covers width × height: made small, blurred, enlarged. */
async function blurredCover(sharp: SharpFn, photo: Pixels, width: number, height: number): Promise<Pixels> {
  const small = await toPixels(
    sharp(photo.data, rawOf(photo))
      .resize(Math.max(8, Math.round(width / 8)), Math.max(8, Math.round(height / 8)), { fit: "cover" })
      .blur(3)
      .linear(DIM, 0),
  );
  return toPixels(sharp(small.data, rawOf(small)).resize(width, height, { fit: "fill" }));
}

/**
 * The upright photo in a width × height box: cropped to it (fill); fitted inside it on the background (fit with a
 * background: enlarged if need be); or, fit without one, as before: at most the box, never enlarged.
 */
export async function placeIn(sharp: SharpFn, image: Sharp, look: Look, resize: "fit" | "fill", width: number, height: number): Promise<Pixels> {
  if (resize === "fill") return toPixels(image.resize(width, height, { fit: "cover", position: look.crop === "smart" ? "attention" : "centre" }));
  const background = look.background;
  const photo = await toPixels(image.resize(width, height, { fit: "inside", withoutEnlargement: background === undefined }));
  if (background === undefined || (photo.width === width && photo.height === height)) return photo;
  const canvas =
    background === "blur"
      ? sharp((await blurredCover(sharp, photo, width, height)).data, { raw: { width, height, channels: 3 } })
      : sharp({ create: { width, height, channels: 3, background } });
  const left = Math.floor((width - photo.width) / 2);
  const top = Math.floor((height - photo.height) / 2);
  return toPixels(canvas.composite([{ input: photo.data, ...rawOf(photo), left, top }]));
}

/** The gap between two paired photos, in shown pixels. */
export function pairGap(width: number): number {
  return Math.max(4, Math.round(width / 100));
}

/** Each half of a pair: (width - gap) / 2 wide, and fitted photos on a background (black unless one is given). */
export function halfOf(look: Look, width: number): { width: number; look: Look } {
  return { width: Math.floor((width - pairGap(width)) / 2), look: { ...look, background: look.background ?? BLACK } };
}

/** Two halves (placeIn with halfOf) side by side in the frame, a black gap between. */
export function pairUp(sharp: SharpFn, left: Pixels, right: Pixels, width: number, height: number): Promise<Pixels> {
  const half = left.width;
  return toPixels(
    sharp({ create: { width, height, channels: 3, background: BLACK } }).composite([
      { input: left.data, ...rawOf(left), left: 0, top: 0 },
      { input: right.data, ...rawOf(right), left: width - half, top: 0 },
    ]),
  );
}

/** The caption drawn and the pixel aspect undone: what is encoded. */
export async function finish(sharp: SharpFn, picture: Pixels, look: Look, caption: string | undefined): Promise<Sharp> {
  let image = sharp(picture.data, rawOf(picture));
  if (caption) {
    const overlays = await captionOverlays(sharp, caption, picture.width, picture.height);
    if (overlays.length > 0) {
      if (!look.pixelAspect) return image.composite(overlays);
      picture = await toPixels(image.composite(overlays));
      image = sharp(picture.data, rawOf(picture));
    }
  }
  if (!look.pixelAspect) return image;
  return image.resize(Math.max(1, Math.round(picture.width / look.pixelAspect)), picture.height, { fit: "fill" });
}
