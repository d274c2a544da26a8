// Which files are photos, by their names: what the photo options convert, and what the delete guard counts.
import { extname } from "node:path";

const PHOTO_EXTENSIONS = [".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".gif", ".tif", ".tiff", ".avif", ".heic", ".heif", ".hif"];

export function isPhotoName(name: string): boolean {
  return PHOTO_EXTENSIONS.includes(extname(name).toLowerCase());
}
