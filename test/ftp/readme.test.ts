// The FTP example block of docs/device.md works as written (ports substituted) against bin/framefi-device.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { eventually, removeDir, run, startDevice, tempDir } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";
import { listTree } from "../fixtures/files.js";

test("the FTP lines of docs/device.md work as written", async (t) => {
  const block = docBlocks("docs/device.md", { heading: "FTP mode", lang: "sh" })[0]?.body;
  assert.ok(block, "the FTP mode section has a shell example");
  const lines = block.split("\n").filter((l) => /^(curl|lftp) /.test(l));
  assert.ok(
    lines.some((l) => l.includes("mirror -R --delete --only-missing --no-perms --parallel=1")),
    "the firmware's sync line",
  );

  const work = await tempDir("framefi-ftp-readme-");
  const dev = await startDevice({ args: ["--boot-delay", "0"] });
  t.after(async () => {
    await dev.stop();
    await removeDir(work);
  });
  await mkdir(join(work, "photos/album"), { recursive: true });
  const photo = randomBytes(50_000);
  await writeFile(join(work, "photos/album/a.jpg"), photo);
  await writeFile(join(work, "beach.jpg"), photo);

  for (const line of lines) {
    const command = line
      .replace(/\s+#.*$/, "")
      .replaceAll("localhost:8080", `127.0.0.1:${dev.port}`)
      .replaceAll("localhost:2121", `127.0.0.1:${dev.ftpPort}`)
      .replace("-p 2121 localhost", `-p ${dev.ftpPort} 127.0.0.1`);
    const listening = dev.program.stdout().split("ftp: listening").length;
    // The download line fetches the file the upload line sent: start it from nothing.
    if (line.includes("curl -C - -O")) await rm(join(work, "beach.jpg"));
    const r = await run("sh", ["-c", command], { cwd: work, timeoutMs: 60_000 });
    assert.equal(r.code, 0, `${line}\n${r.stderr}`);
    if (line.includes("/mode/ftp")) await eventually(() => dev.program.stdout().split("ftp: listening").length > listening, 15_000);
  }
  assert.deepEqual(await listTree(dev.card), ["2024/", "2024/summer/", "2024/summer/beach.jpg", "album/", "album/a.jpg"]);
  assert.deepEqual(await readFile(join(work, "beach.jpg")), photo, "the download is the upload");
});
