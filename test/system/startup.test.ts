// What the programs load before they are ready: a library a command does not use is not loaded at start (sharp's
// libvips and mqtt.js each cost about 100 ms of every start here, more on a Pi). Each program runs with module
// hooks (fixtures/import-log.ts) that record the packages it imports.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, test } from "node:test";
import { bin, removeDir, repoRoot, run, startDevice, tempDir } from "../helpers.js";

const hooks = pathToFileURL(join(repoRoot, "dist/test/fixtures/import-log.js")).href;

/** The environment that records imports into `log`, and what it recorded. */
function recording(log: string): { env: NodeJS.ProcessEnv; packages(): Promise<string[]> } {
  return {
    env: { ...process.env, IMPORT_LOG: log, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${hooks}`.trim() },
    packages: async () => [...new Set((await readFile(log, "utf8").catch(() => "")).split("\n").filter(Boolean))].sort(),
  };
}

describe("start-up loads only what is used", () => {
  test("the recording sees a package imported (the check can fail)", async () => {
    const dir = await tempDir("framefi-imports-");
    try {
      const rec = recording(join(dir, "imports"));
      const r = await run(process.execPath, ["--input-type=module", "-e", 'await import("sharp")'], { env: rec.env });
      assert.equal(r.code, 0, r.stderr);
      assert.ok((await rec.packages()).includes("sharp"));
    } finally {
      await removeDir(dir);
    }
  });

  test("framefi --help and framefi status load neither sharp nor mqtt.js", async () => {
    const dir = await tempDir("framefi-imports-");
    try {
      const rec = recording(join(dir, "imports"));
      const help = await run(bin("framefi"), ["--help"], { env: rec.env });
      assert.equal(help.code, 0, help.stderr);
      const status = await run(bin("framefi"), ["--host", "127.0.0.1:1", "--timeout", "2", "status"], { env: rec.env });
      assert.notEqual(status.code, 0);
      const packages = await rec.packages();
      for (const heavy of ["sharp", "mqtt"]) assert.ok(!packages.includes(heavy), `framefi imported ${heavy}: ${packages.join(" ")}`);
    } finally {
      await removeDir(dir);
    }
  });

  test("a device without a broker does not load mqtt.js", async () => {
    const dir = await tempDir("framefi-imports-");
    const rec = recording(join(dir, "imports"));
    const dev = await startDevice({ env: rec.env });
    try {
      assert.equal((await fetch(`${dev.url}/`)).status, 200);
      const packages = await rec.packages();
      assert.ok(!packages.includes("mqtt"), `the device imported mqtt: ${packages.join(" ")}`);
    } finally {
      await dev.stop();
      await removeDir(dir);
    }
  });
});
