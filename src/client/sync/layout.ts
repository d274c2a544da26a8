// --order and --max-per-folder: where each file goes on the card so that a frame plays the chosen order. Pure:
// it renames the entries of what the card should hold before plan.ts compares them with the card.
//
// The design. A frame plays a folder in name order or in directory order, so every file gets an 8-digit prefix,
// "00042000-IMG_1.jpg", and name order is the chosen order (digits sort the same for every frame: case, locale
// and "natural" sorting agree on them). The prefixes are sparse, 1000 apart on a first sync, and kept: a file
// already on the card keeps its number as long as it still sorts where the order puts it (the longest run of card
// files already in order keeps theirs), and a new file takes a number in the gap between its neighbours. So
// adding a photo uploads that photo only; a file is renamed (uploaded again) only when its gap is full, and then
// only the gap's neighbours move. With --max-per-folder N, a folder of more than N files is spread, in order,
// into subfolders 001, 002, … of N files each.
import { createHash } from "node:crypto";
import { posix } from "node:path";
import { UsageError } from "../cli/usage.js";
import type { RemoteEntry } from "../ftp/remote.js";
import type { PlanInput } from "./plan.js";

export type Order = { by: "name" } | { by: "date" } | { by: "shuffle"; seed: string };

export interface LayoutOptions {
  order?: Order | undefined;
  maxPerFolder?: number | undefined;
  /** A collection's dates: only files taken (else modified) from `fromMs` and before `toMs` go to the card. */
  range?: { fromMs?: number | undefined; toMs?: number | undefined } | undefined;
  /** A collection's keywords (photos/keywords.ts): only photos tagged with one of them go to the card. */
  keywords?: string[] | undefined;
}

export interface Layout {
  input: PlanInput;
  /** Path as given → path on the card, for every file moved or renamed. */
  renamed: Map<string, string>;
  /** What cannot be laid out as asked, with why (reported as failures). */
  problems: { rel: string; reason: string }[];
}

/** The .env's keys for these options ([frame] and [profile NAME] sections). */
export const LAYOUT_KEYS = ["ORDER", "MAX_PER_FOLDER"];

const DIGITS = 8;
const SPAN = 10 ** DIGITS;
const STEP = 1000;
const PREFIXED = /^(\d{8})-(.+)$/;
const CHUNK = /^\d{3,}$/;

/** "name", "date", "shuffle" (seed "1") or "shuffle:SEED". */
export function parseOrder(text: string, option: string): Order {
  const m = /^(name|date|shuffle)(?::(.{1,100}))?$/.exec(text.trim());
  if (!m || (m[2] !== undefined && m[1] !== "shuffle")) throw new UsageError("FRAMEFI_BAD_ORDER", { option, value: text });
  return m[1] === "shuffle" ? { by: "shuffle", seed: m[2] ?? "1" } : { by: m[1] as "name" | "date" };
}

export function parseMaxPerFolder(text: string, option: string): number {
  const n = /^\s*\d{1,7}\s*$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1)) throw new UsageError("FRAMEFI_BAD_MAX_PER_FOLDER", { option, value: text });
  return n;
}

const prefixed = (n: number, base: string): string => `${String(n).padStart(DIGITS, "0")}-${base}`;
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The sort key of a file: its base name, date, or place in the seed's shuffle; ties broken by name. */
function sortKey(order: Order | undefined, base: string, dateMs: number): string {
  if (!order || order.by === "name") return base;
  if (order.by === "date") return `${String(Math.max(0, Math.round(dateMs))).padStart(16, "0")}\0${base}`;
  return `${createHash("sha256").update(`${order.seed}\0${base}`).digest("hex")}\0${base}`;
}

/** Indexes of the longest strictly increasing subsequence of `values` (undefined: not a candidate). */
function longestIncreasing(values: (number | undefined)[]): Set<number> {
  const tails: number[] = [];
  const prev = new Array<number>(values.length).fill(-1);
  values.forEach((v, i) => {
    if (v === undefined) return;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (values[tails[mid]!]! < v) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[i] = tails[lo - 1]!;
    tails[lo] = i;
  });
  const keep = new Set<number>();
  for (let i = tails.at(-1) ?? -1; i >= 0; i = prev[i]!) keep.add(i);
  return keep;
}

/** Numbers for `k` new files strictly between `lo` and `hi`; undefined when there is no room. */
function fill(lo: number, hi: number, k: number): number[] | undefined {
  if (hi - lo < k + 1) return undefined;
  if (lo + STEP * k < hi) return Array.from({ length: k }, (_, j) => lo + STEP * (j + 1));
  return Array.from({ length: k }, (_, j) => lo + Math.floor(((hi - lo) * (j + 1)) / (k + 1)));
}

/**
 * The prefix number of each file, in order: `kept[i]` is the number the card already has for it, when it keeps it.
 * A gap too small for its new files gives up the anchor after it until one is large enough.
 */
