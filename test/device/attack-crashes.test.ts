// Ways one request or one closed pipe once ended bin/framefi-device: request targets `new URL` cannot read
// (sent to the setup page after a Wi-Fi reset, which needs no login) and a log reader that went away.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { bin, eventually, freePort, removeDir, startDevice, tempDir } from "../helpers.js";
import { call, rawRequest } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";
import { MODE_FTP } from "./fixtures/contract.js";

const TARGETS = ["//", "/\\", "//@", "///x", "/%zz"];

describe("request targets that are not URLs", () => {
  test("the web API answers each with 400 or 404", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    for (const target of TARGETS) {
      const r = await rawRequest(dev.port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      assert.ok([400, 404].includes(r.status), `${target}: ${r.raw}`);
    }
    assert.equal((await call(dev.url, "GET", "/")).status, 200);
  });

  test("the setup page and its panel answer each (400, or the captive portal's 302) and the device stays up", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    assert.equal((await call(dev.url, "POST", "/wifi/reset")).status, 200);
    await dev.program.waitFor(/setup mode: .*setup page on/, 10_000);
    for (const target of TARGETS) {
      const r = await rawRequest(dev.setupPort, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      assert.ok([302, 400].includes(r.status), `${target}: ${r.raw}`);
    }
    assert.equal((await call(`http://127.0.0.1:${dev.setupPort}`, "GET", "/")).status, 200);
    assert.equal(dev.program.child.exitCode, null, dev.program.stderr());
  });
});

describe("a log reader that goes away", () => {
  test("the device keeps running when the reader of its output has gone (framefi-device | head -c 1)", async (t) => {
    const card = await tempDir("framefi-card-");
    const state = await tempDir("framefi-state-");
    const [port, setupPort, ftpPort] = [await freePort(), await freePort(), await freePort()];
    const args = [
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--card",
      card,
      "--state",
      state,
      "--setup-port",
      String(setupPort),
      "--ftp-port",
      String(ftpPort),
    ];
    // head exits after the first byte of the first line: every later line meets a closed pipe (EPIPE).
    const head = spawn("head", ["-c", "1"], { stdio: ["pipe", "ignore", "ignore"] });
    const device = spawn(bin("framefi-device"), args, { stdio: ["ignore", head.stdin!, "pipe"] });
    let stderr = "";
    device.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise((resolve) => device.once("exit", resolve));
    t.after(async () => {
      device.kill();
      await exited;
      await removeDir(card);
      await removeDir(state);
    });
    const url = `http://127.0.0.1:${port}`;
    await eventually(async () => (await call(url, "GET", "/", { timeoutMs: 1_000 })).status === 200, 15_000, 50);
    // Switching modes logs more lines.
    await api(url).setMode("ftp");
    await eventually(async () => (await api(url).status()).mode === MODE_FTP, 5_000);
    assert.equal((await call(url, "GET", "/")).status, 200);
    assert.equal(device.exitCode, null, stderr);
  });
});
