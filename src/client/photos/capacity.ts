// Which files fit on the card under a capacity limit: the newest (date taken, else modification time) until the
// next one would not fit. Pure: the sync gives it sizes and the card's numbers.

export interface Candidate {
  /** Path on the card. */
  rel: string;
  size: number;
  /** Date taken, else modification time (ms). */
  dateMs: number;
  /** Size of the card's file of that name that this one replaces (0 when none). */
  replaces: number;
}

export interface Budget {
  maxFiles: number;
  maxBytes: number;
  /** Bytes the card holds that stay whatever is chosen. */
  fixedBytes: number;
}

export function selectNewest(candidates: readonly Candidate[], budget: Budget): { kept: Set<string>; leftOut: Candidate[] } {
  const newestFirst = [...candidates].sort((a, b) => b.dateMs - a.dateMs || a.rel.localeCompare(b.rel));
  const kept = new Set<string>();
  let bytes = budget.fixedBytes;
  let i = 0;
  for (; i < newestFirst.length; i++) {
    const c = newestFirst[i]!;
    const after = bytes + c.size - c.replaces;
    if (kept.size + 1 > budget.maxFiles || after > budget.maxBytes) break;
    kept.add(c.rel);
    bytes = after;
  }
  return { kept, leftOut: newestFirst.slice(i) };
}
