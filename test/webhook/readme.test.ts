// The signature example of docs/webhook/signatures.md as a migrating user runs it: its hooks file, then its shell lines with curl and
// openssl, each curl answering what the comment under it shows (the port substituted).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { removeDir, run, tempDir } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";
import { startServer, type Server } from "./fixtures/harness.js";
import { writeFile } from "node:fs/promises";

/** The fenced code blocks of the signatures page, in order. */
const blocks = docBlocks("docs/webhook/signatures.md");

let dir: string;
let server: Server;
let script: string;
before(async () => {
  const i = blocks.findIndex((b) => b.lang === "json" && b.body.includes('"type": "stripe-signature"'));
  assert.ok(i >= 0 && blocks[i + 1]?.lang === "sh", "the signature example: a hooks file, then its shell lines");
  script = blocks[i + 1]!.body;
  dir = await tempDir("webhook-readme-");
  await writeFile(join(dir, "hooks.json"), blocks[i]!.body);
  server = await startServer(["-hooks", join(dir, "hooks.json"), "-verbose"]);
});
after(async () => {
  await server?.stop();
  await removeDir(dir);
});

test("the signature schemes' example: every curl answers what its comment shows, the log says why one was refused", async () => {
  const lines = script.trimEnd().split("\n");
  const expected: string[] = [];
  const runnable: string[] = [];
  for (const [k, line] of lines.entries()) {
    if (line.startsWith("#")) continue;
    runnable.push(line.replace(/localhost:9000/g, `127.0.0.1:${server.port}`).replace(/^curl /, "curl -sS "));
    if (!line.startsWith("curl ")) continue;
    // the comment under a curl line is its answer; "(log: …)" after it is what the log shows
    expected.push(lines[k + 1]!.replace(/^# /, "").replace(/\s+\(log: .*\)$/, ""));
    runnable.push("echo @@");
  }
  assert.equal(expected.length, 3, "three requests");
  const r = await run("bash", ["-e", "-c", runnable.join("\n")]);
  assert.equal(r.code, 0, r.stderr);
  const answers = r.stdout
    .split("@@\n")
    .slice(0, -1)
    .map((a) => a.trim());
  assert.deepEqual(answers, expected);
  const logged = /\(log: (.*)\)$/m.exec(script)![1]!.split(" … ");
  for (const part of logged) assert.ok(server.logs().includes(part), `the log shows "${part}":\n${server.logs()}`);
});
