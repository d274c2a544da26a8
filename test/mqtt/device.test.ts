// The MQTT client inside the real device service: bin/framefi-device against a real broker, checked
// over MQTT and over its HTTP API (and, for FTP writes, with real curl over FTP).
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import { embeddedBroker, ownBroker, sharedBroker, type Broker } from "./fixtures/broker.js";
import { clearRetained, unique, WAIT, watch, type Watcher } from "./fixtures/frame.js";
import { nodeIdFor } from "../../src/device/mqtt/discovery.js";
import { bin, eventually, freePort, removeDir, run, start, tempDir, type RunningProgram } from "../helpers.js";

let broker: Broker;
before(async () => {
  broker = await sharedBroker();
});
after(async () => {
  await broker?.stop();
});

interface Device {
  program: RunningProgram;
  base: string;
  ftpPort: number;
  get(path: string): Promise<Record<string, unknown>>;
  post(path: string, body?: BodyInit): Promise<Record<string, unknown>>;
}

interface Run {
  prefix: string;
  discoveryPrefix: string;
  dir: string;
  watcher: Watcher;
  /** Starts (or starts again, with the same card and state folders) the device. */
  startDevice(): Promise<Device>;
}

/**
 * A watcher on a unique prefix, and a device whose MQTT client uses it; all cleaned up after the test.
 * `mqtt` replaces the shared broker's URL and adds MQTT flags (a broker the test owns, credentials).
 */
async function setup(t: TestContext, name: string, mqtt: { url: string; args: string[] } = { url: broker.url, args: [] }): Promise<Run> {
  const ids = unique(name);
  const dir = await tempDir("framefi-mqtt-device-");
  const watcher = await watch(broker.url, [`${ids.topicPrefix}/#`]);
  const running: RunningProgram[] = [];
  t.after(async () => {
    for (const p of running) await p.stop();
    await watcher.close();
    await clearRetained(broker.url, ids.topicPrefix);
    await removeDir(dir);
  });
  const port = await freePort();
  const setupPort = await freePort();
  const ftpPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const startDevice = async (): Promise<Device> => {
    const program = start(bin("framefi-device"), [
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--setup-port",
      String(setupPort),
      "--ftp-port",
      String(ftpPort),
      "--card",
      join(dir, "card"),
      "--card-size",
      "64MiB",
      "--state",
      join(dir, "state"),
      "--mqtt-url",
      mqtt.url,
      "--mqtt-client-id",
      ids.clientId,
      "--mqtt-topic-prefix",
      ids.topicPrefix,
      "--mqtt-discovery-prefix",
      ids.discoveryPrefix,
      ...mqtt.args,
    ]);
    running.push(program);
    await program.waitFor(/web API listening/, WAIT);
    const call = async (method: string, path: string, body?: BodyInit): Promise<Record<string, unknown>> => {
      const res = await fetch(`${base}${path}`, { method, body });
      return (await res.json()) as Record<string, unknown>;
    };
    return { program, base, ftpPort, get: (p) => call("GET", p), post: (p, b) => call("POST", p, b) };
  };
  return { prefix: ids.topicPrefix, discoveryPrefix: ids.discoveryPrefix, dir, watcher, startDevice };
}

/** The state topic's payload is the mode, display and sd_card of GET /, byte for byte. */
const stateOf = (status: Record<string, unknown>): string => JSON.stringify({ mode: status.mode, display: status.display, sd_card: status.sd_card });

