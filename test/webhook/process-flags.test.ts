// Start-up and process flags: -socket, -template, -logfile, -pidfile, -setuid/-setgid,
// -x-request-id(-limit), graceful shutdown with -shutdown-timeout, -log-format json, and -help.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { accepts, bin, eventually, freePort, processAlive, removeDir, repoRoot, run, start, tempDir } from "../helpers.js";
import { send, shHook } from "./fixtures/harness.js";
import { socketSend, startWebhook } from "./fixtures/flags.js";

let dir = "";
before(async () => {
  dir = await tempDir("webhook-process-");
  // -setuid tests read the hooks as "nobody".
  await chmod(dir, 0o755);
});
after(() => removeDir(dir));

async function hooksFile(name: string, hooks: unknown[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(hooks, null, 2));
  await chmod(path, 0o644);
  return path;
}

describe("-socket", () => {
  test("serves on a Unix socket instead of ip/port; the file is removed on exit", async () => {
    const hooks = await hooksFile("socket.json", [shHook("hi", "echo over-socket")]);
    const sock = join(dir, "webhook.sock");
    const w = await startWebhook(["-verbose", "-socket", sock, "-hooks", hooks]);
    try {
      assert.match(w.logs(), new RegExp(`serving hooks on http://\\{unix:${sock}\\}/hooks/\\{id\\}`));
      assert.ok(existsSync(sock));
      const r = await socketSend(sock, "/hooks/hi");
      assert.equal(r.status, 200);
      assert.equal(r.text, "over-socket\n");
    } finally {
      assert.equal(await w.stop(), 0);
    }
    assert.equal(existsSync(sock), false, "socket file left behind");
  });

  test("a start that fails after binding (a broken hooks file) leaves no socket file", async () => {
    const broken = join(dir, "broken-for-socket.json");
    await writeFile(broken, '[{"id": ');
    const sock = join(dir, "failed.sock");
    const r = await run(bin("webhook"), ["-socket", sock, "-hooks", broken]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /couldn't load hooks from file!/);
    assert.equal(existsSync(sock), false);
  });

  test("a socket path in a missing folder stops the start with the reason", async () => {
    const hooks = await hooksFile("socket2.json", [shHook("hi", "true")]);
    const r = await run(bin("webhook"), ["-socket", join(dir, "no", "such", "x.sock"), "-hooks", hooks]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error listening on port: listen unix .*x\.sock: bind: no such file or directory/);
  });
});

describe("-template", () => {
  test("the hooks file is rendered with getenv and credential before it is parsed", async () => {
    const creds = join(dir, "creds");
    await mkdir(creds);
    await writeFile(join(creds, "token"), "from-credential\n");
    const text = `[
  {
    "id": "{{ getenv "HOOK_ID" }}",
    "execute-command": "/bin/true",
    "response-message": "{{ credential "token" | js }} {{ credential "FALLBACK" }}{{ if eq (getenv "MODE") "prod" }} prod{{ end }}"
  }
]`;
    const path = join(dir, "templated.json");
    await writeFile(path, text);
    const port = await freePort();
    const w = await startWebhook(["-verbose", "-template", "-ip", "127.0.0.1", "-port", String(port), "-hooks", path], {
      ...process.env,
      HOOK_ID: "tpl",
      MODE: "prod",
      CREDENTIALS_DIRECTORY: creds,
      FALLBACK: "from-env",
    });
    try {
      const r = await send(`http://127.0.0.1:${port}/hooks/tpl`, { method: "GET" });
      // With CREDENTIALS_DIRECTORY set, a credential without a file is empty (the reference's code).
      assert.equal(r.text, "from-credential  prod");
    } finally {
      await w.stop();
    }
  });

  test("a template error names the file and line and stops the start", async () => {
    const path = join(dir, "broken.tmpl.json");
    await writeFile(path, '[\n  {\n    "id": "{{ nosuchfunc }}"\n  }\n]\n');
    const r = await run(bin("webhook"), ["-template", "-hooks", path, "-port", "1"]);
    assert.equal(r.code, 1);
    assert.match(r.stdout + r.stderr, new RegExp(`template: ${path.replace(/[.]/g, "\\.")}:3: function "nosuchfunc" not defined`));
  });
});

describe("-logfile", () => {
  test("log lines go to the file (appended), verbose without -verbose", async () => {
    const hooks = await hooksFile("logfile.json", [shHook("l", "echo hi")]);
    const logfile = join(dir, "webhook.log");
    await writeFile(logfile, "earlier line\n");
    const port = await freePort();
    const p = start(bin("webhook"), ["-logfile", logfile, "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    try {
      await eventually(async () => (await readFile(logfile, "utf8")).includes("serving hooks on"), 15_000);
      await send(`http://127.0.0.1:${port}/hooks/l`, { method: "GET" });
      const text = await eventually(async () => {
        const t = await readFile(logfile, "utf8");
        return t.includes("finished handling l") ? t : "";
      }, 10_000);
      assert.ok(text.startsWith("earlier line\n[webhook] "));
      assert.match(text, /\[webhook\] \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d version .* starting/);
      assert.equal(p.stderr(), "");
    } finally {
      await p.stop();
    }
  });

  test("a log file that cannot be opened stops the start", async () => {
    const hooks = await hooksFile("logfile2.json", [shHook("l", "true")]);
    const r = await run(bin("webhook"), ["-logfile", join(dir, "missing", "x.log"), "-port", String(await freePort()), "-ip", "127.0.0.1", "-hooks", hooks]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error opening log file ".*x\.log": open .*x\.log: no such file or directory\n/);
  });
});

describe("-pidfile", () => {
  test("writes the pid, and removes the file on exit", async () => {
    const hooks = await hooksFile("pid.json", [shHook("p", "true")]);
    const pidfile = join(dir, "run", "webhook.pid");
    const w = await startWebhook(["-verbose", "-pidfile", pidfile, "-ip", "127.0.0.1", "-port", String(await freePort()), "-hooks", hooks]);
    assert.equal(await readFile(pidfile, "utf8"), String(w.proc.child.pid));
    assert.equal(await w.stop(), 0);
    assert.equal(existsSync(pidfile), false);
  });

  test("refuses to start while a live process holds the pid file", async () => {
    const hooks = await hooksFile("pid2.json", [shHook("p", "true")]);
    const pidfile = join(dir, "held.pid");
    await writeFile(pidfile, String(process.pid));
    const r = await run(bin("webhook"), ["-pidfile", pidfile, "-ip", "127.0.0.1", "-port", String(await freePort()), "-hooks", hooks]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`Error creating pidfile: pid file found, ensure webhook is not running or delete ${pidfile}`));
    assert.equal(await readFile(pidfile, "utf8"), String(process.pid), "the other process's pid file was changed");
  });

  test("a stale pid file (no such process) is taken over", async () => {
    const hooks = await hooksFile("pid3.json", [shHook("p", "true")]);
    const pidfile = join(dir, "stale.pid");
    await writeFile(pidfile, "4194303");
    const w = await startWebhook(["-verbose", "-pidfile", pidfile, "-ip", "127.0.0.1", "-port", String(await freePort()), "-hooks", hooks]);
    assert.equal(await readFile(pidfile, "utf8"), String(w.proc.child.pid));
    await w.stop();
  });
});

/** Why nobody could not load the program from this checkout (a folder above it other users cannot enter), if so. */
function closedToOthers(): string | undefined {
  for (let d = repoRoot; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0)
      return `${d} is closed to other users, so nobody cannot load bin/webhook from ${repoRoot}; run this test from a checkout in a world-readable folder`;
    if (d === dirname(d)) return undefined;
  }
}

