// The MQTT status fields against a real broker (Mosquitto at 127.0.0.1:1883, else an embedded
// one): connected with state 0 (MQTT_CONNECTED) when enabled, -1 (MQTT_DISCONNECTED) once disabled; GET / and
// GET /mqtt/status agree.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";
import { sharedBroker, type Broker } from "../mqtt/fixtures/broker.js";
import { clearRetained } from "../mqtt/fixtures/frame.js";
import { BODY } from "./fixtures/contract.js";
import { post } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";

let broker: Broker;
let dev: RunningDevice;
// A topic prefix of our own, so nothing we publish reaches other tests on the shared broker.
const prefix = `framefi-devtest-${randomBytes(4).toString("hex")}`;
before(async () => {
  broker = await sharedBroker();
  dev = await startDevice({
    args: ["--mqtt-url", broker.url, "--mqtt-topic-prefix", prefix, "--mqtt-discovery-prefix", `${prefix}/ha`, "--mqtt-client-id", prefix],
  });
});
after(async () => {
  await dev?.stop();
  if (broker) {
    await clearRetained(broker.url, prefix);
    await broker.stop();
  }
});

test("enabled → connected, state 0; disabled → not connected, state -1; toggled back → connected", async () => {
  const client = api(dev);
  const connected = await eventually(
    async () => {
      const m = await client.mqttStatus();
      return m.mqtt_connected ? m : undefined;
    },
    15_000,
    100,
  );
  assert.deepEqual(connected, { status: "success", mqtt_enabled: true, mqtt_connected: true, mqtt_state: 0 });
  assert.deepEqual((await client.status()).mqtt, { enabled: true, state: 0, connected: true });

  assert.equal((await post(dev.url, "/mqtt/disable")).text, BODY.mqttDisabled);
  const off = await eventually(
    async () => {
      const m = await client.mqttStatus();
      return !m.mqtt_connected ? m : undefined;
    },
    15_000,
    50,
  );
  assert.deepEqual(off, { status: "success", mqtt_enabled: false, mqtt_connected: false, mqtt_state: -1 });
  assert.deepEqual((await client.status()).mqtt, { enabled: false, state: -1, connected: false });

  assert.equal((await post(dev.url, "/mqtt/toggle")).text, BODY.mqttToggled);
  await eventually(async () => (await client.mqttStatus()).mqtt_connected || undefined, 15_000, 100);
});
