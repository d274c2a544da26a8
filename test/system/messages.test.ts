// What a newcomer meets first: every mistake gets one plain line that says what to do, never Node's internals,
// a stack, a repeated error or an HTML page.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { embeddedBroker } from "../mqtt/fixtures/broker.js";
import { bin, freePort, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";

const oneLine = (text: string): void => assert.equal(text.trimEnd().split("\n").length, 1, `one line: ${text}`);

describe("framefi-device", () => {
  let dir: string;
  before(async () => {
    dir = await tempDir("framefi-msg-");
  });
  after(async () => {
    await removeDir(dir);
  });
  const device = (args: string[], env: NodeJS.ProcessEnv = {}): ReturnType<typeof run> =>
    run(bin("framefi-device"), ["--card", join(dir, "card"), "--state", join(dir, "state"), "--boot-delay", "0", ...args], {
      env: { ...process.env, ...env },
    });

  test("a taken port: fails at once with one line naming the port and the flag; no retries, no warning", async () => {
    const port = await freePort();
    const blocker: Server = createServer();
    await new Promise<void>((res) => blocker.listen(port, "127.0.0.1", res));
    try {
      const r = await device(["--host", "127.0.0.1", "--port", String(port)]);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `framefi-device: cannot start: port ${port} is already in use (is another framefi-device running?): stop that program or pick another port with --port.\n`,
      );
      assert.doesNotMatch(r.stdout, /EADDRINUSE|MaxListeners/);
    } finally {
      await new Promise<void>((res) => blocker.close(() => res()));
    }
  });

  test("--card naming a file", async () => {
    const file = join(dir, "a-file");
    await writeFile(file, "x");
    const r = await device(["--card", file, "--port", "0"]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `framefi-device: cannot start: the card ${file} is not a folder (--card): give a folder; it is created if missing.\n`);
  });

  test("--version", async () => {
    const r = await run(bin("framefi-device"), ["--version"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^framefi-device \d+\.\d+\.\d+\n$/);
  });

  test("FRAMEFI_HOST set to a client-style address names the variable and the client's one", async () => {
    const r = await device([], { FRAMEFI_HOST: "frame.local:8080" });
    assert.equal(r.code, 2);
    oneLine(r.stderr);
    assert.match(
      r.stderr,
      /^framefi-device: FRAMEFI_HOST is "frame\.local:8080", but it is the address the device listens on .* the client's device address is FRAMEFI_DEVICE\n$/,
    );
  });
});

test("a restart with MQTT connected says it disconnects for the restart, not that MQTT was disabled", async () => {
  const broker = await embeddedBroker();
  const dev = await startDevice({ args: ["--mqtt-url", broker.url, "--boot-delay", "0"] });
  try {
    await dev.program.waitFor(/MQTT connected/, 15_000);
    await fetch(`${dev.url}/device/restart`, { method: "POST" });
    await dev.program.waitFor(/restarting[\s\S]*web API listening/, 15_000);
    assert.match(dev.program.stdout(), /MQTT: disconnected from the broker while the device stops or restarts\./);
    assert.doesNotMatch(dev.program.stdout(), /MQTT disabled/);
  } finally {
    await dev.stop();
    await broker.stop();
  }
});

describe("the device's answers and the client", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice();
  });
  after(async () => {
    await dev?.stop();
  });

  test("a 404 names what the device serves, not a file this repository lacks", async () => {
    const body = (await (await fetch(`${dev.url}/nope`)).json()) as { message: string };
    assert.equal(body.message, "Not found: GET /nope. This device serves the FrameFi firmware's API (GET / for its status) and its web panel at /panel/.");
  });

  test("--host with the panel's URL: one line, no HTML", async () => {
    const r = await run(bin("framefi"), ["--host", `${dev.url}/panel/`, "status"]);
    assert.equal(r.code, 1);
    oneLine(r.stderr);
    assert.doesNotMatch(r.stderr, /<html|<!doctype/i);
    assert.equal(
      r.stderr,
      `framefi: GET /: ${dev.url}/panel answered a web page, not the device API's JSON. Give the device's address without a path, e.g. ${dev.url}.\n`,
    );
  });

  test("the .env's FTP_HOST without a port means port 80: said when the answer is not the device", async () => {
    const cwd = await tempDir();
    try {
      // Port 80 on 127.0.0.1: nothing there in the test (a firmware-style address pointed at our service).
      await writeFile(join(cwd, ".env"), 'FTP_HOST="127.0.0.1"\n');
      const r = await run(bin("framefi"), ["status", "--timeout", "3"], { cwd, env: { ...process.env, FRAMEFI_DEVICE: "" } });
      assert.equal(r.code === 3 || r.code === 1, true, r.stderr);
      oneLine(r.stderr);
      assert.match(
        r.stderr,
        /\(FTP_HOST="127\.0\.0\.1" from the \.env has no port, so the web API is taken at port 80, as on the firmware; for framefi-device add its port, e\.g\. 127\.0\.0\.1:8080\)\n$/,
      );
      await writeFile(join(cwd, ".env"), `FTP_HOST="127.0.0.1:${dev.port}"\nREMOTE_DIR="/" garbage\n`);
      const bad = await run(bin("framefi"), ["status"], { cwd });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /\.env line 2 is not KEY=value: text follows the value of REMOTE_DIR; put the whole value in quotes or remove the rest\.\n$/);
    } finally {
      await removeDir(cwd);
    }
  });
});

describe("webhook", () => {
  test("-port 90001: Go's one line, not Node's internal message", async () => {
    const dir = await tempDir();
    try {
      await writeFile(join(dir, "hooks.json"), "[]");
      const r = await run(bin("webhook"), ["-hooks", join(dir, "hooks.json"), "-port", "90001"]);
      assert.equal(r.code, 1);
      assert.match(r.stdout + r.stderr, /^\[webhook\] \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d error listening on port: listen tcp: address 90001: invalid port\n$/);
    } finally {
      await removeDir(dir);
    }
  });

  test("-help describes -nopanic as it behaves", async () => {
    const r = await run(bin("webhook"), ["-help"]);
    assert.match(r.stdout + r.stderr, /-nopanic\n\s+start even when a hooks file cannot be loaded \(the file is skipped\)/);
  });
});
