// The whole-system tests need all three programs. On a branch without the client or the hook server's
// -template flag they say what is missing and skip, rather than fail for a reason that is not theirs.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { bin, repoRoot } from "../helpers.js";

export function missingPrograms(): string | undefined {
  const missing: string[] = [];
  if (!existsSync(join(repoRoot, "dist", "src", "client", "cli", "main.js"))) missing.push("the client CLI bin/framefi (issue 6)");
  const help = spawnSync(bin("webhook"), ["-help"], { encoding: "utf8" });
  if (!/-template/.test(`${help.stdout}${help.stderr}`)) missing.push("the hook server's -template flag (issue 3)");
  return missing.length > 0 ? `the whole-system test needs ${missing.join(" and ")}; skipped` : undefined;
}
