// The MLSD listings `framefi sync` reads in block mode (parseMlsd in src/client/ftp/block-mode.ts): the lines our
// device sends come out as the card's entries, and seeded random or mutated lines never throw and never yield
// anything but files and folders with sizes and times that are numbers. FUZZ_SEED=<seed> npm test replays a
// failure; npm run fuzz runs many more cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseMlsd } from "../../src/client/ftp/block-mode.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";

describe("MLSD listing parser", () => {
  it("reads files and folders, names with spaces and semicolons, times to the millisecond; skips the rest", () => {
    const text = [
      "type=cdir;modify=20240101000000; .",
      "type=pdir;modify=20240101000000; ..",
      "type=file;size=1234;modify=20240102030405;perm=r; beach photo; 2.jpg",
      "Type=Dir;Modify=20231231235959.5; albums",
      "type=OS.unix=slink:/x;size=3; link",
      "size=9; no type",
      "type=file;size=0; zero.txt",
      "garbage-without-space",
      "",
    ].join("\r\n");
    assert.deepEqual(
      [...parseMlsd(text)],
      [
        ["beach photo; 2.jpg", { type: "file", size: 1234, mtimeMs: Date.UTC(2024, 0, 2, 3, 4, 5) }],
        ["albums", { type: "dir", size: 0, mtimeMs: Date.UTC(2023, 11, 31, 23, 59, 59, 500) }],
        ["zero.txt", { type: "file", size: 0, mtimeMs: undefined }],
      ],
    );
  });

  const seed = fuzzSeed(0x1157);
  it(`never throws on random and mutated listings (seed ${seed})`, () => {
    const r = seeded(seed);
    const good = "type=file;size=200;modify=20240101120000; a.jpg\r\ntype=dir;modify=20240101120000; b\r\n";
    for (let i = 0; i < fuzzCases(3_000); i++) {
      const b = Buffer.from(r.int(2) === 0 ? good : r.bytes(r.int(300)).toString("latin1"), "latin1");
      for (let k = r.int(6); k > 0 && b.length > 0; k--) b[r.int(b.length)] = r.pick([0x3b, 0x3d, 0x20, 0x0a, 0x30 + r.int(10), r.int(256)]);
      for (const [name, e] of parseMlsd(b.toString("utf8"))) {
        assert.ok(name !== "" && name !== "." && name !== "..", `case ${i}`);
        assert.ok(e.type === "file" || e.type === "dir", `case ${i}`);
        assert.ok(Number.isFinite(e.size), `case ${i}`);
        assert.ok(e.mtimeMs === undefined || Number.isFinite(e.mtimeMs), `case ${i}`);
      }
    }
  });
});
