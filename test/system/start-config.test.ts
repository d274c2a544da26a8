// The launcher's bad paths: a bad variable or a taken port stops it with a clear message, exit 1, nothing left
// running, and a secret never appears in what it prints.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { join } from "node:path";
import { eventually, freePort, removeDir, repoRoot, run, start, tempDir } from "../helpers.js";

const launcher = join(repoRoot, "dist", "src", "start.js");

async function launch(env: Record<string, string>): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const demo = await tempDir("framefi-demo-");
  try {
    return await run(process.execPath, [launcher], {
      env: {
        ...process.env,
        FRAMEFI_DEMO_DIR: demo,
        FRAMEFI_DEVICE_PORT: String(await freePort()),
        FRAMEFI_HOOKS_PORT: String(await freePort()),
        FRAMEFI_FTP_PORT: String(await freePort()),
        FRAMEFI_SETUP_PORT: String(await freePort()),
        ...env,
      },
      timeoutMs: 30_000,
    });
  } finally {
    await removeDir(demo);
  }
}

test("a port that is not a number is refused before anything starts", async () => {
  const r = await launch({ FRAMEFI_DEVICE_PORT: "eighty" });
  assert.equal(r.code, 1);
  assert.equal(r.stderr, 'framefi start: FRAMEFI_DEVICE_PORT must be a port number from 1 to 65535, got "eighty"\n');
  assert.equal(r.stdout, "");
});

test("a short secret is refused, and not printed", async () => {
  const r = await launch({ FRAMEFI_HOOK_SECRET: "abc123" });
  assert.equal(r.code, 1);
  assert.equal(r.stderr, "framefi start: FRAMEFI_HOOK_SECRET must be at least 8 characters long (the hooks refuse shorter secrets)\n");
  assert.doesNotMatch(r.stdout + r.stderr, /abc123/);
});

test("a card size the device refuses: its own message, then the launcher's line, which guesses nothing", async () => {
  const r = await launch({ FRAMEFI_CARD_SIZE: "lots" });
  assert.equal(r.code, 1);
  assert.match(r.stdout + r.stderr, /\[device\] .*invalid size "lots"/);
  assert.match(r.stderr, /framefi start: the device service stopped \(exit 2\) before it was ready; its output above says why\./);
  assert.doesNotMatch(r.stderr, /port/i, "no guess at a port");
});

describe("a taken port", () => {
  test("a taken device port: one line naming the port and its variable, exit 1, nothing started", async () => {
    // Takes the port and drops every connection, as a busy port's owner might.
    const blocker = createServer((socket) => socket.destroy());
    const port = await freePort();
    await new Promise<void>((res) => blocker.listen(port, "127.0.0.1", res));
    try {
      const hooksPort = await freePort();
      const r = await launch({ FRAMEFI_DEVICE_PORT: String(port), FRAMEFI_HOOKS_PORT: String(hooksPort) });
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `framefi start: port ${port} (the device API) is already in use; is FrameFi already running? Stop it, or set FRAMEFI_DEVICE_PORT to a free port.\n`,
      );
      assert.equal(r.stdout, "");
      await assert.rejects(fetch(`http://127.0.0.1:${hooksPort}/`), "the hook server never started");
    } finally {
      await new Promise<void>((res) => blocker.close(() => res()));
    }
  });
});

