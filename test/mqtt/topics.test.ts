// The frame's topics on a real broker: retained state, commands, availability and last will,
// Home Assistant discovery, disable/enable, several frames on one broker.
import assert from "node:assert/strict";
import { createServer, type AddressInfo } from "node:net";
import { after, before, describe, test, type TestContext } from "node:test";
import { sharedBroker, type Broker } from "./fixtures/broker.js";
import { clearRetained, startFrame, unique, WAIT, watch, type Frame, type Watcher } from "./fixtures/frame.js";
import { createMqttLink, type MqttLinkOptions } from "../../src/device/mqtt/link.js";
import { eventually } from "../helpers.js";

let broker: Broker;
before(async () => {
  broker = await sharedBroker();
});
after(async () => {
  await broker.stop();
});

const GIB8 = 8 * 1024 * 1024 * 1024;
const stateJson = (mode: string, display: string, used: number, files: number): string =>
  `{"mode":"${mode}","display":{"status":"${display}","orientation":1},` +
  `"sd_card":{"total_size":${GIB8},"used_size":${used},"free_size":${GIB8 - used},"file_count":${files}}}`;

interface Setup {
  frame: Frame;
  watcher: Watcher;
  prefix: string;
  options: MqttLinkOptions;
}

/** A connected frame and a watcher subscribed to all of its topics (before the frame started). */
async function connectedFrame(t: TestContext, name: string, extra: MqttLinkOptions = {}): Promise<Setup> {
  const options: MqttLinkOptions = { url: broker.url, retryMs: 500, ...unique(name), ...extra };
  const prefix = options.topicPrefix!;
  const watcher = await watch(broker.url, [`${prefix}/#`]);
  const frame = startFrame(options);
  t.after(async () => {
    await frame.stop();
    await watcher.close();
    await clearRetained(broker.url, prefix, options.discoveryPrefix);
  });
  await frame.waitEvent((e) => e.event === "state" && e.state === 0 && e.connected === true);
  // On connect the frame publishes its state, then (once the broker acknowledged that) its display status: a
  // client that subscribes before the second would get it live, not retained.
  await watcher.waitFor(`${prefix}/state`);
  await watcher.waitFor(`${prefix}/display/status`);
  return { frame, watcher, prefix, options };
}

