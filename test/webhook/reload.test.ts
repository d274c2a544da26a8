// Reloading hooks: -hotreload and SIGUSR1/SIGHUP. A hooks file edited in place, replaced by a
// rename, swapped through a symlink (as kubectl does for ConfigMaps), removed and re-created;
// an invalid file keeps the old hooks; requests during 100 rewrites only ever see a valid set.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventually, freePort, removeDir, tempDir } from "../helpers.js";
import { send } from "./fixtures/harness.js";
import { startWebhook, type Webhook } from "./fixtures/flags.js";

/** A hook whose response message names the set it belongs to. */
const hook = (id: string, label: string): unknown => ({ id, "execute-command": "/bin/true", "response-message": label });
const json = (hooks: unknown[]): string => JSON.stringify(hooks, null, 2);

interface Running {
  w: Webhook;
  base: string;
}

async function serve(args: string[]): Promise<Running> {
  const port = await freePort();
  const w = await startWebhook(["-verbose", "-ip", "127.0.0.1", "-port", String(port), ...args]);
  return { w, base: `http://127.0.0.1:${port}/hooks` };
}

/** The answer for hook `id`: its message, or the status when it is not served. */
async function answer(base: string, id: string): Promise<string> {
  const r = await send(`${base}/${id}`, { method: "GET" });
  return r.status === 200 ? r.text : String(r.status);
}

let dir = "";
before(async () => (dir = await tempDir("webhook-reload-")));
after(() => removeDir(dir));

