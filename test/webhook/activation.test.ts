// systemd socket activation (LISTEN_PID/LISTEN_FDS), tested with the unit files shipped in
// examples/systemd/ (the reference's docs/Systemd-Activation.md) and systemd's own
// systemd-socket-activate, which opens the socket, waits for the first connection and then starts
// the service with the socket as fd 3, as systemd does for a .socket unit.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { bin, freePort, run, removeDir, repoRoot, start, tempDir, type RunningProgram } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { curl } from "../fixtures/http.js";

const SCRIPT = 'env | grep "^LISTEN_" || echo "no LISTEN_ variables"';
let dir = "";
let hooksFile = "";
const running: (RunningProgram | Server)[] = [];

/** Every value of `key=` in an example unit file, in order: [the one in effect, the commented alternatives…]. */
function unitValues(file: string, key: string): string[] {
  const text = readFileSync(join(repoRoot, "examples", "systemd", file), "utf8");
  const values = [...text.matchAll(new RegExp(`^(# )?${key}=(.*)$`, "gm"))].sort((a, b) => (a[1] ? 1 : 0) - (b[1] ? 1 : 0));
  assert.ok(values.length > 0 && !values[0]![1], `${file} sets ${key}=`);
  return values.map((m) => m[2]!);
}

/** ExecStart of the example service, with our binary and a test hooks file in place of the installed ones. */
function execStart(): string[] {
  const [command, ...args] = unitValues("webhook.service", "ExecStart")[0]!.split(" ");
  assert.equal(command, "webhook");
  return [bin("webhook"), ...args.map((a) => (a === "/etc/webhook/hooks.yml" ? hooksFile : a))];
}

/** systemd-socket-activate, once every socket is open (it prints one line per socket). */
async function activate(listen: string[], command: string[]): Promise<RunningProgram> {
  const p = start("systemd-socket-activate", [...listen.flatMap((l) => ["-l", l]), ...command]);
  running.push(p);
  await p.waitFor(new RegExp(`(Listening on .* as \\d+\\.\n[^]*){${listen.length}}`));
  return p;
}

before(async () => {
  dir = await tempDir("webhook-activation-");
  hooksFile = join(dir, "hooks.yml");
  await writeFile(
    hooksFile,
    [
      "- id: env",
      "  execute-command: /bin/sh",
      "  include-command-output-in-response: true",
      "  pass-arguments-to-command:",
      "    - source: string",
      "      name: -c",
      "    - source: string",
      `      name: '${SCRIPT}'`,
      "",
    ].join("\n"),
  );
});

after(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await removeDir(dir);
});

describe("systemd socket activation", { concurrency: true }, () => {
  test("the example units: the first request starts webhook, which answers it on the socket systemd opened, ignoring -port", async () => {
    assert.equal(unitValues("webhook.socket", "ListenStream")[0], "9000");
    const port = await freePort();
    const unusedPort = await freePort();
    await activate([String(port)], [...execStart(), "-port", String(unusedPort)]);
    // systemd listens on every address (IPv6 and IPv4); webhook is not running before this request.
    const r = await send(`http://127.0.0.1:${port}/hooks/env`);
    assert.equal(r.status, 200);
    // go-systemd removes the variables, so the command never sees them.
    assert.equal(r.text, "no LISTEN_ variables\n");
    const r6 = await send(`http://[::1]:${port}/hooks/env`);
    assert.equal(r6.status, 200);
    await assert.rejects(send(`http://127.0.0.1:${unusedPort}/`), /ECONNREFUSED/);
  });

  test("a Unix socket from systemd (the example's ListenStream alternative) is served, and the log names it as the reference does", async () => {
    assert.ok(unitValues("webhook.socket", "ListenStream").some((v) => v.startsWith("/")));
    const path = join(dir, "webhook.sock");
    const p = await activate([path], [...execStart(), "-verbose"]);
    const r = await curl(["--unix-socket", path, "-X", "POST", "http://localhost/hooks/env"]);
    assert.equal(r.status, 200);
    assert.equal(r.body, "no LISTEN_ variables\n");
    await p.waitFor(new RegExp(`serving hooks on http://\\{unix:${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\}/hooks/\\{id\\}`));
  });

  test("a TCP socket from systemd is named in the log as Go prints it ([::]:port)", async () => {
    const port = await freePort();
    const p = await activate([String(port)], [...execStart(), "-verbose"]);
    assert.equal((await send(`http://127.0.0.1:${port}/`, { method: "GET" })).status, 200);
    await p.waitFor(new RegExp(`serving hooks on http://\\[::\\]:${port}/hooks/\\{id\\}`));
  });

  test("two sockets: the reference's error and exit 1", async () => {
    const [a, b] = [await freePort(), await freePort()];
    const p = await activate([`127.0.0.1:${a}`, `127.0.0.1:${b}`], [...execStart(), "-verbose"]);
    const socket = connect(a, "127.0.0.1");
    socket.on("error", () => undefined);
    assert.equal(await p.exited, 1);
    socket.destroy();
    assert.match(
      p.stderr(),
      /\[webhook\] \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d error listening on socket: received 2 sockets from systemd, but only 1 is supported\n/,
    );
  });

  test("an fd from systemd that is not a listening socket: a clear error and exit 1 (the reference crashes)", async () => {
    const r = await run("sh", ["-c", 'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" -hooks /dev/null 3</dev/null', bin("webhook")], { timeoutMs: 60_000 });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error listening on socket: fd 3 from systemd is not a listening stream socket: /);
  });

  test("LISTEN_PID of another process: the variables are ignored (and not passed on), -ip/-port are used", async () => {
    const s = await startServer(["-hooks", hooksFile], { env: { ...process.env, LISTEN_PID: "1", LISTEN_FDS: "1", LISTEN_FDNAMES: "x" } });
    running.push(s);
    const r = await send(`${s.base}/hooks/env`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "no LISTEN_ variables\n");
  });
});
