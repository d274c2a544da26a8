// How the command runs — argv without a shell, the environment (HOOK_<name>,
// envname, the server's own environment), pass-file-to-command (temp file, base64decode, env var,
// removal), command-working-directory, and the hint for arguments written into execute-command.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { fixture, fixturesDir, parseDump, parseEcho, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
let dir = "";
let serverCwd = "";
let workDir = "";
let recordFile = "";
let s: Server;

const captured = (id: string, extra: Record<string, unknown>) => ({
  id,
  "execute-command": echo,
  "include-command-output-in-response": true,
  ...extra,
});

before(async () => {
  dir = await tempDir("webhook-execute-");
  serverCwd = join(dir, "server-cwd");
  workDir = join(dir, "work dir");
  recordFile = join(dir, "record.txt");
  await mkdir(serverCwd);
  await mkdir(workDir);
  const recordEnv = { source: "string", name: recordFile, envname: "RECORD_FILE" };
  const hooks = await writeHooks(dir, [
    captured("argv", {
      "pass-arguments-to-command": [
        { source: "url", name: "a" },
        { source: "header", name: "X-B" },
        { source: "string", name: "two words" },
        { source: "url", name: "evil" },
        { source: "string", name: "" },
      ],
    }),
    captured("env", {
      "pass-environment-to-command": [
        { source: "url", name: "q" },
        { source: "header", name: "X-Env", envname: "EXTRA_HEADER" },
        { source: "string", name: "static value", envname: "EXTRA_STATIC" },
        { source: "payload", name: "absent", envname: "EXTRA_MISSING" },
        { source: "url", name: "override", envname: "TEST_OVERRIDDEN" },
      ],
    }),
    {
      // dump.mjs, not echo.sh: dash drops variables whose names are not shell names
      id: "env-dotted",
      "execute-command": fixture("dump.mjs"),
      "include-command-output-in-response": true,
      "pass-environment-to-command": [{ source: "payload", name: "head_commit.timestamp" }],
    },
    {
      id: "file",
      "execute-command": fixture("files.sh"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "string", name: "HOOK_DATA" },
        { source: "string", name: "EXTRA_BIN" },
      ],
      "pass-environment-to-command": [recordEnv],
      "pass-file-to-command": [
        { source: "payload", name: "data" },
        { source: "payload", name: "bin", envname: "EXTRA_BIN", base64decode: true },
      ],
    },
    {
      id: "file-in-cwd",
      "execute-command": fixture("files.sh"),
      "command-working-directory": workDir,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "string", name: "EXTRA_RAW" }],
      "pass-environment-to-command": [recordEnv],
      "pass-file-to-command": [{ source: "raw-request-body", envname: "EXTRA_RAW" }],
    },
    {
      id: "file-then-fail",
      "execute-command": "/bin/sh",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: 'echo "$EXTRA_F" >> "$RECORD_FILE"; cat "$EXTRA_F"; exit 4' },
      ],
      "pass-environment-to-command": [{ ...recordEnv, name: recordFile + ".fail" }],
      "pass-file-to-command": [{ source: "payload", name: "f", envname: "EXTRA_F" }],
      "include-command-output-in-response-on-error": true,
    },
    {
      id: "file-background",
      "execute-command": "/bin/sh",
      "response-message": "started",
      "pass-arguments-to-command": [
        { source: "string", name: "-c" },
        { source: "string", name: 'echo "$EXTRA_BG" > "$1.path"; while [ ! -e "$1" ]; do sleep 0.05; done' },
        { source: "string", name: "sh" },
        { source: "url", name: "gate" },
      ],
      "pass-file-to-command": [{ source: "payload", name: "f", envname: "EXTRA_BG" }],
    },
    captured("cwd", { "command-working-directory": workDir }),
    captured("no-cwd", {}),
    {
      id: "relative",
      "execute-command": "echo.sh",
      "command-working-directory": fixturesDir,
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "string", name: "found relative to the working directory" }],
    },
    {
      id: "on-path",
      "execute-command": "echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "string", name: "from PATH" }],
    },
    {
      id: "args-in-command",
      "execute-command": "/bin/echo hello world",
      "include-command-output-in-response": true,
    },
  ]);
  s = await startServer(["-hooks", hooks, "-verbose"], {
    cwd: serverCwd,
    env: { ...process.env, TEST_FROM_SERVER: "inherited", TEST_OVERRIDDEN: "server value" },
  });
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

