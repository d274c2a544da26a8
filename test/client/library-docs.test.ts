// docs/library.md works as written: each ```ts block is type-checked against the package's own types (imported as
// "framefi-system", as a user would) and run, in the page's order, against a real bin/framefi-device with its
// address in place of 192.168.1.50, in a folder holding beach.jpg and photos/.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, readdir, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp from "sharp";
import { removeDir, repoRoot, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";

let dev: RunningDevice;
let work: string;

before(async () => {
  dev = await startDevice({ args: ["--web-user", "admin", "--web-password", "s3cret"] });
  work = await tempDir("framefi-docs-");
  await mkdir(join(work, "node_modules", "@types"), { recursive: true });
  await symlink(repoRoot, join(work, "node_modules", "framefi-system"));
  await symlink(join(repoRoot, "node_modules", "@types", "node"), join(work, "node_modules", "@types", "node"));
  await writeFile(join(work, "package.json"), JSON.stringify({ type: "module" }));
  await writeFile(
    join(work, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, types: ["node"] } }),
  );
  await mkdir(join(work, "photos"));
  const photo = (seed: number) => sharp({ create: { width: 1600, height: 1200, channels: 3, background: { r: seed, g: 120, b: 200 } } }).jpeg();
  await photo(10).toFile(join(work, "beach.jpg"));
  await photo(90).toFile(join(work, "photos", "sunset.jpg"));
});
after(async () => {
  await dev?.stop();
  await removeDir(work);
});

test("every example of docs/library.md type-checks and runs against a real device", async () => {
  const blocks = docBlocks("docs/library.md", { lang: "ts" }).map((b) => b.body.replaceAll("192.168.1.50", `127.0.0.1:${dev.port}`));
  assert.ok(blocks.length >= 10, `${blocks.length} examples`);
  const names = blocks.map((_, i) => `example-${String(i + 1).padStart(2, "0")}.ts`);
  for (const [i, block] of blocks.entries()) await writeFile(join(work, names[i]!), block);

  const checked = await run(join(repoRoot, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: work, timeoutMs: 60_000 });
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  for (const name of names) {
    const r = await run(process.execPath, [name.replace(/\.ts$/, ".js")], { cwd: work, timeoutMs: 60_000 });
    assert.equal(r.code, 0, `${name}:\n${r.stdout}${r.stderr}`);
    assert.equal(r.stderr, "", name);
    assert.notEqual(r.stdout, "", `${name} prints what it did`);
  }

  // What the examples did is on the card: the uploads, the synced folder, the photos made for the frame.
  assert.ok((await stat(join(dev.card, "2024", "beach.jpg"))).size > 0);
  assert.equal(await readFile(join(dev.card, "notes", "hello.txt"), "utf8"), "hello, frame\n");
  assert.deepEqual(await readdir(join(dev.card, "album")), ["sunset.jpg"]);
  assert.deepEqual(
    await sharp(join(dev.card, "frame", "sunset.jpg"))
      .metadata()
      .then((m) => [m.width, m.height]),
    [800, 600],
  );
});