export function assignNumbers(onCard: (number | undefined)[]): number[] {
  const keep = longestIncreasing(onCard);
  const out = new Array<number>(onCard.length);
  let lo = 0;
  let start = 0;
  for (let i = 0; i <= onCard.length; i++) {
    if (i < onCard.length && !keep.has(i)) continue;
    const hi = i < onCard.length ? onCard[i]! : SPAN;
    const numbers = fill(lo, hi, i - start);
    if (!numbers && i < onCard.length) continue; // this anchor gives way: its file is numbered with the gap
    if (!numbers) return fill(0, SPAN, onCard.length) ?? onCard.map((_, j) => j + 1); // no room left at the end
    for (const [j, n] of numbers.entries()) out[start + j] = n;
    if (i < onCard.length) out[i] = hi;
    lo = hi;
    start = i + 1;
  }
  return out;
}

/**
 * The card's numbered files of each folder, read back to "folder → base name → number". A folder of the source
 * named like a subfolder (a year, "2023") is that folder, not a subfolder of its parent.
 */
function numbersOnCard(remote: Map<string, RemoteEntry>, chunked: boolean, folders: Set<string>): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const [rel, r] of remote) {
    if (r.type !== "file") continue;
    const m = PREFIXED.exec(posix.basename(rel));
    if (!m) continue;
    let dir = posix.dirname(rel);
    if (chunked && !folders.has(dir) && CHUNK.test(posix.basename(dir))) dir = posix.dirname(dir);
    const folder = dir === "." ? "" : dir;
    let names = out.get(folder);
    if (!names) out.set(folder, (names = new Map()));
    if (!names.has(m[2]!)) names.set(m[2]!, Number(m[1]));
  }
  return out;
}

/**
 * Renames the files of `input` for the order and spreads full folders into subfolders. `dates`: date taken by
 * path (else a file's modification time is its date).
 */
export function layOut(input: PlanInput, remote: Map<string, RemoteEntry>, opts: LayoutOptions, dates?: Map<string, number>): Layout {
  const chunked = opts.maxPerFolder !== undefined;
  const byFolder = new Map<string, { rel: string; base: string; key: string }[]>();
  const { fromMs = -Infinity, toMs = Infinity } = opts.range ?? {};
  for (const [rel, e] of input.entries) {
    if (e.type !== "file") continue;
    const date = dates?.get(rel) ?? e.mtimeMs;
    if (date < fromMs || date >= toMs) continue;
    const dir = posix.dirname(rel);
    const folder = dir === "." ? "" : dir;
    const base = posix.basename(rel);
    let files = byFolder.get(folder);
    if (!files) byFolder.set(folder, (files = []));
    files.push({ rel, base, key: sortKey(opts.order, base, date) });
  }
  const known = numbersOnCard(remote, chunked, new Set(byFolder.keys()));
  const entries: PlanInput["entries"] = new Map();
  const renamed = new Map<string, string>();
  const problems: Layout["problems"] = [];
  for (const [rel, e] of input.entries) if (e.type === "dir") entries.set(rel, e);
  const placed: [string, string][] = [];
  for (const [folder, files] of [...byFolder].sort(([a], [b]) => compare(a, b))) {
    files.sort((a, b) => compare(a.key, b.key));
    const names = opts.order ? known.get(folder) : undefined;
    const numbers = opts.order ? assignNumbers(files.map((f) => names?.get(f.base))) : [];
    const spread = opts.maxPerFolder !== undefined && files.length > opts.maxPerFolder;
    const width = Math.max(3, String(Math.ceil(files.length / (opts.maxPerFolder ?? 1))).length);
    files.forEach((f, i) => {
      const name = opts.order ? prefixed(numbers[i]!, f.base) : f.base;
      const sub = spread ? String(Math.floor(i / opts.maxPerFolder!) + 1).padStart(width, "0") : "";
      // A file of the folder named like a subfolder ("002") is itself moved into one: its name is free.
      const dir = folder ? `${folder}/${sub}` : sub;
      if (sub && !entries.has(dir)) entries.set(dir, { ...(input.entries.get(folder) ?? { abs: "", size: 0, mtimeMs: 0 }), type: "dir" });
      placed.push([f.rel, [folder, sub, name].filter(Boolean).join("/")]);
    });
  }
  // Files in name order, so that uploads (and a fresh folder's directory) follow the order.
  placed.sort(([, a], [, b]) => compare(a, b));
  for (const [from, to] of placed) {
    if (entries.has(to)) {
      problems.push({ rel: from, reason: `${to} is taken on the card by another file of the folder; rename one of them` });
      continue;
    }
    entries.set(to, input.entries.get(from)!);
    if (to !== from) renamed.set(from, to);
  }
  return { input: { ...input, entries }, renamed, problems };
}
