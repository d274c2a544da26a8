// Every command against a running bin/framefi-device, human output and --json (the device's
// JSON unchanged), exit codes for usage errors (2), an unreachable device (3) and a device error (1), and where
// the CLI finds the device (--host, FRAMEFI_DEVICE, the firmware scripts' .env).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { FrameFiClient } from "../../src/client/api/index.js";
import { framefi } from "./fixtures/cli.js";

/** No stack trace, one line. */
function oneLineError(stderr: string): void {
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, /^framefi: /);
  assert.doesNotMatch(stderr, /\n\s+at /);
}

describe("framefi commands", () => {
  let dev: RunningDevice;
  let host: string;
  let api: FrameFiClient;
  const cli = (...args: string[]): ReturnType<typeof framefi> => framefi(["--host", host, ...args]);
  const raw = async (path: string): Promise<string> => (await fetch(dev.url + path)).text();

  before(async () => {
    // An emulated card size: the figures then count only the card's files, not a filesystem other tests write to.
    dev = await startDevice({ args: ["--card-size", "8GB"] });
    host = `127.0.0.1:${dev.port}`;
    api = new FrameFiClient({ host });
  });
  after(async () => {
    await dev?.stop();
  });

  test("status: a short summary with sizes in GB and the MQTT state by name", async () => {
    const r = await cli("status");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Mode: +USB MSC$/m);
    assert.match(r.stdout, /^Display: +on \(orientation 1\)$/m);
    assert.match(r.stdout, /^SD card: +0\.00 GB used of 8\.00 GB, 8\.00 GB free, 0 files$/m);
    assert.match(r.stdout, /^MQTT: +disabled, MQTT_DISCONNECTED \(-1\)$/m);
    assert.match(r.stdout, /^LED: +on, green, brightness 13$/m);
    assert.equal(r.stderr, "");
  });

  test("--json prints the device's JSON unchanged", async () => {
    for (const [args, path] of [
      [["status"], "/"],
      [["mode"], "/mode/msc"],
      [["display"], "/display/status"],
      [["led"], "/led/status"],
      [["led", "brightness"], "/led/brightness"],
      [["mqtt", "status"], "/mqtt/status"],
    ] as const) {
      const [r, body] = await Promise.all([cli(...args, "--json"), raw(path)]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, body.trimEnd() + "\n", args.join(" "));
    }
  });

  test("mode: shows, switches (waiting until done), and reports no change", async () => {
    assert.equal((await cli("mode")).stdout, "USB MSC\n");
    const r = await cli("mode", "ftp");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Attempting to switch to Application (FTP) mode.\n");
    assert.equal((await api.status()).mode, "Application (FTP Server)", "the switch is complete when the command returns");
    const again = await cli("mode", "ftp", "--json");
    assert.equal(again.stdout, '{"status":"no_change","message":"Already in Application (FTP) mode."}\n');
    const back = await cli("mode", "msc", "--json");
    assert.equal(back.stdout, '{"status":"success","message":"Attempting to switch to MSC mode."}\n');
    assert.equal((await api.status()).mode, "USB MSC");
  });

  test("display: status, off, on, toggle", async () => {
    assert.equal((await cli("display")).stdout, "Display on\n");
    assert.equal((await cli("display", "off")).stdout, "Display turned off.\n");
    assert.equal((await api.displayStatus()).display_status, "off");
    assert.equal((await cli("display", "status")).stdout, "Display off\n");
    assert.equal((await cli("display", "on")).stdout, "Display turned on.\n");
    const t = await cli("display", "toggle", "--json");
    assert.equal(t.stdout, '{"status":"success","message":"Display toggled off."}\n');
    assert.equal((await cli("display", "toggle")).stdout, "Display toggled on.\n");
    assert.equal((await api.displayStatus()).display_status, "on");
  });

  test("led: status, off, on, toggle, brightness", async () => {
    assert.equal((await cli("led")).stdout, "LED on, green, brightness 13\n");
    assert.equal((await cli("led", "off")).stdout, "LED turned off.\n");
    assert.equal((await cli("led", "status")).stdout, "LED off, brightness 13\n");
    assert.equal((await cli("led", "on")).stdout, "LED turned on.\n");
    assert.equal((await cli("led", "toggle")).stdout, "LED toggled.\n");
    assert.equal((await cli("led", "toggle")).stdout, "LED toggled.\n");
    assert.equal((await cli("led", "brightness")).stdout, "LED brightness 13\n");
    const set = await cli("led", "brightness", "128", "--json");
    assert.equal(set.stdout, '{"status":"success","message":"LED brightness set to 128."}\n');
    assert.equal((await api.brightness()).brightness, 128);
    for (const bad of ["256", "-1", "12.5", "bright"]) {
      const r = await cli("led", "brightness", "--", bad);
      assert.equal(r.code, 2, bad);
      oneLineError(r.stderr);
    }
    assert.equal((await api.brightness()).brightness, 128, "a refused value changes nothing");
  });

  test("mqtt: status by name, enable, disable, toggle", async () => {
    assert.equal((await cli("mqtt")).stdout, "MQTT disabled, MQTT_DISCONNECTED (-1)\n");
    assert.equal((await cli("mqtt", "enable")).stdout, "MQTT enabled.\n");
    assert.equal((await api.mqttStatus()).mqtt_enabled, true);
    assert.match((await cli("mqtt", "status")).stdout, /^MQTT enabled, (not connected|connected), MQTT_[A-Z_]+ \(-?\d\)\n$/);
    assert.equal((await cli("mqtt", "disable")).stdout, "MQTT disabled.\n");
    assert.equal((await cli("mqtt", "toggle")).stdout, "MQTT toggled.\n");
    assert.equal((await cli("mqtt", "toggle", "--json")).stdout, '{"status":"success","message":"MQTT toggled."}\n');
    assert.equal((await api.mqttStatus()).mqtt_enabled, false);
  });

  test("upload: refused in MSC mode with exit code 1 and what to do; in FTP mode into a folder", async () => {
    const dir = await tempDir();
    try {
      await writeFile(join(dir, "a.jpg"), Buffer.alloc(3000, 1));
      await writeFile(join(dir, "b.jpg"), Buffer.alloc(5000, 2));
      const msc = await cli("upload", join(dir, "a.jpg"));
      assert.equal(msc.code, 1);
      oneLineError(msc.stderr);
      assert.match(msc.stderr, /Cannot upload in MSC mode\..*framefi mode ftp/);
      const json = await cli("upload", join(dir, "a.jpg"), "--json");
      assert.equal(json.code, 1);
      assert.equal(json.stdout, '{"status":"error","message":"Cannot upload in MSC mode."}\n');

      const missing = await cli("upload", join(dir, "a.jpg"), join(dir, "nope.jpg"));
      assert.equal(missing.code, 2);
      oneLineError(missing.stderr);

      await api.setMode("ftp");
      const ok = await cli("upload", join(dir, "a.jpg"), join(dir, "b.jpg"), "--to", "/2024/summer/");
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /^File uploaded successfully: .*a\.jpg → \/2024\/summer\/a\.jpg \(3\.0 kB\)$/m);
      assert.match(ok.stdout, /b\.jpg → \/2024\/summer\/b\.jpg/);
      assert.equal((await api.status()).sd_card.file_count, 2);
      const j = await cli("upload", join(dir, "a.jpg"), "--json");
      assert.equal(j.stdout, '{"status":"success","message":"File uploaded successfully."}\n');
    } finally {
      await api.setMode("msc");
      await removeDir(dir);
    }
  });

  test("restart: answers, and the device is back", async () => {
    const r = await cli("restart");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Restarting device...\n");
    const deadline = Date.now() + 10_000;
    for (;;) {
      const s = await cli("status");
      if (s.code === 0) break;
      assert.ok(Date.now() < deadline, "the device answers again after a restart");
      await new Promise((res) => setTimeout(res, 100));
    }
  });

  test("usage errors exit 2 with one line", async () => {
    const cases: string[][] = [
      [],
      ["bogus"],
      ["status", "extra"],
      ["--bogus", "status"],
      ["mode", "usb"],
      ["display", "dim"],
      ["mqtt", "on"],
      ["wifi"],
      ["status", "--delete"],
      ["upload"],
      ["sync", "/no/such/folder"],
      ["--timeout", "soon", "status"],
    ];
    // Usage errors touch no state: run them side by side.
    const results = await Promise.all(cases.map((args) => cli(...args)));
    results.forEach((r, i) => {
      assert.equal(r.code, 2, `${cases[i]!.join(" ")}: ${r.stderr}`);
      oneLineError(r.stderr);
      assert.equal(r.stdout, "");
    });
    const help = await cli("--help");
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: framefi/);
    for (const word of [
      "status",
      "mode",
      "display",
      "led brightness",
      "mqtt",
      "restart",
      "wifi reset",
      "upload",
      "sync",
      "--delete",
      "--dry-run",
      "--stay",
      "--json",
    ]) {
      assert.ok(help.stdout.includes(word), word);
    }
  });

  test("an unreachable device exits 3 with one line that says what to do", async () => {
    const port = await freePort();
    const results = await Promise.all([["status"], ["led", "on"], ["sync", "."]].map((args) => framefi(["--host", `127.0.0.1:${port}`, ...args])));
    for (const r of results) {
      assert.equal(r.code, 3, r.stderr);
      oneLineError(r.stderr);
      assert.match(r.stderr, /did not answer.*Check the address/);
    }
  });

  test("the device is found through --host (host:port or URL), FRAMEFI_DEVICE, and the .env's FTP_HOST", async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    assert.equal((await framefi(["--host", `http://127.0.0.1:${dev.port}/`, "mode"])).stdout, "USB MSC\n");
    assert.equal((await framefi(["mode"], { env: { FRAMEFI_DEVICE: host } })).stdout, "USB MSC\n");
    assert.equal((await framefi(["--host", host, "mode"], { env: { FRAMEFI_DEVICE: dead } })).code, 0, "--host wins over FRAMEFI_DEVICE");

    const cwd = await tempDir();
    try {
      await writeFile(
        join(cwd, ".env"),
        `# the firmware's template\nFTP_HOST="${host}"\nFTP_USER="user"\nFTP_PASSWORD="password"\nLOCAL_DIR="data"\nREMOTE_DIR="/" \n`,
      );
      assert.equal((await framefi(["mode"], { cwd })).stdout, "USB MSC\n");
      const r = await framefi(["mode"], { cwd, env: { FTP_HOST: dead } });
      assert.equal(r.code, 3, "a variable in the environment overrides the .env, as the firmware's docs say");
      assert.equal((await framefi(["mode"], { cwd, env: { FRAMEFI_DEVICE: host, FTP_HOST: dead } })).code, 0);

      await writeFile(join(cwd, ".env"), `FTP_HOST="${host}\nthis is not a variable\n`);
      const bad = await framefi(["mode"], { cwd });
      assert.equal(bad.code, 2);
      oneLineError(bad.stderr);
      assert.match(bad.stderr, /\.env line/);

      // Every command refuses an unknown key in [frame], as sync does: a typo there must not pass silently.
      await writeFile(join(cwd, ".env"), `FTP_HOST="${host}"\n\n[frame]\nFIT=1024x600\nSHARPEN=yes\n`);
      for (const command of ["status", "mode", "led", "sync"]) {
        const typo = await framefi([command], { cwd });
        assert.equal(typo.code, 2, `${command}: ${typo.stderr}`);
        oneLineError(typo.stderr);
        assert.match(typo.stderr, /\.env line 5: unknown key SHARPEN in \[frame\]; the keys are FIT, FILL, /);
      }
    } finally {
      await removeDir(cwd);
    }
    const none = await framefi(["status"]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--host.*FRAMEFI_DEVICE.*FTP_HOST/);
  });
});