describe("arguments", { concurrency: true }, () => {
  test("argv in the declared order; spaces and shell syntax reach the command untouched", async () => {
    const marker = join(dir, "must-not-exist");
    const evil = `$(touch ${marker}); touch ${marker} | \`touch ${marker}\``;
    const r = await send(`${s.base}/hooks/argv?a=first&evil=${encodeURIComponent(evil)}`, { headers: { "X-B": "second" } });
    assert.equal(r.status, 200);
    assert.deepEqual(parseEcho(r.text).args, ["first", "second", "two words", evil, ""]);
    assert.equal(existsSync(marker), false, "no shell ran the argument");
  });
});

describe("many at once", () => {
  test("30 concurrent captured runs each get their own arguments and output", async () => {
    const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => send(`${s.base}/hooks/argv?a=run-${i}`, { headers: { "X-B": `b-${i}` } })));
    replies.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.deepEqual(parseEcho(r.text).args.slice(0, 2), [`run-${i}`, `b-${i}`]);
    });
  });
});

describe("environment", { concurrency: true }, () => {
  test("HOOK_<name> (name as written), envname, and the server's own environment", async () => {
    const r = await send(`${s.base}/hooks/env?q=query%20value&override=from%20request`, { headers: { "X-Env": "header value" } });
    const { env } = parseEcho(r.text);
    assert.equal(env["HOOK_q"], "query value");
    assert.equal(env["EXTRA_HEADER"], "header value");
    assert.equal(env["EXTRA_STATIC"], "static value");
    assert.equal(env["TEST_FROM_SERVER"], "inherited");
    assert.equal(env["TEST_OVERRIDDEN"], "from request", "hook values override the server's environment");
  });

  test("a dotted payload name makes a dotted variable name, as the reference does (HOOK_head_commit.timestamp)", async () => {
    const r = await send(`${s.base}/hooks/env-dotted`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ head_commit: { timestamp: "2013-03-12T08:14:29-07:00" } }),
    });
    assert.equal(parseDump(r.text).env["HOOK_head_commit.timestamp"], "2013-03-12T08:14:29-07:00");
  });

  test("a missing value sets no variable", async () => {
    const r = await send(`${s.base}/hooks/env?q=x`);
    const { env } = parseEcho(r.text);
    assert.equal("EXTRA_MISSING" in env, false);
    assert.equal("EXTRA_HEADER" in env, false);
  });
});

