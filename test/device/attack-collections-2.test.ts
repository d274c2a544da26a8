// Attacks on --collections: whatever stands in the state folder in place of the file `collection` (a FIFO, a
// device) is read bounded and without waiting: the device starts on the card it was given.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, run, startDevice, tempDir } from "../helpers.js";
import { get } from "./fixtures/http.js";

for (const [what, make] of [
  ["a FIFO", (file: string) => run("mkfifo", [file]).then(() => undefined)],
  ["a link to /dev/zero", (file: string) => symlink("/dev/zero", file)],
] as const) {
  test(`${what} in place of the state file "collection" does not stop the start: the given card is served`, async () => {
    const dir = await tempDir("framefi-att-col2-");
    try {
      await mkdir(join(dir, "c", "winter"), { recursive: true });
      await mkdir(join(dir, "c", "summer"));
      await mkdir(join(dir, "state"));
      await make(join(dir, "state", "collection"));
      const dev = await startDevice({ card: join(dir, "c", "winter"), state: join(dir, "state"), args: ["--collections", join(dir, "c")] });
      try {
        const listed = JSON.parse((await get(dev.url, "/collections")).text) as { collections: string[]; current: string };
        assert.deepEqual([listed.collections, listed.current], [["summer", "winter"], "winter"]);
      } finally {
        await dev.stop();
      }
    } finally {
      await removeDir(dir);
    }
  });
}
