// A collection's KEYWORDS: the photos a photo manager tagged with one of them. A photo's keywords are its IPTC
// Keywords (dataset 2:25, repeatable) and its XMP dc:subject (what Lightroom, digiKam, darktable and Windows write),
// compared without case. Every reader takes untrusted bytes and gives nothing for anything odd.
import { loadSharp } from "./sharp.js";
import { iptcValues } from "./iptc.js";
import { xmlText } from "./place.js";
import { forEachLimited, WORKERS } from "./queue.js";
import type { LocalTree } from "../sync/local-tree.js";

/** Longer text is not a keyword; more than this many are not read. */
const MAX_KEYWORD = 64;
const MAX_KEYWORDS = 256;
/** XMP is read this far: a keyword list sits near its start. */
const XMP_READ = 256 * 1024;

/** A keyword as compared: no control characters, no surrounding space, lower case; undefined when empty or long. */
export function keyword(text: string): string | undefined {
  const k = text
    .replace(/[\0-\x1f\x7f-\x9f]/g, "")
    .trim()
    .toLowerCase();
  return k && k.length <= MAX_KEYWORD ? k : undefined;
}

/** The keywords of a photo's IPTC and XMP. */
export function metadataKeywords(iptc: Buffer | undefined, xmp: Buffer | undefined): Set<string> {
  const out = new Set<string>();
  const add = (text: string): void => {
    const k = keyword(text);
    if (k !== undefined && out.size < MAX_KEYWORDS) out.add(k);
  };
  for (const { text } of iptcValues(iptc, [25])) add(text);
  if (xmp) {
    const text = xmp.subarray(0, XMP_READ).toString("utf8");
    const subject = /<dc:subject\b[^>]*>([\s\S]*?)<\/dc:subject>/.exec(text)?.[1] ?? "";
    for (const m of subject.matchAll(/<rdf:li\b[^>]*>([^<]*)<\/rdf:li>/g)) add(xmlText(m[1]!));
  }
  return out;
}

/** A file's keywords; none when it is not an image sharp reads. */
async function fileKeywords(abs: string): Promise<Set<string>> {
  try {
    const sharp = await loadSharp();
    const { iptc, xmp } = await sharp(abs).metadata();
    return metadataKeywords(iptc, xmp);
  } catch {
    return new Set();
  }
}

/** `local` with only the files tagged with one of `wanted` (compared as keyword() gives them); folders stay. */
export async function keepTagged(local: LocalTree, wanted: readonly string[]): Promise<LocalTree> {
  const want = new Set(wanted);
  const entries = new Map(local.entries);
  await forEachLimited([...local.entries], WORKERS, async ([rel, e]) => {
    if (e.type !== "file") return;
    const tags = await fileKeywords(e.abs);
    if (![...tags].some((t) => want.has(t))) entries.delete(rel);
  });
  return { ...local, entries };
}
