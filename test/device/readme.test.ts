// "Done when": docs/device.md shows curl lines that work. Its quick start must answer the JSON it shows, and its
// upload lines must work as written (port substituted) against a running bin/framefi-device.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { eventually, freePort, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";
import { BODY, MODE_FTP } from "./fixtures/contract.js";
import { shellWords } from "./fixtures/http.js";
import { curl } from "../fixtures/http.js";
import { api } from "./fixtures/device.js";

let work: string;
before(async () => {
  work = await tempDir("framefi-readme-");
});
after(async () => {
  await removeDir(work);
});

/** The fenced code blocks of the device's page, in order, with their language. */
const blocks = () => docBlocks("docs/device.md");

test("the quick start answers exactly the JSON docs/device.md shows", async (t) => {
  const all = blocks();
  const i = all.findIndex((b) => /framefi-device .*--card-size (\S+)/.test(b.body));
  assert.ok(i >= 0 && all[i + 1]?.lang === "json", "a start line followed by the JSON it answers");
  const size = all[i]!.body.match(/--card-size (\S+)/)![1]!;
  const dev = await startDevice({ args: ["--card-size", size] });
  t.after(() => dev.stop());
  const r = await curl([`${dev.url}/`]);
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), JSON.parse(all[i + 1]!.body));
  assert.equal(r.body, JSON.stringify(JSON.parse(all[i + 1]!.body)), "byte for byte, in the same field order");
});

test("the upload lines work as written", async (t) => {
  const block = blocks().find((b) => /curl -F "file=@/.test(b.body));
  assert.ok(block, "an upload block");
  const dev: RunningDevice = await startDevice();
  t.after(() => dev.stop());
  const photo = randomBytes(20_000);
  await writeFile(join(work, "photo.jpg"), photo);
  const lines = block.body.split("\n").filter((l) => l.startsWith("curl "));
  assert.ok(lines.length >= 3);
  for (const line of lines) {
    const words = shellWords(line.replaceAll("localhost:8080", `127.0.0.1:${dev.port}`));
    const r = await curl(words.slice(1), { cwd: work });
    assert.equal(r.status, 200, `${line} → ${r.status} ${r.body}`);
    if (line.includes("/mode/ftp")) {
      assert.equal(r.body, BODY.switchedToFtp);
      await eventually(async () => (await api(dev).status()).mode === MODE_FTP || undefined, 10_000);
    } else assert.equal(r.body, BODY.uploaded, line);
  }
  assert.deepEqual(await readFile(join(dev.card, "photo.jpg")), photo);
  assert.deepEqual(await readFile(join(dev.card, "2024/summer/photo.jpg")), photo);
});

test("the collections lines work as written, each answering the JSON its comment shows", async (t) => {
  const [block] = docBlocks("docs/device.md", { heading: "Collections", lang: "sh" });
  assert.ok(block, "a sh block under Collections");
  const lines = block.body.trim().split("\n");
  const cwd = await tempDir("framefi-readme-collections-");
  t.after(() => removeDir(cwd));
  const mkdir = lines.find((l) => l.startsWith("mkdir "))!;
  assert.equal((await run("sh", ["-c", mkdir], { cwd })).code, 0);
  const start = shellWords(lines.find((l) => l.includes("framefi-device"))!);
  const given = start.slice(start.indexOf("framefi-device") + 1);
  // As written but for the ports (free ones) and the state folder; --card and --collections relative to the folder.
  given.splice(given.indexOf("--port"), 2);
  const [port, setupPort, ftpPort] = [await freePort(), await freePort(), await freePort()];
  const ports = ["--port", String(port), "--setup-port", String(setupPort), "--ftp-port", String(ftpPort)];
  const dev = await startDevice({ bare: true, cwd, port, args: [...given, ...ports, "--host", "127.0.0.1", "--state", join(cwd, "state")] });
  t.after(() => dev.stop());
  const curls = lines.filter((l) => l.startsWith("curl "));
  assert.equal(curls.length, 3);
  for (const line of curls) {
    const [command, shown] = line.split(/\s+# /);
    const r = await curl(shellWords(command!.replaceAll("http://localhost:8080", dev.url)).slice(1));
    assert.equal(r.status, 200, `${line} → ${r.status} ${r.body}`);
    assert.equal(r.body, shown, line);
  }
});