describe("-setuid and -setgid", () => {
  const asRoot = process.getuid?.() === 0;
  const closed = closedToOthers();

  test("both are required together", async () => {
    const r = await run(bin("webhook"), ["-setuid", "65534"]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "error: setuid and setgid options must be used together\n");
  });

  test("after binding, the server and its commands run as nobody:nogroup", { skip: !asRoot ? "needs root" : (closed ?? false) }, async () => {
    const hooks = await hooksFile("priv.json", [shHook("who", "echo $(id -u):$(id -g)")]);
    const port = await freePort();
    const w = await startWebhook(["-verbose", "-setuid", "65534", "-setgid", "65534", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    try {
      const r = await send(`http://127.0.0.1:${port}/hooks/who`, { method: "GET" });
      assert.equal(r.text, "65534:65534\n");
      const status = await readFile(`/proc/${w.proc.child.pid}/status`, "utf8");
      assert.match(status, /^Uid:\s+65534\s+65534\s+65534\s+65534$/m);
      assert.match(status, /^Gid:\s+65534\s+65534\s+65534\s+65534$/m);
      // None of root's supplementary groups are kept.
      assert.match(status, /^Groups:\s+65534\s*$/m);
    } finally {
      await w.stop();
    }
  });
});

describe("-x-request-id and -x-request-id-limit", () => {
  test("the request id in the log comes from X-Request-Id, truncated to the limit", async () => {
    const hooks = await hooksFile("rid.json", [shHook("r", "true")]);
    const port = await freePort();
    const w = await startWebhook(["-verbose", "-x-request-id", "-x-request-id-limit", "8", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    try {
      await send(`http://127.0.0.1:${port}/hooks/r`, { method: "GET", headers: { "X-Request-Id": "abcdefgh-ijkl" } });
      await send(`http://127.0.0.1:${port}/hooks/r`, { method: "GET" });
      await eventually(() => /\[abcdefgh\] r got matched/.test(w.logs()), 5_000);
      assert.doesNotMatch(w.logs(), /abcdefgh-/);
      // Without the header: the usual random 6-character id.
      assert.equal(w.logs().match(/\[[0-9a-f-]{6}\] r got matched/g)?.length, 1);
    } finally {
      await w.stop();
    }
  });
});

describe("graceful shutdown", () => {
  test("SIGTERM: new connections are refused, a running command finishes and is answered, exit 0", async () => {
    const hooks = await hooksFile("slow.json", [shHook("slow", "sleep 1; echo finished")]);
    const port = await freePort();
    const w = await startWebhook(["-verbose", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    const pending = send(`http://127.0.0.1:${port}/hooks/slow`, { method: "GET" });
    await w.proc.waitFor(/executing \/bin\/sh/, 10_000);
    w.proc.child.kill("SIGTERM");
    await w.proc.waitFor(/caught terminated signal; exiting/, 5_000);
    await eventually(async () => !(await accepts(port)), 5_000);
    const r = await pending;
    assert.equal(r.status, 200);
    assert.equal(r.text, "finished\n");
    assert.equal(await w.proc.exited, 0);
  });

  test("a command started by an already-answered request (no output capture) also gets to finish", async () => {
    const done = join(dir, "background-done.txt");
    const hooks = await hooksFile("background.json", [
      shHook("bg", `sleep 1; echo done > ${done}`, { "include-command-output-in-response": false, "response-message": "started" }),
    ]);
    const port = await freePort();
    const w = await startWebhook(["-verbose", "-shutdown-timeout", "10s", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    const r = await send(`http://127.0.0.1:${port}/hooks/bg`, { method: "GET" });
    assert.equal(r.text, "started");
    await w.proc.waitFor(/executing \/bin\/sh/, 10_000);
    w.proc.child.kill("SIGTERM");
    assert.equal(await w.proc.exited, 0);
    assert.equal(await readFile(done, "utf8"), "done\n");
    assert.match(w.logs(), /waiting up to 10s for 1 running command\(s\) to finish: bg/);
    // It finished by itself: nothing was left to kill at the end of the grace period.
    assert.doesNotMatch(w.logs(), /killed \d+ command\(s\)/);
  });

  test("after -shutdown-timeout the command's whole process group is killed; exit 0", async () => {
    const pids = join(dir, "pids.txt");
    const hooks = await hooksFile("stuck.json", [shHook("stuck", `sleep 60 & echo "$$ $!" > ${pids}; wait`)]);
    const port = await freePort();
    const w = await startWebhook(["-verbose", "-shutdown-timeout", "1s", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    const pending = send(`http://127.0.0.1:${port}/hooks/stuck`, { method: "GET" }).catch((e: Error) => e);
    const [shell, sleeper] = (await eventually(async () => (existsSync(pids) ? (await readFile(pids, "utf8")).trim() : ""), 10_000)).split(" ").map(Number);
    assert.ok(processAlive(shell!) && processAlive(sleeper!));
    const started = Date.now();
    w.proc.child.kill("SIGINT");
    assert.equal(await w.proc.exited, 0);
    assert.ok(Date.now() - started < 10_000, "shutdown took too long");
    assert.match(w.logs(), /caught interrupt signal; exiting/);
    await eventually(() => !processAlive(shell!) && !processAlive(sleeper!), 5_000);
    await pending;
  });
});

describe("-log-format json", () => {
  test("every log line is one JSON object with time, level, request id, hook id and event", async () => {
    const hooks = await hooksFile("json-log.json", [shHook("j", "true")]);
    const port = await freePort();
    const p = start(bin("webhook"), ["-verbose", "-log-format", "json", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks]);
    try {
      await p.waitFor(/serving hooks on/, 15_000);
      await send(`http://127.0.0.1:${port}/hooks/j`, { method: "GET" });
      await p.waitFor(/"event":"200 \| .*\n/, 10_000);
      const lines = p.stderr().trim().split("\n");
      const records = lines.map((l) => JSON.parse(l) as Record<string, string>);
      for (const r of records) {
        assert.ok(!Number.isNaN(Date.parse(r["time"]!)), `bad time in ${JSON.stringify(r)}`);
        assert.ok(["info", "error", "debug"].includes(r["level"]!));
        assert.equal(typeof r["event"], "string");
      }
      const matched = records.find((r) => r["event"] === "j got matched");
      assert.ok(matched?.["request_id"], "the request's lines carry its id");
      assert.ok(records.some((r) => r["request_id"] === matched["request_id"] && r["event"] === "finished handling j"));
      // From the match on, every line of the request names its hook.
      const own = records.filter((r) => r["request_id"] === matched["request_id"]);
      const after = own.slice(own.indexOf(matched));
      assert.ok(after.length >= 5, `the request's lines after the match: ${JSON.stringify(after)}`);
      for (const r of after) assert.equal(r["hook_id"], "j", `hook_id missing from ${JSON.stringify(r)}`);
      assert.ok(
        after.some((r) => /^200 \| /.test(r["event"]!)),
        "the request log line carries it too",
      );
      assert.equal(own[0]!["hook_id"], undefined, "the line before the match has no hook yet");
    } finally {
      await p.stop();
    }
  });

  test("an unknown format is refused", async () => {
    const r = await run(bin("webhook"), ["-log-format", "xml"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /invalid value "xml" for flag -log-format: must be "text" or "json"/);
  });
});

describe("-help", () => {
  test("lists the reference's flags and ours, in Go's format and order", async () => {
    const r = await run(bin("webhook"), ["-help"]);
    assert.equal(r.code, 0);
    const names = [...r.stderr.matchAll(/^ {2}-(\S+)/gm)].map((m) => m[1]);
    for (const flag of [
      "cert",
      "cipher-suites",
      "debug",
      "header",
      "hooks",
      "hotreload",
      "http-methods",
      "ip",
      "key",
      "list-cipher-suites",
      "log-format",
      "logfile",
      "max-multipart-mem",
      "nopanic",
      "pidfile",
      "port",
      "secure",
      "setgid",
      "setuid",
      "shutdown-timeout",
      "socket",
      "template",
      "tls-min-version",
      "urlprefix",
      "verbose",
      "version",
      "x-request-id",
      "x-request-id-limit",
    ])
      assert.ok(names.includes(flag), `-${flag} missing from -help`);
    assert.deepEqual(names, [...names].sort(), "flags are listed alphabetically, as Go does");
    assert.match(r.stderr, / {2}-cert string\n {4}\tpath to the HTTPS certificate pem file \(default "cert\.pem"\)\n/);
    assert.match(r.stderr, / {2}-shutdown-timeout duration\n[^\n]*\(default 30s\)\n/);
  });
});

describe("hooks-file checks for our fields", () => {
  test('"stream-command-output" must be true or false', async () => {
    const hooks = await hooksFile("bad-stream.json", [{ id: "s", "execute-command": "/bin/true", "stream-command-output": "yes" }]);
    const r = await run(bin("webhook"), ["-hooks", hooks, "-ip", "127.0.0.1", "-port", String(await freePort())]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /hook #1 \(id "s"\): "stream-command-output" must be true or false/);
  });
});
