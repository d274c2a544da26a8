// The device page's commands as a newcomer runs them, in order: the firmware docs' curl block against a running
// framefi-device, through its restart and its Wi-Fi reset (and the setup page saved with curl, as docs/device.md says),
// every line answering what its comment shows.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";

let dev: RunningDevice;
let dir: string;
before(async () => {
  dev = await startDevice();
  dir = await tempDir("framefi-readme-");
  await writeFile(join(dir, "image.jpg"), "a picture");
});
after(async () => {
  await dev?.stop();
  await removeDir(dir);
});

test("the firmware docs' curl block works line by line, in order, across the restart and the Wi-Fi reset", async () => {
  const block = docBlocks("docs/device.md", { heading: "The firmware docs' curl lines", lang: "sh" }).find(
    (b) => b.body.includes("/wifi/reset") && b.body.includes("/led/brightness"),
  )?.body;
  assert.ok(block, "docs/device.md has the firmware docs' curl block");
  // A line's expected answer is its comment; a comment alone on the next line continues it.
  const lines = block.split("\n");
  const api = `127.0.0.1:${dev.port}`;
  let checked = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith("curl ")) continue;
    const [command, comment = ""] = line.split(/\s+#\s+/, 2);
    const next = lines[i + 1]?.trim() ?? "";
    const expected = comment.startsWith("{") ? comment : next.startsWith("# {") ? next.slice(2) : undefined;
    const sh = command!
      .replaceAll("localhost:8080", api)
      .replaceAll("localhost:8081", `127.0.0.1:${dev.setupPort}`)
      .replace("/path/to/your/image.jpg", join(dir, "image.jpg"))
      .replace("<USERNAME>:<PASSWORD>", "anyone:anything");
    const r = await run("sh", ["-c", `${sh} -s -w '\\n%{http_code}'`]);
    const body = r.stdout.slice(0, r.stdout.lastIndexOf("\n"));
    const status = r.stdout.slice(r.stdout.lastIndexOf("\n") + 1);
    assert.equal(status, "200", `${line}\n→ ${r.stdout} ${r.stderr}`);
    if (expected) assert.equal(body, expected, line);
    if (line.includes("/wifisave")) assert.match(body, /Credentials saved/);
    checked++;
    // What the page says to wait for: the API back after a restart or after the setup page is saved.
    if (line.includes("/device/restart") || line.includes("/wifisave")) {
      await eventually(async () => (await fetch(`http://${api}/`)).ok, 15_000);
    }
    if (line.includes("/wifi/reset")) await eventually(async () => (await fetch(`http://127.0.0.1:${dev.setupPort}/`)).ok, 15_000);
    const switched = / -X POST .*\/mode\/(ftp|msc)/.exec(line)?.[1];
    if (switched) {
      const name = switched === "ftp" ? "Application (FTP Server)" : "USB MSC";
      await eventually(async () => ((await (await fetch(`http://${api}/`)).json()) as { mode: string }).mode === name);
    }
  }
  assert.ok(checked >= 25, `${checked} lines run`);
});
