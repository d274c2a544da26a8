// A seeded pseudo-random source for the fuzz tests: the same seed gives the same inputs, so a
// failure names its seed and can be replayed (FUZZ_SEED=... npm test).
export interface Random {
  /** A whole number in [0, n). */
  int(n: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** n random bytes. */
  bytes(n: number): Buffer;
}

/** mulberry32: small, fast, and good enough to spread fuzz inputs. */
export function seeded(seed: number): Random {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    int,
    pick: <T>(items: readonly T[]): T => items[int(items.length)]!,
    bytes: (n: number) => Buffer.from(Array.from({ length: n }, () => int(256))),
  };
}

/** The seed of this run: FUZZ_SEED when set, else a fixed one so the suite is reproducible. */
export function fuzzSeed(fallback: number): number {
  const s = process.env.FUZZ_SEED;
  return s === undefined || s === "" ? fallback : Number(s) >>> 0;
}

/** How many cases a fuzz test runs: FUZZ_CASES (npm run fuzz sets it high), else the suite's bound. */
export function fuzzCases(suiteDefault: number): number {
  const n = Number(process.env.FUZZ_CASES);
  return Number.isFinite(n) && n > 0 ? n : suiteDefault;
}