describe("pass-file-to-command", { concurrency: true }, () => {
  const parseFiles = (text: string) => {
    const out: Record<string, { path: string; content?: Buffer }> = {};
    let current = "";
    for (const line of text.split("\n")) {
      const eq = line.indexOf("=");
      if (eq < 0) continue;
      const k = line.slice(0, eq);
      const v = line.slice(eq + 1);
      if (k === "content") out[current]!.content = Buffer.from(v, "base64");
      else {
        current = k;
        out[k] = { path: v };
      }
    }
    return out;
  };

  test("values become temp files named in env vars; base64decode decodes; files are removed after the command", async () => {
    const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const r = await send(`${s.base}/hooks/file`, {
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ data: "plain text\nsecond line", bin: binary.toString("base64") }),
    });
    assert.equal(r.status, 200);
    const files = parseFiles(r.text);
    assert.ok(files["HOOK_DATA"], `HOOK_DATA (HOOK_ + upper-case name) is set: ${r.text}`);
    assert.equal(files["HOOK_DATA"]!.content?.toString(), "plain text\nsecond line");
    assert.deepEqual(files["EXTRA_BIN"]!.content, binary);
    assert.equal(dirname(files["HOOK_DATA"]!.path), tmpdir(), "without a working directory the file goes to the temp dir");
    await eventually(() => !existsSync(files["HOOK_DATA"]!.path) && !existsSync(files["EXTRA_BIN"]!.path), 5_000);
  });

  test("the file is removed after a failing command too", async () => {
    const r = await send(`${s.base}/hooks/file-then-fail`, { headers: { "Content-Type": "application/json" }, body: '{"f":"fail content"}' });
    assert.equal(r.status, 500);
    assert.equal(r.text, "fail content");
    const path = (await readFile(recordFile + ".fail", "utf8")).trim();
    await eventually(() => !existsSync(path), 5_000);
  });

  test("without output capture the file lives until the command exits, then goes", async () => {
    const gate = join(dir, "bg-gate");
    const r = await send(`${s.base}/hooks/file-background?gate=${encodeURIComponent(gate)}`, {
      headers: { "Content-Type": "application/json" },
      body: '{"f":"background content"}',
    });
    assert.equal(r.text, "started");
    // The command writes the path once it runs; read it once it is all there (a line).
    const path = await eventually(async () => {
      const text = await readFile(gate + ".path", "utf8").catch(() => "");
      return text.endsWith("\n") ? text.trim() : undefined;
    }, 10_000);
    assert.equal(await readFile(path, "utf8"), "background content", "the file is there while the command runs");
    await writeFile(gate, "go");
    await eventually(() => !existsSync(path), 10_000);
  });

  test("each request gets its own file", async () => {
    const send1 = send(`${s.base}/hooks/file`, { headers: { "Content-Type": "application/json" }, body: '{"data":"one","bin":""}' });
    const send2 = send(`${s.base}/hooks/file`, { headers: { "Content-Type": "application/json" }, body: '{"data":"two","bin":""}' });
    const [a, b] = await Promise.all([send1, send2]);
    const fa = parseFiles(a.text)["HOOK_DATA"]!;
    const fb = parseFiles(b.text)["HOOK_DATA"]!;
    assert.notEqual(fa.path, fb.path);
    assert.equal(fa.content?.toString(), "one");
    assert.equal(fb.content?.toString(), "two");
  });

  test("with command-working-directory the file is created there, and removed afterwards", async () => {
    const r = await send(`${s.base}/hooks/file-in-cwd`, { headers: { "Content-Type": "text/plain" }, body: "raw body as a file" });
    const f = parseFiles(r.text)["EXTRA_RAW"]!;
    assert.equal(dirname(f.path), workDir);
    assert.equal(f.content?.toString(), "raw body as a file");
    await eventually(() => !existsSync(f.path), 5_000);
    const recorded = await readFile(recordFile, "utf8");
    assert.match(recorded, new RegExp(f.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  });
});

describe("working directory and command lookup", { concurrency: true }, () => {
  test("command-working-directory is the command's cwd", async () => {
    const r = await send(`${s.base}/hooks/cwd`);
    assert.equal(parseEcho(r.text).cwd, workDir);
  });

  test("without it the command runs in the server's working directory", async () => {
    const r = await send(`${s.base}/hooks/no-cwd`);
    assert.equal(parseEcho(r.text).cwd, serverCwd);
  });

  test("a relative execute-command is found in command-working-directory", async () => {
    const r = await send(`${s.base}/hooks/relative`);
    assert.equal(r.status, 200);
    assert.deepEqual(parseEcho(r.text).args, ["found relative to the working directory"]);
  });

  test("a bare command name is looked up on PATH", async () => {
    const r = await send(`${s.base}/hooks/on-path`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "from PATH\n");
  });

  test("arguments written into execute-command: 500 and the hint in the log", async () => {
    const r = await send(`${s.base}/hooks/args-in-command`);
    assert.equal(r.status, 500);
    await s.proc.waitFor(/use 'pass-arguments-to-command' to specify args for '\/bin\/echo'/);
  });
});