describe("-hotreload", () => {
  let s: Running;
  let file = "";
  let other = "";
  before(async () => {
    file = join(dir, "hooks.json");
    other = join(dir, "other.json");
    await writeFile(file, json([hook("a", "a-v1")]));
    await writeFile(other, json([hook("o", "other")]));
    s = await serve(["-hotreload", "-hooks", file, "-hooks", other]);
  });
  after(() => s?.w.stop());

  test("sets up a watcher per file", () => {
    assert.match(s.w.logs(), new RegExp(`setting up file watcher for ${file}`));
    assert.match(s.w.logs(), new RegExp(`setting up file watcher for ${other}`));
  });

  test("a file modified in place is reloaded", async () => {
    await writeFile(file, json([hook("a", "a-v2"), hook("b", "b-v2")]));
    await eventually(async () => (await answer(s.base, "b")) === "b-v2", 10_000);
    assert.equal(await answer(s.base, "a"), "a-v2");
    assert.equal(await answer(s.base, "o"), "other");
    assert.match(s.w.logs(), /hooks file .*hooks\.json modified/);
  });

  test("an invalid file keeps the old hooks serving and the log says why", async () => {
    const before = s.w.logs().length;
    await writeFile(file, '[{"id": "a", "execute-command": ');
    await eventually(() => s.w.logs().slice(before).includes("keeping the 2 hook(s) loaded before"), 10_000);
    assert.match(s.w.logs().slice(before), /couldn't load hooks from file! .*hooks\.json: line \d+, column \d+: invalid JSON/);
    assert.equal(await answer(s.base, "a"), "a-v2");
    assert.equal(await answer(s.base, "b"), "b-v2");
  });

  test("a duplicate id across files is refused and the previous set kept", async () => {
    const before = s.w.logs().length;
    await writeFile(file, json([hook("a", "a-dup"), hook("o", "stolen")]));
    await eventually(() => s.w.logs().slice(before).includes("reverting hooks back to the previous configuration"), 10_000);
    assert.equal(await answer(s.base, "a"), "a-v2");
    assert.equal(await answer(s.base, "o"), "other");
  });

  test("a file replaced by a rename (as editors save) is reloaded", async () => {
    const tmp = join(dir, ".hooks.json.swp");
    await writeFile(tmp, json([hook("a", "a-v3")]));
    await rename(tmp, file);
    await eventually(async () => (await answer(s.base, "a")) === "a-v3", 10_000);
    assert.equal(await answer(s.base, "b"), "404");
  });

  test("a removed file drops its hooks; the other file's hooks stay", async () => {
    await rm(file);
    await eventually(async () => (await answer(s.base, "a")) === "404", 10_000);
    assert.equal(await answer(s.base, "o"), "other");
    assert.match(s.w.logs(), /hooks file .*hooks\.json removed/);
    assert.match(s.w.logs(), /removed 1 hook\(s\) that were loaded from file .*hooks\.json/);
  });

  test("a re-created file is loaded again", async () => {
    await writeFile(file, json([hook("a", "a-v4")]));
    await eventually(async () => (await answer(s.base, "a")) === "a-v4", 10_000);
  });

  test("a file deleted and written again at once (as some editors save) never drops its hooks", async () => {
    const answers: string[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) answers.push(await answer(s.base, "a"));
    })();
    /** Resolves once the poller has had `n` more answers. */
    const answered = (n: number): Promise<boolean> => {
      const target = answers.length + n;
      return eventually(() => answers.length >= target, 10_000);
    };
    await answered(3);
    await rm(file);
    await new Promise((r) => setTimeout(r, 120)); // the editor's gap between delete and write, part of the scenario
    await writeFile(file, json([hook("a", "a-v5")]));
    await eventually(async () => (await answer(s.base, "a")) === "a-v5", 10_000);
    await answered(10);
    polling = false;
    await poller;
    assert.deepEqual(
      answers.filter((a) => a !== "a-v4" && a !== "a-v5"),
      [],
    );
  });

  test("a request in flight during a reload is answered wholly by the set it started with", async () => {
    const started = join(dir, "slow-started");
    const slow = (label: string): unknown => ({
      id: "slow",
      "execute-command": "/bin/sh",
      "include-command-output-in-response": true,
      "response-headers": [{ name: "X-Set", value: label }],
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: `touch ${started}; sleep 1; echo ${label}` },
      ],
    });
    await writeFile(file, json([slow("v1")]));
    await eventually(async () => (await send(`${s.base}/slow`, { method: "GET" })).text === "v1\n", 10_000);
    await rm(started, { force: true });
    const inFlight = send(`${s.base}/slow`, { method: "GET" });
    await eventually(() => existsSync(started), 10_000);
    await writeFile(file, json([slow("v2")]));
    const first = await inFlight;
    assert.equal(first.text, "v1\n");
    assert.equal(first.headers["x-set"], "v1");
    // The new set serves the next requests once the watcher has reloaded it.
    const next = await eventually(async () => {
      const r = await send(`${s.base}/slow`, { method: "GET" });
      return r.text === "v2\n" && r;
    }, 15_000);
    assert.equal(next.headers["x-set"], "v2");
  });
});

describe("-hotreload with a ConfigMap-style symlink swap", () => {
  let s: Running;
  let mount = "";
  before(async () => {
    // kubectl's layout: hooks.json -> ..data/hooks.json, ..data -> ..<timestamp>/
    mount = join(dir, "configmap");
    await mkdir(join(mount, "..v1"), { recursive: true });
    await writeFile(join(mount, "..v1", "hooks.json"), json([hook("cm", "cm-v1")]));
    await symlink("..v1", join(mount, "..data"));
    await symlink("..data/hooks.json", join(mount, "hooks.json"));
    s = await serve(["-hotreload", "-hooks", join(mount, "hooks.json")]);
  });
  after(() => s?.w.stop());

  test("swapping ..data to a new folder reloads the hooks", async () => {
    assert.equal(await answer(s.base, "cm"), "cm-v1");
    await mkdir(join(mount, "..v2"));
    await writeFile(join(mount, "..v2", "hooks.json"), json([hook("cm", "cm-v2")]));
    await symlink("..v2", join(mount, "..data_tmp"));
    await rename(join(mount, "..data_tmp"), join(mount, "..data"));
    await rm(join(mount, "..v1"), { recursive: true });
    await eventually(async () => (await answer(s.base, "cm")) === "cm-v2", 10_000);
  });
});

