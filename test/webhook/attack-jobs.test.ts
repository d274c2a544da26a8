// Attacks on the job model (issue 15) through real bin/webhook: a symlink planted where the jobs
// file's temporary copy is written, and /jobs credentials that must not pass.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks } from "./fixtures/harness.js";
import { readJobsFile } from "./fixtures/jobs-file.js";

describe("-jobs attacks", () => {
  let dir = "";
  before(async () => {
    dir = await tempDir("webhook-jobs-attack-");
  });
  after(async () => {
    await removeDir(dir);
  });

  test("-jobs-file: a symlink planted at the temporary file's name is not followed (the file it names is untouched)", async () => {
    const hooks = await writeHooks(dir, [
      {
        id: "say",
        "execute-command": "/bin/echo",
        "pass-arguments-to-command": [{ source: "string", name: "secret-output" }],
        "include-command-output-in-response": true,
      },
    ]);
    const file = join(dir, "history.json");
    const victim = join(dir, "victim.txt");
    await writeFile(victim, "precious\n");
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-file", file]);
    try {
      await symlink(victim, `${file}.${s.proc.child.pid}.tmp`);
      assert.equal((await send(`${s.base}/hooks/say`)).status, 200);
      const saved = await eventually(async () => {
        try {
          const jobs = await readJobsFile(file);
          return jobs.at(-1)?.output ? jobs : undefined;
        } catch {
          return undefined;
        }
      });
      assert.equal(saved!.at(-1)!.output, "secret-output\n");
      assert.equal(await readFile(victim, "utf8"), "precious\n");
    } finally {
      await s.stop();
    }
  });

  test("/jobs with -jobs-token: a wrong, longer, shorter, empty or basic-encoded token is refused", async () => {
    const hooks = await writeHooks(
      dir,
      [{ id: "say", "execute-command": "/bin/echo", "pass-arguments-to-command": [{ source: "string", name: "secret-output" }] }],
      "token.json",
    );
    const s = await startServer(["-hooks", hooks, "-jobs", "-jobs-token", "tok3n"]);
    try {
      const id = (await send(`${s.base}/hooks/say`)).headers["x-job-id"] as string;
      const tries = ["Bearer tok3", "Bearer tok3nn", "Bearer ", "Bearer", "tok3n", "Basic " + Buffer.from("tok3n").toString("base64"), "BearerXtok3n"];
      for (const authorization of tries) {
        for (const path of [`/jobs/${id}`, "/jobs", "/jobs?hook=say", `/jobs/${id}/`, "/jobs/"]) {
          const r = await send(s.base + path, { method: "GET", headers: { Authorization: authorization } });
          assert.equal(r.status, 401, `${authorization} ${path}`);
          assert.doesNotMatch(r.text, /secret-output/);
        }
      }
      await eventually(async () =>
        (await send(`${s.base}/jobs/${id}`, { method: "GET", headers: { Authorization: "bearer  tok3n " } })).text.includes("secret-output"),
      );
    } finally {
      await s.stop();
    }
  });
});