describe("a taken setup port", () => {
  test("the device's setup page port is checked at start too: one line naming it and FRAMEFI_SETUP_PORT, exit 1, nothing started", async () => {
    const blocker = createServer((socket) => socket.destroy());
    const port = await freePort();
    await new Promise<void>((res) => blocker.listen(port, "127.0.0.1", res));
    try {
      const devicePort = await freePort();
      const r = await launch({ FRAMEFI_SETUP_PORT: String(port), FRAMEFI_DEVICE_PORT: String(devicePort) });
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `framefi start: port ${port} (the device's setup page after a Wi-Fi reset) is already in use; is FrameFi already running? Stop it, or set FRAMEFI_SETUP_PORT to a free port.\n`,
      );
      await assert.rejects(fetch(`http://127.0.0.1:${devicePort}/`), "the device never started");
    } finally {
      await new Promise<void>((res) => blocker.close(() => res()));
    }
  });

  test("taken after the start, the setup port does not end the device or the hook server: one line, and the page opens once the port is free", async (t) => {
    const demo = await tempDir("framefi-demo-");
    t.after(() => removeDir(demo));
    const [devicePort, hooksPort, setupPort] = [await freePort(), await freePort(), await freePort()];
    const launcherRun = start(process.execPath, [launcher], {
      env: {
        ...process.env,
        FRAMEFI_DEMO_DIR: demo,
        FRAMEFI_DEVICE_PORT: String(devicePort),
        FRAMEFI_HOOKS_PORT: String(hooksPort),
        FRAMEFI_FTP_PORT: String(await freePort()),
        FRAMEFI_SETUP_PORT: String(setupPort),
      },
    });
    t.after(() => launcherRun.stop());
    await launcherRun.waitFor(/Ctrl-C stops both\./, 30_000);
    const blocker = createServer((socket) => socket.destroy());
    await new Promise<void>((res) => blocker.listen(setupPort, "127.0.0.1", res));
    t.after(() => blocker.close());
    // What holding the panel's button does.
    assert.equal((await fetch(`http://127.0.0.1:${devicePort}/wifi/reset`, { method: "POST" })).status, 200);
    await launcherRun.waitFor(
      /\[device\] framefi-device: error: cannot open the setup page on http:\/\/127\.0\.0\.1:\d+ \(.*EADDRINUSE.*\); FrameFi stays in setup mode/,
      20_000,
    );
    assert.equal((await fetch(`http://127.0.0.1:${hooksPort}/`)).status, 200, "the hook server answers");
    await new Promise<void>((res) => blocker.close(() => res()));
    await eventually(async () => (await fetch(`http://127.0.0.1:${setupPort}/`).catch(() => undefined))?.status === 200, 15_000, 100);
    assert.equal((await fetch(`http://127.0.0.1:${hooksPort}/`)).status, 200, "the hook server still answers");
    const out = launcherRun.stdout() + launcherRun.stderr();
    assert.doesNotMatch(out, /stopped \(exit|MaxListenersExceededWarning/);
    assert.equal(out.match(/cannot open the setup page/g)?.length, 1);
  });

  test("two variables with one port are refused before anything starts", async () => {
    const r = await launch({ FRAMEFI_SETUP_PORT: "28081", FRAMEFI_FTP_PORT: "28081" });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "framefi start: FRAMEFI_FTP_PORT and FRAMEFI_SETUP_PORT are both 28081; give each its own port.\n");
  });
});

describe("an orphaned launcher", () => {
  test("when the process that started it dies (a supervisor stopping npm alone), it stops both programs", async () => {
    const demo = await tempDir("framefi-demo-");
    const [devicePort, hooksPort] = [await freePort(), await freePort()];
    const env = {
      ...process.env,
      FRAMEFI_DEMO_DIR: demo,
      FRAMEFI_DEVICE_PORT: String(devicePort),
      FRAMEFI_HOOKS_PORT: String(hooksPort),
      FRAMEFI_FTP_PORT: String(await freePort()),
      FRAMEFI_SETUP_PORT: String(await freePort()),
    };
    // sh stands in for npm: it starts the launcher and waits for it.
    const parent = start("sh", ["-c", `"${process.execPath}" "${launcher}" & wait`], { env });
    try {
      await parent.waitFor(/Ctrl-C stops both\./, 30_000);
      parent.child.kill("SIGKILL");
      const down = (url: string) => async (): Promise<boolean> =>
        fetch(url).then(
          () => false,
          () => true,
        );
      await eventually(down(`http://127.0.0.1:${devicePort}/`), 15_000);
      await eventually(down(`http://127.0.0.1:${hooksPort}/`), 15_000);
      await parent.exited;
      assert.match(parent.stdout(), /Stopped\.\n$/);
    } finally {
      await removeDir(demo);
    }
  });
});
