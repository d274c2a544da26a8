// Attacks on --collections: a state file `collection` that is a FIFO must not hang the device's start forever.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { bin, removeDir, run, tempDir } from "../helpers.js";

test("a FIFO in place of the state file `collection` does not hang the start (device answers or refuses)", async () => {
  const dir = await tempDir("framefi-att-col2-");
  try {
    await mkdir(join(dir, "c", "winter"), { recursive: true });
    await mkdir(join(dir, "state"));
    execFileSync("mkfifo", [join(dir, "state", "collection")]);
    const args = ["--port", "0", "--ftp-port", "0", "--card", join(dir, "c", "winter"), "--collections", join(dir, "c"), "--state", join(dir, "state")];
    const r = await run(bin("framefi-device"), args, { timeoutMs: 8_000 });
    assert.match(r.stderr, /web API listening/, `start hung on the FIFO: ${r.stderr}`);
  } finally {
    await removeDir(dir);
  }
});
