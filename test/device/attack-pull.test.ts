// Attack: --every takes up to 30 days, but a Node timer takes at most 2^31-1 ms (24.8 days); a longer one fired at
// once and then every millisecond, so `--every 30d` pulled without end instead of once a month.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir } from "../helpers.js";

test("--every 30d pulls after start and then waits, it does not pull without end", async () => {
  const source = await tempDir("framefi-attack-pull-");
  await writeFile(join(source, "a.jpg"), "photo");
  const dev = await startDevice({ args: ["--pull", source, "--every", "30d", "--boot-delay", "0"] });
  try {
    const panel = async (): Promise<{ pull?: { uploaded: number } }> =>
      (await fetch(`${dev.url}/panel/state`)).json() as Promise<{ pull?: { uploaded: number } }>;
    while ((await panel()).pull === undefined) await new Promise((r) => setImmediate(r));
    assert.doesNotMatch(dev.program.stderr(), /TimeoutOverflowWarning/);
  } finally {
    await dev.stop();
    await removeDir(source);
  }
});
