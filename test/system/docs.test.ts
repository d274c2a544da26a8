// The documentation as a reader follows it: every link between the pages leads to a page and a heading that exist,
// every page under docs/ opens with its contents, the README stays short, and the README's test command is the one
// CI runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { repoRoot } from "../helpers.js";
import { docBlocks, docText } from "../fixtures/docs.js";

/** README.md, ARCHITECTURE.md and every page under docs/, as paths from the repository's root. */
function pages(): string[] {
  const docs = (dir: string): string[] =>
    readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? docs(join(dir, e.name)) : e.name.endsWith(".md") ? [join(dir, e.name)] : [],
    );
  return ["README.md", "ARCHITECTURE.md", ...docs("docs")];
}

/** The text outside fenced code blocks. */
const prose = (text: string): string => text.replace(/^```[\s\S]*?^```/gm, "");

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6} (.*)$/gm)) {
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

test("every relative link of the docs leads to a file, and its #anchor to a heading there", () => {
  const broken: string[] = [];
  let links = 0;
  for (const page of pages()) {
    for (const m of prose(docText(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target)) continue;
      links++;
      const [path, anchor] = target.split("#", 2) as [string, string | undefined];
      const file = path === "" ? page : join(dirname(page), path);
      if (!existsSync(join(repoRoot, file))) {
        broken.push(`${page}: ${target} (no file ${file})`);
        continue;
      }
      if (anchor === undefined || statSync(join(repoRoot, file)).isDirectory()) continue;
      if (!anchors(docText(file)).has(anchor)) broken.push(`${page}: ${target} (no heading #${anchor} in ${relative(".", file)})`);
    }
  }
  assert.ok(links > 50, `${links} links checked`);
  assert.deepEqual(broken, []);
});

test("every page under docs/ lists its contents, and the README stays short", () => {
  for (const page of pages().filter((p) => p.startsWith("docs/"))) {
    const sections = [...prose(docText(page)).matchAll(/^## /gm)].length;
    if (sections >= 2) assert.match(docText(page), /^(\*\*Contents\*\*|## Contents)$/m, `${page} lists its contents`);
  }
  const lines = docText("README.md").split("\n").length;
  assert.ok(lines <= 300, `README.md has ${lines} lines`);
});

test("the README's test command is .ci/run, which installs what is missing and then runs the suite", () => {
  const [command] = docBlocks("README.md", { heading: "Tests", lang: "sh" });
  assert.equal(command?.body.trim(), ".ci/run");
  assert.ok(statSync(join(repoRoot, ".ci/run")).mode & 0o100, ".ci/run is executable");
  const steps = docText(".ci/run")
    .split("\n")
    .filter((l) => /^npm /.test(l));
  assert.equal(steps[0], "npm ci");
  assert.equal(steps.at(-1), "npm test");
});
