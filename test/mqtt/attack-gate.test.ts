// The MQTT packet gate under a hostile broker, second round: the log line for a dropped oversized message quotes
// its topic, which the broker chooses. C0 controls are blanked, but C1 controls (U+0080–U+009F: U+009B is CSI,
// a terminal escape on its own) and bidirectional overrides pass into the device's log. Against the real
// bin/framefi-device.
import assert from "node:assert/strict";
import { test } from "node:test";
import { WAIT } from "./fixtures/frame.js";
import { hostileBroker, mqttState, publishHead, writeFiller } from "./fixtures/hostile-broker.js";
import { eventually, freePort, startDevice } from "../helpers.js";

test("an oversized message's topic with C1 controls (CSI) and bidi overrides: the log line carries none of them", async (t) => {
  const port = await freePort();
  const broker = await hostileBroker(port);
  t.after(broker.close);
  const dev = await startDevice({ args: ["--mqtt-url", `mqtt://127.0.0.1:${port}`] });
  t.after(() => dev.stop());
  const socket = await broker.connected;
  await eventually(async () => (await mqttState(dev)) === 0, WAIT, 100);
  // U+009B is the 8-bit CSI: "\u009b2J" clears the screen, "\u009b31m" turns text red; U+202E reverses what follows.
  const topic = "frame-fi/\u009b2J\u009b31mPWNED\u202egnp.exe\u009d0;title\u009c";
  await broker.quietly(async () => {
    const head = publishHead(topic, 5000, { qos: 0, retain: false });
    socket.write(head);
    await writeFiller(socket, 5000);
  });
  const [line] = await dev.program.waitFor(/warning: MQTT [^\n]*: ignored a 5\d\d\d-byte message[^\n]*/, WAIT);
  assert.doesNotMatch(line, /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/, `terminal escapes or bidi overrides in the log: ${JSON.stringify(line)}`);
  assert.equal(await mqttState(dev), 0, "still connected");
});
