// The package as a library: importing it (the package's main) or the CLI's module runs nothing, prints nothing and
// installs no process handler; only bin/framefi runs the command line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { repoRoot, run } from "../helpers.js";

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
