// The package as a library: importing it (the package's main) or the CLI's module runs nothing, prints nothing and
// installs no process handler (only bin/framefi runs the command line); its sync() against a real device.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FrameFiClient, MODE_MSC, SyncStopped, sync } from "../../src/client/api/index.js";
import { removeDir, repoRoot, run, startDevice, tempDir } from "../helpers.js";

const PROBE = `
const events = ["uncaughtException", "unhandledRejection", "SIGINT", "SIGTERM", "exit", "beforeExit"];
const count = () => JSON.stringify([...events.map((e) => process.listenerCount(e)), process.stdout.listenerCount("error")]);
const before = count();
for (const module of process.argv.slice(1)) await import(module);
process.stderr.write(before === count() ? "" : "handlers installed: " + before + " → " + count());
`;

test("importing the library or the CLI's module prints nothing, installs no handler and lets the process exit", async () => {
  const modules = ["dist/src/client/api/index.js", "dist/src/client/cli/main.js"].map((m) => join(repoRoot, m));
  const r = await run(process.execPath, ["--input-type=module", "-e", PROBE, ...modules], { timeoutMs: 20_000 });
  assert.deepEqual(r, { code: 0, stdout: "", stderr: "" });
  const plain = await run(process.execPath, ["-e", `import(${JSON.stringify(modules[0])})`], { timeoutMs: 20_000 });
  assert.deepEqual(plain, { code: 0, stdout: "", stderr: "" });
});

test("sync() of the library: its events as it goes; an abort stops it and puts the device back in its mode", async () => {
  const dev = await startDevice();
  const local = await tempDir("framefi-lib-sync-");
  try {
    for (const name of ["a.jpg", "b.jpg", "c.jpg"]) await writeFile(join(local, name), Buffer.alloc(300_000, name.charCodeAt(0)));
    const client = new FrameFiClient({ host: `127.0.0.1:${dev.port}` });
    const heard: string[] = [];
    let progress = 0;
    const result = await sync(client, {
      localDir: local,
      remoteDir: "/lib",
      parallel: 1,
      events: { uploaded: (u) => heard.push(u.rel), uploadProgress: () => progress++ },
    });
    assert.deepEqual([result.uploaded, result.failed, result.finalMode], [3, [], MODE_MSC]);
    assert.deepEqual(heard, ["a.jpg", "b.jpg", "c.jpg"]);
    assert.ok(progress >= 3, `${progress} progress events`);
    assert.deepEqual((await readdir(join(dev.card, "lib"))).sort(), ["a.jpg", "b.jpg", "c.jpg"]);

    await writeFile(join(local, "d.jpg"), Buffer.alloc(300_000, 4));
    const controller = new AbortController();
    const stopped = sync(client, { localDir: local, remoteDir: "/lib", signal: controller.signal, events: { uploadStarted: () => controller.abort() } });
    await assert.rejects(stopped, (e) => e instanceof SyncStopped && e.interrupted && e.mode === MODE_MSC);
    assert.equal((await client.mode()).mode, MODE_MSC);
    await assert.rejects(sync(client, { localDir: local, parallel: 0 }), /parallel must be a whole number from 1 to 16, got 0/);
  } finally {
    await dev.stop();
    await removeDir(local);
  }
});
