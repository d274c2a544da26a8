// The sync's one decider (src/client/sync/plan.ts), on its own: what is uploaded, kept, deleted or refused, for
// each pairing of a local entry with the card's. Pure functions, so no device is started here; the sync tests
// drive the same decisions end to end against bin/framefi-device.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { decideUpload, makePlan, type PlanInput } from "../../src/client/sync/plan.js";
import type { RemoteEntry } from "../../src/client/ftp/remote.js";

const T = Date.UTC(2026, 0, 2, 3, 4, 6);

/** A local tree from `path: size` (a number: a file; "dir": a folder). */
function local(entries: Record<string, number | "dir" | undefined>, extra: Partial<PlanInput> = {}): PlanInput {
  const map: PlanInput["entries"] = new Map();
  for (const [rel, v] of Object.entries(entries)) {
    if (v === "dir") map.set(rel, { type: "dir", abs: `/photos/${rel}`, size: 0, mtimeMs: T });
    else map.set(rel, { type: "file", abs: `/photos/${rel}`, size: v, mtimeMs: T });
  }
  return { entries: map, unreadable: new Map(), skipped: [], outside: [], ...extra };
}

/** The card's tree from `path: size` or `path: [size, mtimeMs]` ("dir": a folder). */
function card(entries: Record<string, number | [number, number | undefined] | "dir">): Map<string, RemoteEntry> {
  const map = new Map<string, RemoteEntry>();
  for (const [rel, v] of Object.entries(entries)) {
    if (v === "dir") map.set(rel, { type: "dir", size: 0, mtimeMs: T });
    else if (Array.isArray(v)) map.set(rel, { type: "file", size: v[0], mtimeMs: v[1] });
    else map.set(rel, { type: "file", size: v, mtimeMs: T });
  }
  return map;
}

const keep = { delete: false, canSetTimes: true };
const mirror = { delete: true, canSetTimes: true };

describe("decideUpload", () => {
  const file = { abs: "/photos/a.jpg", size: 10, mtimeMs: T };
  test("a file the card lacks, or has as a folder, is new", () => {
    assert.equal(decideUpload("a.jpg", file, undefined, true)?.why, "new");
    assert.equal(decideUpload("a.jpg", file, { type: "dir", size: 0, mtimeMs: T }, true)?.why, "new");
  });
  test("same size and a time within FAT's 2 s is up to date; a different size is changed", () => {
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 10, mtimeMs: T + 2_000 }, true), undefined);
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 11, mtimeMs: T }, true)?.why, "changed");
  });
  test("with MFMT, a time more than 2 s off either way is changed", () => {
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 10, mtimeMs: T + 2_001 }, true)?.why, "changed");
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 10, mtimeMs: T - 2_001 }, true)?.why, "changed");
  });
  test("without MFMT, only a local file newer than the card's copy is changed", () => {
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 10, mtimeMs: T + 60_000 }, false), undefined);
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 10, mtimeMs: T - 60_000 }, false)?.why, "changed");
  });
  test("a listing without times compares sizes only", () => {
    assert.equal(decideUpload("a.jpg", file, { type: "file", size: 10, mtimeMs: undefined }, true), undefined);
  });
});