// Each test has its own prefix and client id, so they run side by side.
describe("a frame on a shared broker", { concurrency: 3 }, () => {
  test("publishes the firmware's retained state, display status and availability on connect", async (t) => {
    const { prefix } = await connectedFrame(t, "retained");
    // A client that subscribes later gets the retained messages.
    const late = await watch(broker.url, [`${prefix}/state`, `${prefix}/display/status`, `${prefix}/status`]);
    t.after(() => late.close());
    const state = await late.waitFor(`${prefix}/state`);
    assert.equal(state.text, stateJson("USB MSC", "on", 1_234_567, 3));
    assert.equal(state.retain, true);
    const display = await late.waitFor(`${prefix}/display/status`);
    assert.deepEqual([display.text, display.retain], ["ON", true]);
    const availability = await late.waitFor(`${prefix}/status`);
    assert.deepEqual([availability.text, availability.retain], ["online", true]);
  });

  test("publishes again on every change of mode, display or card", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "changes");
    let from = watcher.messages.length;
    await frame.command("card 5000000 7");
    await watcher.waitFor(`${prefix}/state`, (s) => s === stateJson("USB MSC", "on", 5_000_000, 7), WAIT, from);

    from = watcher.messages.length;
    await frame.command("mode ftp");
    await watcher.waitFor(`${prefix}/state`, (s) => s === stateJson("Application (FTP Server)", "on", 5_000_000, 7), WAIT, from);

    from = watcher.messages.length;
    await frame.command("display off");
    await watcher.waitFor(`${prefix}/display/status`, (s) => s === "OFF", WAIT, from);
    await watcher.waitFor(`${prefix}/state`, (s) => s === stateJson("Application (FTP Server)", "off", 5_000_000, 7), WAIT, from);
  });

  test("republishes the state every statePeriodMs without changes", async (t) => {
    const { watcher, prefix } = await connectedFrame(t, "period", { statePeriodMs: 300 });
    await watcher.waitFor(`${prefix}/state`);
    await watcher.waitFor(`${prefix}/state`, () => watcher.messages.filter((m) => m.topic === `${prefix}/state`).length >= 3);
  });

  test("display/set turns the display on and off (exactly ON or OFF, as the firmware)", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "display");
    let from = frame.events().length;
    let seen = watcher.messages.length;
    await watcher.publish(`${prefix}/display/set`, "OFF");
    await frame.waitEvent((e) => e.event === "display" && e.on === false, WAIT, from);
    await watcher.waitFor(`${prefix}/display/status`, (s) => s === "OFF", WAIT, seen);

    from = frame.events().length;
    await watcher.publish(`${prefix}/display/set`, "on");
    await frame.program.waitFor(/ignored "on"; send ON or OFF/, WAIT);
    assert.equal(
      frame
        .events()
        .slice(from)
        .filter((e) => e.event === "display").length,
      0,
    );

    seen = watcher.messages.length;
    await watcher.publish(`${prefix}/display/set`, "ON");
    await frame.waitEvent((e) => e.event === "display" && e.on === true, WAIT, from);
    await watcher.waitFor(`${prefix}/display/status`, (s) => s === "ON", WAIT, seen);
  });

  test("a retained display/set applies again on reconnect, as the firmware's Home Assistant example expects", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "display-retained");
    await watcher.publish(`${prefix}/display/set`, "OFF", true);
    await frame.waitEvent((e) => e.event === "display" && e.on === false);
    await frame.command("display on");
    const from = frame.events().length;
    await frame.command("disable");
    await frame.command("enable");
    await frame.waitEvent((e) => e.event === "display" && e.on === false, WAIT, from);
  });

  test("mode/set switches the mode; bad values and replayed retained commands are ignored", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "mode");
    const seen = watcher.messages.length;
    await watcher.publish(`${prefix}/mode/set`, "ftp");
    await frame.waitEvent((e) => e.event === "mode" && e.mode === "ftp");
    const state = await watcher.waitFor(`${prefix}/state`, (s) => s.includes("Application (FTP Server)"), WAIT, seen);
    assert.equal(JSON.parse(state.text).mode, "Application (FTP Server)");

    await watcher.publish(`${prefix}/mode/set`, "usb");
    await frame.program.waitFor(/ignored "usb"; send ftp or msc/, WAIT);

    // Published live with the retain flag, the command acts once...
    await watcher.publish(`${prefix}/mode/set`, "msc", true);
    await frame.waitEvent((e) => e.event === "mode" && e.mode === "msc");
    // ...but the broker's replay on the next connect does not act again.
    await frame.command("mode ftp");
    const from = frame.events().length;
    await frame.command("disable");
    await frame.command("enable");
    await frame.program.waitFor(/ignored a retained "msc"/, WAIT);
    await frame.waitEvent((e) => e.event === "state" && e.state === 0, WAIT, from);
    assert.equal(
      frame
        .events()
        .slice(from)
        .filter((e) => e.event === "mode").length,
      0,
    );
  });

  test("restart restarts on RESTART only, and a retained RESTART never replays", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "restart");
    await watcher.publish(`${prefix}/restart`, "restart");
    await frame.program.waitFor(/ignored "restart"; send RESTART/, WAIT);
    assert.equal(frame.events().filter((e) => e.event === "restart").length, 0);

    await watcher.publish(`${prefix}/restart`, "RESTART", true);
    await frame.waitEvent((e) => e.event === "restart");
    const from = frame.events().length;
    await frame.command("disable");
    await frame.command("enable");
    await frame.program.waitFor(/ignored a retained "RESTART"/, WAIT);
    assert.equal(
      frame
        .events()
        .slice(from)
        .filter((e) => e.event === "restart").length,
      0,
    );
  });

  test("availability: online while connected, offline from the last will when the process dies", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "will");
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online");
    const seen = watcher.messages.length;
    frame.program.child.kill("SIGKILL");
    await frame.program.exited;
    await watcher.waitFor(`${prefix}/status`, (s) => s === "offline", WAIT, seen);
    const late = await watch(broker.url, [`${prefix}/status`]);
    t.after(() => late.close());
    const retained = await late.waitFor(`${prefix}/status`);
    assert.deepEqual([retained.text, retained.retain], ["offline", true]);
  });

  test("disable publishes offline, disconnects and stops retrying; enable reconnects", async (t) => {
    const { frame, watcher, prefix } = await connectedFrame(t, "disable");
    let seen = watcher.messages.length;
    let from = frame.events().length;
    await frame.command("disable");
    await watcher.waitFor(`${prefix}/status`, (s) => s === "offline", WAIT, seen);
    await frame.waitEvent((e) => e.event === "state" && e.state === -1 && e.connected === false, WAIT, from);
    // Several retry periods (500 ms) later it is still disconnected and silent. A control frame started now, whose
    // broker address takes each connection and closes it, counts those periods under the same load.
    const attempts = { count: 0 };
    const refuser = createServer((socket) => {
      attempts.count++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => refuser.listen(0, "127.0.0.1", resolve));
    const control = startFrame({ url: `mqtt://127.0.0.1:${(refuser.address() as AddressInfo).port}`, retryMs: 500, ...unique("control") });
    try {
      await eventually(() => attempts.count >= 4, WAIT);
    } finally {
      await control.stop();
      refuser.close();
    }
    assert.deepEqual(
      frame
        .events()
        .slice(from)
        .filter((e) => e.event === "state")
        .map((e) => e.state),
      [-1],
    );
    assert.equal(watcher.messages.slice(seen).filter((m) => m.topic === `${prefix}/status` && m.text === "online").length, 0);

    seen = watcher.messages.length;
    from = frame.events().length;
    await frame.command("enable");
    await frame.waitEvent((e) => e.event === "state" && e.state === 0 && e.connected === true, WAIT, from);
    await watcher.waitFor(`${prefix}/status`, (s) => s === "online", WAIT, seen);
    await watcher.waitFor(`${prefix}/state`, () => true, WAIT, seen);
  });

  test("Home Assistant discovery: retained configs for sensors, display switch, mode select and restart button", async (t) => {
    const { topicPrefix, clientId } = unique("discovery");
    const { watcher, prefix } = await connectedFrame(t, "discovery", { topicPrefix, clientId, discoveryPrefix: "homeassistant" });
    const node = prefix.replace(/[^a-zA-Z0-9_-]+/g, "_");
    const ha = await watch(broker.url, [`homeassistant/+/${node}/+/config`]);
    t.after(() => ha.close());
    await eventually(() => ha.messages.filter((m) => m.retain).length >= 8, WAIT);
    const configs = new Map(ha.messages.filter((m) => m.retain).map((m) => [m.topic, JSON.parse(m.text) as Record<string, unknown>]));
    assert.deepEqual([...configs.keys()].sort(), [
      `homeassistant/button/${node}/restart/config`,
      `homeassistant/select/${node}/mode_select/config`,
      `homeassistant/sensor/${node}/file_count/config`,
      `homeassistant/sensor/${node}/free_space/config`,
      `homeassistant/sensor/${node}/mode/config`,
      `homeassistant/sensor/${node}/total_space/config`,
      `homeassistant/sensor/${node}/used_space/config`,
      `homeassistant/switch/${node}/display/config`,
    ]);
    const ids = new Set<unknown>();
    for (const c of configs.values()) {
      ids.add(c.unique_id);
      assert.equal(c.availability_topic, `${prefix}/status`);
      assert.equal(c.payload_available, "online");
      assert.equal(c.payload_not_available, "offline");
      assert.deepEqual((c.device as { identifiers: string[] }).identifiers, [node]);
      assert.equal((c.device as { name: string }).name, "FrameFi");
    }
    assert.equal(ids.size, configs.size, "unique ids are unique");
    const sw = configs.get(`homeassistant/switch/${node}/display/config`)!;
    assert.equal(sw.command_topic, `${prefix}/display/set`);
    assert.equal(sw.state_topic, `${prefix}/display/status`);
    assert.deepEqual([sw.payload_on, sw.payload_off], ["ON", "OFF"]);
    const select = configs.get(`homeassistant/select/${node}/mode_select/config`)!;
    assert.equal(select.command_topic, `${prefix}/mode/set`);
    assert.deepEqual(select.options, ["msc", "ftp"]);
    const button = configs.get(`homeassistant/button/${node}/restart/config`)!;
    assert.deepEqual([button.command_topic, button.payload_press], [`${prefix}/restart`, "RESTART"]);
    const mode = configs.get(`homeassistant/sensor/${node}/mode/config`)!;
    assert.equal(mode.state_topic, `${prefix}/state`);
    assert.equal(mode.value_template, "{{ value_json.mode }}");
    // The discovery configs point at topics the frame really publishes.
    await watcher.waitFor(`${prefix}/display/status`, (s) => s === "ON");
  });

  test("two frames with their own prefixes share one broker without crosstalk", async (t) => {
    const a = await connectedFrame(t, "share-a");
    const b = await connectedFrame(t, "share-b");
    const fromB = b.frame.events().length;
    await a.watcher.publish(`${a.prefix}/display/set`, "OFF");
    await a.frame.waitEvent((e) => e.event === "display" && e.on === false);
    await a.watcher.waitFor(`${a.prefix}/display/status`, (s) => s === "OFF");
    assert.equal(
      b.frame
        .events()
        .slice(fromB)
        .filter((e) => e.event === "display").length,
      0,
    );
    assert.equal(b.watcher.last(`${b.prefix}/display/status`)?.text, "ON");
  });

  test("a topic prefix with MQTT wildcards is refused with a clear error", () => {
    const device = {
      status: () => {
        throw new Error("unused");
      },
      onChange: () => () => {},
      setDisplay() {},
      setMode() {},
      restart() {},
    };
    assert.throws(() => createMqttLink({ topicPrefix: "frames/#" }, device), /topic prefix "frames\/#" is not usable/);
  });
});
