// --pair-portraits: which portrait photos go side by side. Within a folder, photos by date taken; two portrait
// photos next to each other in that order, taken at most PAIR_WINDOW_MS apart, make a pair, taken greedily from
// the oldest. A photo without an EXIF date is never paired (its time says nothing of when it was taken).
import { dirname } from "node:path";
import { forEachLimited, WORKERS } from "./queue.js";

/** Two photos taken further apart than this are not a pair. */
export const PAIR_WINDOW_MS = 60 * 60 * 1000;

export interface PairCandidate {
  rel: string;
  abs: string;
  takenMs: number;
}

/** First photo's path → second photo's path. `isPortrait` reads a photo's header. */
export async function findPairs(candidates: PairCandidate[], isPortrait: (abs: string) => Promise<boolean>): Promise<Map<string, string>> {
  const portraits: PairCandidate[] = [];
  await forEachLimited(candidates, WORKERS, async (c) => {
    if (await isPortrait(c.abs)) portraits.push(c);
  });
  const byFolder = new Map<string, PairCandidate[]>();
  for (const c of portraits) {
    const list = byFolder.get(dirname(c.rel)) ?? [];
    list.push(c);
    byFolder.set(dirname(c.rel), list);
  }
  const pairs = new Map<string, string>();
  for (const list of byFolder.values()) {
    list.sort((a, b) => a.takenMs - b.takenMs || a.rel.localeCompare(b.rel));
    for (let i = 0; i + 1 < list.length; i++) {
      if (list[i + 1]!.takenMs - list[i]!.takenMs <= PAIR_WINDOW_MS) {
        pairs.set(list[i]!.rel, list[i + 1]!.rel);
        i++;
      }
    }
  }
  return pairs;
}