describe("makePlan", () => {
  test("uploads what is new or changed, counts what is kept, creates folders parents first", () => {
    const plan = makePlan(local({ "b/c": "dir", b: "dir", "b/c/new.jpg": 5, "same.jpg": 3, "grown.jpg": 9 }), card({ "same.jpg": 3, "grown.jpg": 4 }), keep);
    assert.deepEqual(plan.mkdirs, ["b", "b/c"]);
    assert.deepEqual(
      plan.uploads.map((u) => [u.rel, u.why]),
      [
        ["b/c/new.jpg", "new"],
        ["grown.jpg", "changed"],
      ],
    );
    assert.equal(plan.unchanged, 1);
    assert.deepEqual([plan.deleteFiles, plan.deleteDirs, plan.problems], [[], [], []]);
  });

  test("without --delete nothing on the card is removed; with it, what the folder lacks goes, deepest folders first", () => {
    const remote = card({ old: "dir", "old/deep": "dir", "old/deep/x.jpg": 1, "gone.jpg": 2, "kept.jpg": 1 });
    assert.deepEqual(makePlan(local({ "kept.jpg": 1 }), remote, keep).deleteFiles, []);
    // Two of the card's three files: more than --max-delete's default, so allowed here (the guard's own tests below).
    const plan = makePlan(local({ "kept.jpg": 1 }), remote, { ...mirror, guard: { limit: { share: 1 }, force: false } });
    assert.deepEqual(plan.deleteFiles.sort(), ["gone.jpg", "old/deep/x.jpg"]);
    assert.deepEqual(plan.deleteDirs, ["old/deep", "old"]);
  });

  test("a name that is a file on one side and a folder on the other is a problem without --delete, replaced with it", () => {
    const l = local({ pics: "dir", "pics/a.jpg": 1, "x.jpg": 2 });
    const r = card({ pics: 7, "x.jpg": "dir" });
    const kept = makePlan(l, r, keep);
    assert.deepEqual(
      kept.problems.map((p) => p.rel),
      ["pics", "x.jpg"],
    );
    assert.match(kept.problems[0]!.reason, /the card has a file of that name; rerun with --delete/);
    assert.deepEqual(kept.uploads, [], "nothing under a blocked folder is uploaded");
    const replaced = makePlan(l, r, mirror);
    assert.deepEqual([replaced.deleteFiles, replaced.deleteDirs, replaced.mkdirs], [["pics"], ["x.jpg"], ["pics"]]);
    assert.deepEqual(replaced.uploads.map((u) => u.rel).sort(), ["pics/a.jpg", "x.jpg"]);
  });

  test("an unreadable local folder protects its card copy from --delete and is reported", () => {
    const plan = makePlan(local({ ok: "dir" }, { unreadable: new Map([["secret", "EACCES"]]) }), card({ secret: "dir", "secret/a.jpg": 1 }), mirror);
    assert.deepEqual([plan.deleteFiles, plan.deleteDirs], [[], []]);
    assert.deepEqual(plan.problems, [{ rel: "secret", reason: "cannot read this local folder (EACCES)" }]);
  });

  test("skipped entries, links outside the folder and names with line breaks are reported, not sent", () => {
    const plan = makePlan(local({ "bad\nname.jpg": 1 }, { skipped: ["fifo"], outside: ["link"] }), card({}), keep);
    assert.deepEqual(
      plan.problems.map((p) => p.rel),
      ["fifo", "link", "bad\nname.jpg"],
    );
    assert.deepEqual(plan.uploads, []);
  });

  test("a photo still to be converted (size unknown) waits, with the card's copy to compare with later", () => {
    const plan = makePlan(local({ "raw.heic": undefined }), card({ "raw.heic": 4 }), keep);
    assert.deepEqual(plan.pending, [{ rel: "raw.heic", remote: { type: "file", size: 4, mtimeMs: T } }]);
    assert.deepEqual(plan.uploads, []);
  });
});

describe("the delete guard", () => {
  const photos = (n: number, prefix = "p"): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}.jpg`, 1]));
  test("more than half of the card's files is held back, whatever else the plan does; --force lets it through", () => {
    const remote = card(photos(10));
    const plan = makePlan(local({ ...photos(4), "new.jpg": 1 }), remote, mirror);
    assert.deepEqual([plan.deleteFiles, plan.heldDeletes.length, plan.uploads.map((u) => u.rel)], [[], 6, ["new.jpg"]]);
    assert.deepEqual(
      plan.problems.map((p) => p.rel),
      ["--delete"],
    );
    assert.match(plan.problems[0]!.reason, /would remove 6 of the card's 10 files, more than --max-delete 50%; check the source, then rerun with --force/);
    assert.equal(makePlan(local(photos(5)), remote, mirror).deleteFiles.length, 5, "exactly half is allowed");
    assert.equal(makePlan(local(photos(4)), remote, { ...mirror, guard: { limit: { share: 0.5 }, force: true } }).deleteFiles.length, 6);
    assert.equal(makePlan(local(photos(8)), remote, { ...mirror, guard: { limit: { files: 1 }, force: false } }).heldDeletes.length, 2);
  });
  test("photos are counted among photos: other files on the card make no room for deleting them", () => {
    const notes = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`n${i}.txt`, 1]));
    const plan = makePlan(local({ ...photos(1), ...notes }), card({ ...photos(4), ...notes }), mirror);
    assert.equal(plan.heldDeletes.length, 3);
    assert.match(plan.problems[0]!.reason, /would remove 3 of the card's 4 photos, more than --max-delete 50%; check the source, then rerun with --force/);
    assert.equal(makePlan(local({ ...photos(2), ...notes }), card({ ...photos(4), ...notes }), mirror).deleteFiles.length, 2, "half of the photos");
  });
  test("a source with no file deletes nothing, even with --force; a name changing type is still replaced", () => {
    const remote = card({ ...photos(3), sub: 1 });
    const plan = makePlan(local({ sub: "dir" }), remote, { ...mirror, guard: { limit: { share: 1 }, force: true } });
    assert.deepEqual([plan.deleteFiles, plan.heldDeletes.sort(), plan.mkdirs], [["sub"], ["p0.jpg", "p1.jpg", "p2.jpg"], ["sub"]]);
    assert.match(plan.problems[0]!.reason, /the source lists no files/);
  });
});
