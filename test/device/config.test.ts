// The device's configuration decider (parseCli in src/device/cli/config.ts) on its own: flags, environment and
// config file in that order, sizes, switches, and errors that say what to do without quoting a secret. The
// program-level behaviour (help, exit codes, the config file at start) is in cli.test.ts.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { OptionError, parseCli, parseSize, type DeviceConfig } from "../../src/device/cli/config.js";
import { removeDir, tempDir } from "../helpers.js";

let dir = "";
before(async () => (dir = await tempDir("framefi-config-unit-")));
after(() => removeDir(dir));

function config(argv: string[], env: NodeJS.ProcessEnv = {}): DeviceConfig {
  const parsed = parseCli(argv, env, dir);
  assert.equal(parsed.action, "run");
  return (parsed as { config: DeviceConfig }).config;
}

const refused = (argv: string[], env: NodeJS.ProcessEnv, message: RegExp): void => {
  assert.throws(
    () => parseCli(argv, env, dir),
    (e: unknown) => e instanceof OptionError && message.test((e as Error).message),
  );
};

describe("parseCli", () => {
  test("the defaults: the firmware's API on 8080, FTP on 2121, setup on 8081, no web login, no MQTT", () => {
    const c = config([]);
    assert.deepEqual([c.host, c.port, c.ftpPort, c.setupPort, c.webUser, c.mqtt.host], ["::", 8080, 2121, 8081, "", ""]);
    assert.equal(c.cardSize, undefined);
  });

  test("a flag wins over the environment, which wins over the config file", async () => {
    const file = join(dir, "precedence.json");
    await writeFile(file, JSON.stringify({ port: 1001, "ftp-port": 1002, "setup-port": 1003 }));
    const c = config(["--config", file, "--port", "3001"], { FRAMEFI_FTP_PORT: "2002" });
    assert.deepEqual([c.port, c.ftpPort, c.setupPort], [3001, 2002, 1003]);
  });

  test("--help and --version are actions, whatever else is given", () => {
    assert.deepEqual(parseCli(["--port", "1", "--help"], {}, dir), { action: "help" });
    assert.deepEqual(parseCli(["--version"], {}, dir), { action: "version" });
  });

  test("switches take true/false, 1/0, yes/no, on/off; anything else is refused", () => {
    assert.equal(config([], { FRAMEFI_FTP_STREAM_ONLY: "yes" }).ftpStreamOnly, true);
    assert.equal(config([], { FRAMEFI_FTP_STREAM_ONLY: "off" }).ftpStreamOnly, false);
    refused([], { FRAMEFI_FTP_STREAM_ONLY: "maybe" }, /^--ftp-stream-only is on or off: use true or false/);
  });

  test("an MQTT URL gives host, port and login; its password is never quoted in an error", () => {
    const c = config(["--mqtt-url", "mqtt://us%40er:p%3Ass@broker.lan:1884"]);
    assert.deepEqual([c.mqtt.host, c.mqtt.port, c.mqtt.user, c.mqtt.password], ["broker.lan", 1884, "us@er", "p:ss"]);
    assert.throws(
      () => parseCli(["--mqtt-url", "mqtt://u:hunter2@[bad"], {}, dir),
      (e: unknown) => e instanceof OptionError && !(e as Error).message.includes("hunter2"),
    );
    refused(["--mqtt-url", "http://broker"], {}, /must start with mqtt:\/\//);
  });

  test("a host with a scheme or a port is the client's address by mistake, and the error says so", () => {
    refused(["--host", "http://frame.local"], {}, /^--host is "http:\/\/frame.local", but it is the address the device listens on/);
    refused([], { FRAMEFI_HOST: "10.0.0.2:8080" }, /^FRAMEFI_HOST is "10.0.0.2:8080"/);
  });

  test("ports and ranges are checked", () => {
    refused(["--port", "80a"], {}, /^--port must be a whole number/);
    refused(["--ftp-passive-ports", "6000-5000"], {}, /^--ftp-passive-ports must be a range LOW-HIGH/);
    assert.deepEqual(config(["--ftp-passive-ports", "50000 - 50010"]).ftpPassivePorts, [50000, 50010]);
  });

  test("a config file that is not JSON names the line, never the text (it may hold a password)", async () => {
    const file = join(dir, "broken.json");
    await writeFile(file, '{\n  "web-password": "s3cr3t",\n  "port": 80,,\n}');
    assert.throws(
      () => parseCli(["--config", file], {}, dir),
      (e: unknown) => /is not valid JSON at line 3; check its quotes/.test((e as Error).message) && !(e as Error).message.includes("s3cr3t"),
    );
  });

  test("unknown keys and options are refused with where to look", async () => {
    const file = join(dir, "unknown.json");
    await writeFile(file, JSON.stringify({ prot: 80 }));
    refused(["--config", file], {}, /unknown key "prot" \(keys are the option names of --help\)/);
    refused(["--prot", "80"], {}, /Run framefi-device --help for the options\.$/);
  });

  test("--usb-gadget needs the card image", () => {
    refused(["--usb-gadget"], {}, /^--usb-gadget needs --card-image PATH/);
  });
});

describe("parseSize", () => {
  test("bytes, decimal and binary units, fractions", () => {
    assert.equal(parseSize("1000000"), 1_000_000);
    assert.equal(parseSize("500MB"), 500_000_000);
    assert.equal(parseSize("8GiB"), 8 * 1024 ** 3);
    assert.equal(parseSize("1.5 KiB"), 1536);
  });
  test("no unit it knows, or nothing, is refused with examples", () => {
    for (const bad of ["", "12XB", "-1", "0", "GiB"]) assert.throws(() => parseSize(bad), OptionError, bad);
  });
});
