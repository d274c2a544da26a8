// Upload details beyond the black-box suite: the raw PUT form of the firmware docs, a switch to MSC mode during
// an upload, 507 answered before the body for clients that wait for 100 Continue.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { curl } from "../fixtures/http.js";

let dev: RunningDevice;
let work: string;

before(async () => {
  work = await tempDir("framefi-impl-upload-");
  dev = await startDevice({ args: ["--card-size", "8MiB"] });
  await fetch(`${dev.url}/mode/ftp`, { method: "POST" }).then((r) => r.text());
  await eventually(async () => ((await (await fetch(`${dev.url}/mode/ftp`)).json()) as { mode: string }).mode === "Application (FTP Server)");
});
after(async () => {
  await dev?.stop();
  await removeDir(work);
});

test("PUT /upload?filename= with the raw body (the firmware docs' curl line)", async () => {
  const local = join(work, "image.jpg");
  await writeFile(local, Buffer.alloc(10_000, 9));
  const r = await curl(["-X", "PUT", "--data-binary", `@${local}`, `${dev.url}/upload?filename=raw/image.jpg`]);
  assert.equal(r.status, 200);
  assert.equal(r.body, '{"status":"success","message":"File uploaded successfully."}');
  assert.deepEqual(await readFile(join(dev.card, "raw/image.jpg")), Buffer.alloc(10_000, 9));
  const missing = await curl(["-X", "PUT", "--data-binary", `@${local}`, `${dev.url}/upload`]);
  assert.equal(missing.status, 400);
  assert.match(missing.body, /^\{"status":"error","message":"Missing file name[^"]*"\}$/);
});

test("a file larger than the card → 507 before the body is sent (Expect: 100-continue)", async () => {
  const local = join(work, "big.bin");
  await writeFile(local, Buffer.alloc(9 * 1024 * 1024));
  const r = await curl(["-H", "Expect: 100-continue", "-F", `file=@${local}`, `${dev.url}/upload`]);
  assert.equal(r.status, 507);
  assert.deepEqual(await readdir(join(dev.card)), ["raw"]);
});

test("switching to MSC mode during an upload aborts it and removes the partial file", async () => {
  const local = join(work, "slow.bin");
  await writeFile(local, Buffer.alloc(3 * 1024 * 1024, 1));
  const upload = curl(["--limit-rate", "1M", "-F", `file=@${local}`, `${dev.url}/upload`]);
  await eventually(async () => (await readdir(dev.card)).some((n) => n.endsWith(".part")), 10_000);
  const sw = await fetch(`${dev.url}/mode/msc`, { method: "POST" });
  assert.equal(await sw.text(), '{"status":"success","message":"Attempting to switch to MSC mode."}');
  const r = await upload;
  assert.equal(r.status, 400);
  assert.equal(r.body, '{"status":"error","message":"Cannot upload in MSC mode."}');
  assert.deepEqual(await readdir(dev.card), ["raw"]);
});

test("HEAD answers like GET without a body", async () => {
  const r = await fetch(`${dev.url}/`, { method: "HEAD" });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "application/json");
  assert.equal(await r.text(), "");
});

test("a temp file left by a crash counts while the card is a USB drive, and is removed (and uncounted) when the card returns to the network", async () => {
  const stale = join(dev.card, ".framefi-upload-0123456789abcdef.part");
  const count = async (): Promise<number> => ((await (await fetch(`${dev.url}/`)).json()) as { sd_card: { file_count: number } }).sd_card.file_count;
  const before = await count();
  await writeFile(stale, "half an upload");
  await eventually(async () => (await count()) === before + 1, 5_000);
  await (await fetch(`${dev.url}/mode/ftp`, { method: "POST" })).text();
  await eventually(async () => !(await readdir(dev.card)).includes(".framefi-upload-0123456789abcdef.part"), 5_000);
  assert.equal(await count(), before);
});
