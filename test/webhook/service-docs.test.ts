// docs/webhook/service.md's privilege-drop example as an administrator runs it: started as root, the server switches
// to nobody:nogroup and then writes its pid file and its log file, into folders the example gives that user first.
// The paths move into a temporary folder and port 443 to a free port; nothing else changes. And what the page says
// of a log file in a folder of root's: the start fails, saying so.
import { test } from "node:test";
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { bin, eventually, freePort, removeDir, repoRoot, run, start, tempDir } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";

/** Why nobody cannot run the clone's bin/webhook, if so (a folder above it closed to other users). */
function closedToOthers(): string | undefined {
  for (let d = repoRoot; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return `${d} is closed to other users, so nobody cannot load bin/webhook from ${repoRoot}`;
    if (d === dirname(d)) return undefined;
  }
}

const skip = process.getuid?.() !== 0 ? "needs root: the example switches to nobody:nogroup" : (closedToOthers() ?? false);

test("the privilege-drop example of docs/webhook/service.md works as written", { skip }, async (t) => {
  const [block] = docBlocks("docs/webhook/service.md", { heading: "Starting as root, running as another user", lang: "sh" });
  assert.ok(block, "the section has its shell lines");
  const root = await tempDir("webhook-setuid-");
  t.after(() => removeDir(root));
  await chmod(root, 0o755);
  // `webhook` on PATH, as after the README's install.
  await mkdir(join(root, "bin"));
  await symlink(bin("webhook"), join(root, "bin", "webhook"));
  const cert = await run(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=localhost"],
    {
      cwd: root,
    },
  );
  assert.equal(cert.code, 0, cert.stderr);
  await chmod(join(root, "key.pem"), 0o600);
  await mkdir(join(root, "etc", "webhook"), { recursive: true });
  await writeFile(
    join(root, "etc", "webhook", "hooks.json"),
    JSON.stringify([{ id: "who", "execute-command": "/usr/bin/id", "include-command-output-in-response": true }]),
  );
  const port = await freePort();
  const [install, ...server] = block.body
    .replaceAll("sudo ", "")
    .replaceAll("/etc/webhook", join(root, "etc", "webhook"))
    .replaceAll("/run/webhook", join(root, "run", "webhook"))
    .replaceAll("/var/log/webhook", join(root, "log", "webhook"))
    .replace("-port 443", `-ip 127.0.0.1 -port ${port}`)
    .trim()
    .split("\n");
  const env = { ...process.env, PATH: `${join(root, "bin")}:${process.env.PATH ?? ""}` };
  const made = await run("sh", ["-c", install!], { cwd: root, env });
  assert.equal(made.code, 0, made.stderr);

  const webhook = start("sh", ["-c", `exec ${server.join("\n")}`], { cwd: root, env });
  t.after(() => webhook.stop());
  const who = await eventually(async () => {
    const r = await run("curl", ["-sk", `https://127.0.0.1:${port}/hooks/who`]);
    return r.code === 0 && r.stdout;
  }, 15_000);
  assert.match(who, /^uid=65534\(\w+\) gid=65534\(\w+\)/);
  const pid = webhook.child.pid!;
  assert.match(await readFile(`/proc/${pid}/status`, "utf8"), /^Uid:\s+65534\s+65534\s+65534\s+65534$/m);
  assert.equal((await readFile(join(root, "run", "webhook", "webhook.pid"), "utf8")).trim(), String(pid));
  const log = await readFile(join(root, "log", "webhook", "webhook.log"), "utf8");
  assert.ok(
    log.trim().split("\n").length > 0 &&
      log
        .trim()
        .split("\n")
        .every((l) => typeof JSON.parse(l) === "object"),
    log,
  );

  assert.equal(await webhook.stop(), 0, webhook.stderr());
  assert.equal(statSync(join(root, "run", "webhook", "webhook.pid"), { throwIfNoEntry: false }), undefined, "the pid file is removed");
});

test("a log file in a folder of root's stops the start after the switch, as the page says", { skip }, async (t) => {
  const root = await tempDir("webhook-setuid-");
  t.after(() => removeDir(root));
  await chmod(root, 0o755);
  await writeFile(join(root, "hooks.json"), "[]");
  const logfile = join(root, "webhook.log");
  const r = await run(bin("webhook"), [
    "-hooks",
    join(root, "hooks.json"),
    "-ip",
    "127.0.0.1",
    "-port",
    String(await freePort()),
    "-setuid",
    "65534",
    "-setgid",
    "65534",
    "-logfile",
    logfile,
  ]);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`error opening log file "${logfile}": open ${logfile}: permission denied`), r.stderr);
});
