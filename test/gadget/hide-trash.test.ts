// The card image hides every `.trash` folder from the frame (the FAT hidden attribute, by fatattr) before the frame
// gets the card back: `framefi sync --to /a/b --trash` makes /a/b/.trash, deeper than the root and one folder down,
// where the walk once stopped. Here fatattr and mount are scripts on PATH that write down how they were called, and
// the "card" is a plain folder: what is tested is which folders the walk finds.
import assert from "node:assert/strict";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, beforeEach, test } from "node:test";
import { CardImage, TRASH_WALK } from "../../src/device/gadget/image.js";
import { removeDir, tempDir } from "../helpers.js";

let dir = "";
let card = "";
const savedPath = process.env.PATH;
const calls = async (): Promise<string[]> => (await readFile(join(dir, "calls"), "utf8").catch(() => "")).split("\n").filter(Boolean).sort();

before(async () => {
  dir = await tempDir("gadget-trash-");
  card = join(dir, "card");
  for (const tool of ["fatattr", "mount"]) {
    await writeFile(join(dir, tool), `#!/bin/sh\n[ "$(basename "$0")" = fatattr ] && echo "$*" >> '${join(dir, "calls")}'\nexit 0\n`);
    await chmod(join(dir, tool), 0o755);
  }
  process.env.PATH = `${dir}:${savedPath}`;
  await writeFile(join(dir, "card.img"), "");
  for (const d of [".trash", "a/.trash", "a/b/.trash/x/.trash", "a/b/c/d/e/f/.trash", "Été/2024/.trash", "x", "y/z"])
    await mkdir(join(card, d), { recursive: true });
  await writeFile(join(card, "x/.trash"), "a file, not a folder");
});

beforeEach(async () => {
  await writeFile(join(dir, "calls"), "");
});

after(async () => {
  process.env.PATH = savedPath;
  await removeDir(dir);
});

test("every .trash folder on the card is hidden, however deep; not a file so named, nor one inside a .trash", async () => {
  const logs: string[] = [];
  const image = new CardImage(join(dir, "card.img"), card, (m) => logs.push(m));
  await image.mount(false);
  await image.hideTrash();
  assert.deepEqual(await calls(), [".trash", "a/.trash", "a/b/.trash", "a/b/c/d/e/f/.trash", "Été/2024/.trash"].map((p) => `+h ${join(card, p)}`).sort());
  assert.deepEqual(logs, []);
});

test("mounted read-only (at start), nothing was written and nothing is hidden", async () => {
  const image = new CardImage(join(dir, "card.img"), card, () => {});
  await image.mount(true);
  await image.hideTrash();
  assert.deepEqual(await calls(), []);
});

test("the walk is bounded: past its depth it stops and says so", async () => {
  const saved = { ...TRASH_WALK };
  TRASH_WALK.depth = 2;
  try {
    const logs: string[] = [];
    const image = new CardImage(join(dir, "card.img"), card, (m) => logs.push(m));
    await image.mount(false);
    await image.hideTrash();
    assert.deepEqual(await calls(), [".trash", "a/.trash", "a/b/.trash", "Été/2024/.trash"].map((p) => `+h ${join(card, p)}`).sort());
    assert.deepEqual(logs, ["warning: looked for .trash folders in 20000 folders down to 2 levels only; a .trash beyond stays visible to the frame"]);
  } finally {
    Object.assign(TRASH_WALK, saved);
  }
});
