// State changes are serialised: 1 000 concurrent mixed POSTs leave a state that some serial order of them
// would produce. Toggles, mode switches and brightness sets are chosen so the answers (or, where the
// firmware's answer does not name the new state, the parity of the count) pin down the final state.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";
import { BODY, MODE_FTP, MODE_MSC } from "./fixtures/contract.js";
import { postFresh } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";

let dev: RunningDevice;
before(async () => {
  dev = await startDevice({ args: ["--mqtt-url", "mqtt://127.0.0.1:9"] });
});
after(async () => {
  await dev?.stop();
});

type Op = { path: string; body?: string };

function shuffled<T>(xs: T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

test("1 000 concurrent mixed POSTs are serialised", async () => {
  const s0 = await api(dev).status();
  assert.equal(s0.mode, MODE_MSC);
  assert.equal(s0.display.status, "on");

  const values = Array.from({ length: 300 }, () => Math.floor(Math.random() * 256));
  const ops: Op[] = shuffled([
    ...Array.from({ length: 301 }, (): Op => ({ path: "/display/toggle" })),
    ...Array.from({ length: 100 }, (): Op => ({ path: "/mode/ftp" })),
    ...Array.from({ length: 100 }, (): Op => ({ path: "/mode/msc" })),
    ...Array.from({ length: 199 }, (): Op => ({ path: "/mqtt/toggle" })),
    ...values.map((v): Op => ({ path: "/led/brightness", body: String(v) })),
  ]);
  assert.equal(ops.length, 1000);

  const replies = await Promise.all(
    ops.map(async (op) => {
      const r = await postFresh(dev.port, op.path, op.body, op.body ? { "content-type": "application/json" } : {});
      return { op, status: r.status, text: r.text };
    }),
  );
  for (const r of replies) assert.equal(r.status, 200, `${r.op.path} ${r.op.body ?? ""}: ${r.text}`);

  const count = (text: string): number => replies.filter((r) => r.text === text).length;

  // Display: starts on, so a serial order answers off, on, off, … → #off − #on ∈ {0, 1}.
  const dOff = count(BODY.displayToggled("off"));
  const dOn = count(BODY.displayToggled("on"));
  assert.equal(dOff + dOn, 301, "every display toggle answered with a toggle message");
  assert.ok(dOff - dOn === 0 || dOff - dOn === 1, `display toggles answered off ${dOff} / on ${dOn}: no serial order does that`);

  // MQTT: the firmware's answer does not name the new state; 199 serialised toggles flip the flag (a lost
  // update would not).
  assert.equal(count(BODY.mqttToggled), 199);

  // Mode: starts in MSC; successes alternate ftp, msc, ftp, …
  const toFtp = count(BODY.switchedToFtp);
  const toMsc = count(BODY.switchedToMsc);
  assert.equal(toFtp + count(BODY.alreadyFtp), 100);
  assert.equal(toMsc + count(BODY.alreadyMsc), 100);
  assert.ok(toFtp - toMsc === 0 || toFtp - toMsc === 1, `mode switches succeeded ftp ${toFtp} / msc ${toMsc}`);

  // Brightness: each answer names its own value.
  for (const r of replies.filter((x) => x.op.path === "/led/brightness")) assert.equal(r.text, BODY.brightnessSet(Number(r.op.body)));

  const wantMode = toFtp > toMsc ? MODE_FTP : MODE_MSC;
  const s1 = await eventually(async () => {
    const s = await api(dev).status();
    return s.mode === wantMode ? s : undefined;
  }, 10_000).catch(async () => api(dev).status());
  assert.equal(s1.mode, wantMode, "final mode matches the order the answers imply");
  assert.equal(s1.display.status, dOff > dOn ? "off" : "on", "final display matches the answers");
  assert.equal(s1.mqtt.enabled, !s0.mqtt.enabled, "an odd number of toggles flipped the MQTT flag");
  assert.ok(values.includes(s1.led.brightness), `final brightness ${s1.led.brightness} is one that was sent`);
  assert.equal(s1.led.color, wantMode === MODE_FTP ? "purple" : "green", "LED colour follows the final mode");

  // The separate read endpoints agree with GET /.
  assert.equal((await api(dev).displayStatus()).display_status, s1.display.status);
  assert.equal((await api(dev).brightness()).brightness, s1.led.brightness);
  assert.equal((await api(dev).mqttStatus()).mqtt_enabled, s1.mqtt.enabled);
});

test("201 concurrent LED toggles are serialised: the LED ends flipped", async () => {
  const s0 = await api(dev).status();
  assert.equal(s0.led.state, "on");
  const replies = await Promise.all(Array.from({ length: 201 }, () => postFresh(dev.port, "/led/toggle")));
  assert.deepEqual([...new Set(replies.map((r) => r.text))], [BODY.ledToggled]);
  const s1 = await api(dev).status();
  assert.equal(s1.led.state, "off", "an odd number of serialised toggles (a lost update would not) turned the LED off");
});
