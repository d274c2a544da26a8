// --order and --max-per-folder on their own (src/client/sync/layout.ts, pure): the numbers a file keeps across
// syncs, the names that sort as asked, the subfolders; and seeded fuzz of the option parsers, the .env's sections
// and the layout's invariants. order.test.ts drives the same through bin/framefi and bin/framefi-device.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { assignNumbers, layOut, parseMaxPerFolder, parseOrder } from "../../src/client/sync/layout.js";
import { EnvFileError, parseEnv } from "../../src/client/cli/env-file.js";
import { UsageError } from "../../src/client/cli/usage.js";
import type { PlanInput } from "../../src/client/sync/plan.js";
import type { RemoteEntry } from "../../src/client/ftp/remote.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";

function input(files: Record<string, number>): PlanInput {
  const entries: PlanInput["entries"] = new Map();
  for (const [rel, mtimeMs] of Object.entries(files)) {
    const dir = rel.split("/").slice(0, -1).join("/");
    if (dir) entries.set(dir, { type: "dir", abs: `/p/${dir}`, size: 0, mtimeMs: 0 });
    entries.set(rel, { type: "file", abs: `/p/${rel}`, size: 1, mtimeMs });
  }
  return { entries, unreadable: new Map(), skipped: [], outside: [] };
}
const card = (rels: string[]): Map<string, RemoteEntry> => new Map(rels.map((r) => [r, { type: "file", size: 1, mtimeMs: 0 }]));
const files = (p: PlanInput): string[] => [...p.entries].filter(([, e]) => e.type === "file").map(([r]) => r);

describe("assignNumbers", () => {
  test("a first sync numbers 1000 apart; files in order keep theirs; a new one takes the gap", () => {
    assert.deepEqual(assignNumbers([undefined, undefined, undefined]), [1000, 2000, 3000]);
    assert.deepEqual(assignNumbers([1000, undefined, 2000, 3000]), [1000, 1500, 2000, 3000]);
    assert.deepEqual(assignNumbers([undefined, 1000, 2000]), [500, 1000, 2000]);
    assert.deepEqual(assignNumbers([1000, 2000, undefined]), [1000, 2000, 3000]);
  });
  test("only the files out of order move; a full gap moves its right neighbour, not the rest", () => {
    assert.deepEqual(assignNumbers([3000, 1000, 2000]), [500, 1000, 2000]);
    assert.deepEqual(assignNumbers([1, undefined, 2, 3000]), [1, 1001, 2001, 3000]);
  });
});

describe("layOut", () => {
  test("date order: names sort by date; a photo older than the rest is the only new name", () => {
    const first = layOut(input({ "c.jpg": 3, "a.jpg": 1, "b.jpg": 2 }), new Map(), { order: { by: "date" } });
    assert.deepEqual(files(first.input), ["00001000-a.jpg", "00002000-b.jpg", "00003000-c.jpg"]);
    const second = layOut(input({ "c.jpg": 3, "a.jpg": 1, "b.jpg": 2, "z.jpg": 0 }), card(files(first.input)), { order: { by: "date" } });
    assert.deepEqual(files(second.input), ["00000500-z.jpg", "00001000-a.jpg", "00002000-b.jpg", "00003000-c.jpg"]);
  });
  test("shuffle: the same seed the same order, another seed another", () => {
    const names = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`p${i}.jpg`, 0]));
    const order = (seed: string): string[] => files(layOut(input(names), new Map(), { order: { by: "shuffle", seed } }).input).map((r) => r.slice(9));
    assert.deepEqual(order("1"), order("1"));
    assert.notDeepEqual(order("1"), order("2"));
    assert.notDeepEqual(order("1"), Object.keys(names).sort());
  });
  test("--max-per-folder spreads a full folder into 001, 002…, in order, each folder apart", () => {
    const l = layOut(input({ "a.jpg": 0, "b.jpg": 0, "c.jpg": 0, "x/d.jpg": 0 }), new Map(), { order: { by: "name" }, maxPerFolder: 2 });
    assert.deepEqual(files(l.input), ["001/00001000-a.jpg", "001/00002000-b.jpg", "002/00003000-c.jpg", "x/00001000-d.jpg"]);
    assert.equal(l.input.entries.get("002")?.type, "dir");
    // Read back from the subfolders, the numbers stay.
    const again = layOut(input({ "a.jpg": 0, "b.jpg": 0, "c.jpg": 0, "x/d.jpg": 0 }), card(files(l.input)), { order: { by: "name" }, maxPerFolder: 2 });
    assert.deepEqual(files(again.input), files(l.input));
  });
  test("a file named like a subfolder it needs is spread with the others, not a clash", () => {
    const l = layOut(input({ "001": 0, "b.jpg": 0, "c.jpg": 0 }), new Map(), { maxPerFolder: 2 });
    assert.deepEqual(l.problems, []);
    assert.deepEqual(files(l.input), ["001/001", "001/b.jpg", "002/c.jpg"]);
  });
});

describe("fuzz: parsers and layout invariants", () => {
  const seed = fuzzSeed(35);
  const rnd = seeded(seed);
  const text = (n: number): string =>
    Array.from({ length: rnd.int(n) }, () => rnd.pick(["a", "1", ":", " ", "[", "]", "=", "\n", '"', "frame", "shuffle", "é", "\0", "#"])).join("");
  test(`parseOrder, parseMaxPerFolder and parseEnv give a value or their own error (seed ${seed})`, () => {
    for (let i = 0; i < fuzzCases(800); i++) {
      const t = text(40);
      for (const [fn, kind] of [
        [() => parseOrder(t, "--order"), UsageError],
        [() => parseMaxPerFolder(t, "--max-per-folder"), UsageError],
        [() => parseEnv(t), EnvFileError],
      ] as const) {
        try {
          fn();
        } catch (e) {
          assert.ok(e instanceof kind, `${JSON.stringify(t)}: ${String(e)}`);
        }
      }
    }
  });
  test(`layOut: unique names, in the asked order in each folder (seed ${seed})`, () => {
    for (let i = 0; i < fuzzCases(300); i++) {
      const n = rnd.int(30);
      const local = Object.fromEntries(Array.from({ length: n }, (_, j) => [`${rnd.pick(["", "d/"])}f${j}.jpg`, rnd.int(5)]));
      const onCard = Object.keys(local)
        .filter(() => rnd.int(2) === 0)
        .map((rel) => rel.replace(/[^/]*$/, (b) => `${String(rnd.int(4) * rnd.pick([1, 1000, 5e6])).padStart(8, "0")}-${b}`));
      const l = layOut(input(local), card(onCard), { order: { by: "date" }, maxPerFolder: rnd.pick([undefined, 3]) });
      const out = files(l.input);
      assert.equal(new Set(out).size, n);
      assert.equal(out.length, n);
      for (const folder of ["", "d/"]) {
        const mine = out.filter((r) => (folder ? r.startsWith(folder) : !r.startsWith("d/")));
        const dates = mine.map((r) => local[folder + r.split("-").slice(1).join("-")]!);
        assert.deepEqual(
          dates,
          [...dates].sort((a, b) => a - b),
          `${JSON.stringify({ local, onCard, out })}`,
        );
      }
    }
  });
});
