// `npm run bench`: runs every benchmark module in this folder (files named *.bench.ts), one after the other.
// Each module exports `run(): Promise<void>` and prints its own results.
import { readdir } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = (await readdir(here)).filter((f) => f.endsWith(".bench.js")).sort();
for (const file of files) {
  const name = file.replace(/\.bench\.js$/, "");
  if (only.length > 0 && !only.includes(name)) continue;
  console.log(`\n=== ${name} ===`);
  const mod = (await import(pathToFileURL(`${here}/${file}`).href)) as { run: () => Promise<void> };
  await mod.run();
}