describe("SIGUSR1 and SIGHUP reload without -hotreload", () => {
  let s: Running;
  let file = "";
  before(async () => {
    file = join(dir, "signals.json");
    await writeFile(file, json([hook("sig", "v1")]));
    s = await serve(["-hooks", file]);
  });
  after(() => s?.w.stop());

  test("a change alone does nothing; SIGUSR1 reloads", async () => {
    // A second server watching the same file (-hotreload) shows when the change has been seen: by then, the
    // first one would have reloaded too if it watched.
    const watcher = await serve(["-hotreload", "-hooks", file]);
    try {
      await writeFile(file, json([hook("sig", "v2")]));
      await eventually(async () => (await answer(watcher.base, "sig")) === "v2", 10_000);
    } finally {
      await watcher.w.stop();
    }
    assert.equal(await answer(s.base, "sig"), "v1");
    s.w.proc.child.kill("SIGUSR1");
    await eventually(async () => (await answer(s.base, "sig")) === "v2", 10_000);
    assert.match(s.w.logs(), /caught USR1 signal/);
  });

  test("SIGHUP reloads", async () => {
    await writeFile(file, json([hook("sig", "v3")]));
    s.w.proc.child.kill("SIGHUP");
    await eventually(async () => (await answer(s.base, "sig")) === "v3", 10_000);
    assert.match(s.w.logs(), /caught HUP signal/);
  });

  test("an invalid file on SIGHUP keeps the hooks", async () => {
    const before = s.w.logs().length;
    await writeFile(file, "- id: [unclosed");
    s.w.proc.child.kill("SIGHUP");
    await eventually(() => s.w.logs().slice(before).includes("keeping the 1 hook(s) loaded before"), 10_000);
    assert.equal(await answer(s.base, "sig"), "v3");
  });
});

describe("100 rewrites (valid and invalid in turn) while 1 000 requests run", () => {
  let s: Running;
  let file = "";
  before(async () => {
    file = join(dir, "busy.json");
    await writeFile(file, json([hook("busy", "set-0"), hook("still", "set-0")]));
    s = await serve(["-hotreload", "-hooks", file]);
  });
  after(() => s?.w.stop());

  test("every answer comes from a valid set; the hooks are never missing", async () => {
    let writing = true;
    const writer = (async () => {
      for (let i = 1; i <= 100; i++) {
        // Odd writes are valid sets, even ones are broken JSON; all are written in place.
        const text =
          i % 2 === 1
            ? json([hook("busy", `set-${i}`), hook("still", `set-${i}`)])
            : `[{"id": "busy", "execute-command": "/bin/true", "response-message": "set-${i}"`;
        await writeFile(file, text);
        await new Promise((r) => setTimeout(r, 15));
      }
      writing = false;
    })();
    const answers: string[] = [];
    let sent = 0;
    const worker = async (): Promise<void> => {
      while (sent < 1000) {
        sent++;
        const id = sent % 2 === 0 ? "busy" : "still";
        const r = await send(`${s.base}/${id}`, { method: "GET" });
        answers.push(r.status === 200 ? r.text : `status ${r.status}: ${r.text}`);
      }
    };
    await Promise.all([writer, ...Array.from({ length: 20 }, worker)]);
    assert.equal(writing, false);
    assert.equal(answers.length, 1000);
    const bad = answers.filter((a) => !/^set-\d*[13579]$|^set-0$/.test(a));
    assert.deepEqual(bad, [], "answers not from a valid set");
    // Still watching: a last valid write is served.
    await writeFile(file, json([hook("busy", "set-final"), hook("still", "set-final")]));
    await eventually(async () => (await answer(s.base, "busy")) === "set-final", 10_000);
    assert.match(s.w.logs(), /keeping the 2 hook\(s\) loaded before/);
  });
});