describe("the MQTT client in bin/framefi-device", { concurrency: 2 }, () => {
  test("the device publishes GET /'s mode, display and card as its retained state, reports state 0, and with --ha-discovery announces itself under --mqtt-discovery-prefix", async (t) => {
    const { prefix, discoveryPrefix, watcher, startDevice } = await setup(t, "dev-state", { url: broker.url, args: ["--ha-discovery"] });
    const device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    const mqttStatus = await eventually(async () => {
      const s = await device.get("/mqtt/status");
      return s.mqtt_connected === true ? s : undefined;
    }, WAIT);
    assert.deepEqual(mqttStatus, { status: "success", mqtt_enabled: true, mqtt_connected: true, mqtt_state: 0 });
    const status = await device.get("/");
    assert.deepEqual(status.mqtt, { enabled: true, state: 0, connected: true });
    await watcher.waitFor(`${prefix}/state`, (s) => s === stateOf(status));
    await watcher.waitFor(`${prefix}/display/status`, (s) => s === "ON");
    // Home Assistant, subscribing later, gets the retained discovery config.
    const topic = `${discoveryPrefix}/switch/${nodeIdFor(prefix)}/display/config`;
    const late = await watch(broker.url, [topic]);
    t.after(() => late.close());
    const config = await late.waitFor(topic);
    assert.equal(config.retain, true);
    assert.equal((JSON.parse(config.text) as { command_topic: string }).command_topic, `${prefix}/display/set`);
  });

  test("without --ha-discovery, no discovery config is published and one retained by an earlier run is cleared", async (t) => {
    const { prefix, discoveryPrefix, watcher, startDevice } = await setup(t, "dev-no-discovery");
    const topic = `${discoveryPrefix}/switch/${nodeIdFor(prefix)}/display/config`;
    const ha = await watch(broker.url, [`${discoveryPrefix}/#`]);
    t.after(() => ha.close());
    await ha.publish(topic, '{"name":"Display"}', true);
    await ha.waitFor(topic, (text) => text !== "");
    const device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    await ha.waitFor(topic, (text) => text === "", WAIT);
    assert.ok(
      ha.messages.every((m) => m.text === "" || m.text === '{"name":"Display"}'),
      "no config was published",
    );
    assert.equal((await device.get("/mqtt/status")).mqtt_enabled, true);
  });

  test("an FTP write shows in GET / at once and is published as the new card state", async (t) => {
    const { prefix, dir, watcher, startDevice } = await setup(t, "dev-ftp");
    const device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    await device.post("/mode/ftp");
    await device.program.waitFor(/ftp: listening/, WAIT);
    const file = join(dir, "photo.jpg");
    await writeFile(file, Buffer.alloc(123_456, 7));
    const seen = watcher.messages.length;
    const up = await run("curl", ["-sS", "--max-time", "60", "-T", file, `ftp://user:password@127.0.0.1:${device.ftpPort}/album/`, "--ftp-create-dirs"]);
    assert.equal(up.code, 0, up.stderr);
    const status = await device.get("/");
    assert.deepEqual(status.sd_card, { total_size: 64 * 1024 ** 2, used_size: 123_456, free_size: 64 * 1024 ** 2 - 123_456, file_count: 1 });
    await watcher.waitFor(`${prefix}/state`, (s) => s === stateOf(status), WAIT, seen);
  });

  test("display and mode set over MQTT show in the HTTP API; an upload updates the published card", async (t) => {
    const { prefix, watcher, startDevice } = await setup(t, "dev-commands");
    const device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");

    await watcher.publish(`${prefix}/display/set`, "OFF");
    await eventually(async () => (await device.get("/display/status")).display_status === "off", WAIT);
    await watcher.waitFor(`${prefix}/display/status`, (s) => s === "OFF");

    await watcher.publish(`${prefix}/mode/set`, "ftp");
    await eventually(async () => (await device.get("/mode/ftp")).mode === "Application (FTP Server)", WAIT);
    await watcher.waitFor(`${prefix}/state`, (s) => JSON.parse(s).mode === "Application (FTP Server)");

    const form = new FormData();
    form.append("file", new Blob(["hello frame"]), "hello.txt");
    assert.equal((await device.post("/upload", form)).status, "success");
    const status = await eventually(async () => {
      const s = await device.get("/");
      return (s.sd_card as { file_count: number }).file_count === 1 ? s : undefined;
    }, WAIT);
    await watcher.waitFor(`${prefix}/state`, (s) => s === stateOf(status!));
  });

  test("RESTART over MQTT reboots the device: offline, then online, back in MSC mode", async (t) => {
    const { prefix, watcher, startDevice } = await setup(t, "dev-restart");
    const device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    await device.post("/mode/ftp");
    await watcher.waitFor(`${prefix}/state`, (s) => JSON.parse(s).mode === "Application (FTP Server)");
    const seen = watcher.messages.length;
    await watcher.publish(`${prefix}/restart`, "RESTART");
    await device.program.waitFor(/restarting/, WAIT);
    await watcher.waitFor(`${prefix}/status`, (s) => s === "offline", WAIT, seen);
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online", WAIT, seen);
    await watcher.waitFor(`${prefix}/state`, (s) => JSON.parse(s).mode === "USB MSC", WAIT, seen);
    assert.equal((await device.get("/mode/msc")).mode, "USB MSC");
  });

  test("POST /mqtt/disable publishes offline and persists across a restart of the service; enable reconnects", async (t) => {
    const { prefix, watcher, startDevice } = await setup(t, "dev-disable");
    let device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    let seen = watcher.messages.length;
    assert.deepEqual(await device.post("/mqtt/disable"), { status: "success", message: "MQTT disabled." });
    await watcher.waitFor(`${prefix}/status`, (s) => s === "offline", WAIT, seen);
    assert.deepEqual(await device.get("/mqtt/status"), { status: "success", mqtt_enabled: false, mqtt_connected: false, mqtt_state: -1 });

    await device.program.stop();
    seen = watcher.messages.length;
    device = await startDevice();
    // Still disabled after the service restarts: it never comes online.
    assert.deepEqual(await device.get("/mqtt/status"), { status: "success", mqtt_enabled: false, mqtt_connected: false, mqtt_state: -1 });
    assert.equal(watcher.messages.slice(seen).filter((m) => m.topic === `${prefix}/status` && m.text === "online").length, 0);

    assert.deepEqual(await device.post("/mqtt/enable"), { status: "success", message: "MQTT enabled." });
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online", WAIT, seen);
    await eventually(async () => (await device.get("/mqtt/status")).mqtt_state === 0, WAIT);
  });

  test("killing the device service makes the broker publish its last will: offline", async (t) => {
    const { prefix, watcher, startDevice } = await setup(t, "dev-will");
    const device = await startDevice();
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    const seen = watcher.messages.length;
    device.program.child.kill("SIGKILL");
    await device.program.exited;
    await watcher.waitFor(`${prefix}/status`, (s) => s === "offline", WAIT, seen);
  });

  test("a broker refusing the password: GET /mqtt/status reports state 4, and the password is never logged", async (t) => {
    const own = await embeddedBroker({ users: { frame: "s3cret-pass" } });
    t.after(() => own.stop());
    const { startDevice } = await setup(t, "dev-badcreds", { url: own.url, args: ["--mqtt-user", "frame", "--mqtt-password", "wrong-pass"] });
    const device = await startDevice();
    const status = await eventually(
      async () => {
        const s = await device.get("/mqtt/status");
        return s.mqtt_state === 4 ? s : undefined;
      },
      WAIT,
      100,
    );
    assert.deepEqual(status, { status: "success", mqtt_enabled: true, mqtt_connected: false, mqtt_state: 4 });
    assert.doesNotMatch(device.program.stdout() + device.program.stderr(), /wrong-pass/);
  });

  test("broker stopped and restarted: state -3, then 0 again within 10 s (GET /mqtt/status)", async (t) => {
    const own = await ownBroker();
    t.after(() => own.dispose());
    const { startDevice } = await setup(t, "dev-broker-restart", { url: own.url, args: [] });
    const device = await startDevice();
    const stateIs = (code: number) => async (): Promise<boolean> => (await device.get("/mqtt/status")).mqtt_state === code;
    await eventually(stateIs(0), WAIT, 100);
    await own.stop();
    await eventually(stateIs(-3), WAIT, 100);
    assert.equal((await device.get("/mqtt/status")).mqtt_connected, false);
    await own.start();
    const restarted = Date.now();
    await eventually(stateIs(0), WAIT, 100);
    assert.ok(Date.now() - restarted < 10_000, `reconnected after ${Date.now() - restarted} ms`);
  });
});
