// MQTT messages too large to take in: a 200 MB retained command through a real broker and a hostile broker's
// 250 MB message, against the real bin/framefi-device. Its memory stays under 200 MB (VmHWM, the peak the kernel
// saw), the message is ignored with a log line, and the device keeps taking commands on the same connection.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { ownBroker } from "./fixtures/broker.js";
import { WAIT } from "./fixtures/frame.js";
import { hostileBroker, mqttState, publishHead, str, varint, writeFiller } from "./fixtures/hostile-broker.js";
import { eventually, freePort, startDevice, type RunningDevice } from "../helpers.js";
import { peakRssMiB } from "../fixtures/memory.js";

const MiB = 1024 * 1024;

/** Resolves once `socket` has received bytes containing `pattern`. */
function received(socket: Socket, pattern: Buffer): Promise<void> {
  let seen = Buffer.alloc(0);
  return new Promise((res) => {
    const onData = (d: Buffer): void => {
      seen = Buffer.concat([seen.subarray(-64), d]);
      if (seen.includes(pattern)) {
        socket.off("data", onData);
        res();
      }
    };
    socket.on("data", onData);
  });
}

/** The device's peak memory (VmHWM) so far, reported and held under 200 MB. */
function assertPeakUnder200(t: TestContext, dev: RunningDevice): void {
  const peak = peakRssMiB(dev.program.child.pid!);
  t.diagnostic(`device peak RSS ${peak.toFixed(0)} MiB`);
  assert.ok(peak < 200, `the device's memory peaked at ${peak.toFixed(0)} MiB`);
}

const status = async (dev: RunningDevice): Promise<{ display: { status: string } }> => (await fetch(`${dev.url}/`)).json() as never;

test("a 200 MB retained message on frame-fi/display/set through a real broker: ignored with a log line, at connect and again after a restart; memory stays under 200 MB", async (t) => {
  const broker = await ownBroker();
  t.after(() => broker.dispose());
  const dev = await startDevice({ args: ["--mqtt-url", broker.url] });
  t.after(() => dev.stop());
  await eventually(async () => (await mqttState(dev)) === 0, WAIT, 100);

  // A raw publisher: it streams the payload, so the test process never holds 200 MB.
  const size = 200 * MiB;
  const publisher = connect(broker.port, "127.0.0.1");
  t.after(() => publisher.destroy());
  const connack = received(publisher, Buffer.from([0x20, 0x02, 0x00, 0x00]));
  publisher.write(Buffer.concat([Buffer.from([0x10]), varint(10 + 2 + 5), str("MQTT"), Buffer.from([4, 0x02, 0, 60]), str("flood")]));
  await connack;
  const puback = received(publisher, Buffer.from([0x40, 0x02, 0x00, 0x07]));
  publisher.write(publishHead("frame-fi/display/set", size, { qos: 1, retain: true, id: 7 }));
  await writeFiller(publisher, size);
  await puback;

  await dev.program.waitFor(/MQTT frame-fi\/display\/set: ignored/, 60_000);
  assertPeakUnder200(t, dev);
  const ignored = /warning: MQTT frame-fi\/display\/set: ignored a 2097152\d\d-byte message \(the limit is 4096 bytes\)\./g;
  assert.match(dev.program.stdout() + dev.program.stderr(), ignored);
  // The restart replays the retained message at connect.
  assert.equal((await fetch(`${dev.url}/device/restart`, { method: "POST" })).status, 200);
  await eventually(() => (dev.program.stdout() + dev.program.stderr()).match(ignored)?.length === 2, 60_000, 100);
  // Still taking commands: the display goes off.
  const off = connect(broker.port, "127.0.0.1");
  t.after(() => off.destroy());
  const offConnack = received(off, Buffer.from([0x20, 0x02, 0x00, 0x00]));
  off.write(Buffer.concat([Buffer.from([0x10]), varint(10 + 2 + 3), str("MQTT"), Buffer.from([4, 0x02, 0, 60]), str("off")]));
  await offConnack;
  off.write(Buffer.concat([publishHead("frame-fi/display/set", 3, { qos: 0, retain: false }), Buffer.from("OFF")]));
  await eventually(async () => (await status(dev)).display.status === "off", WAIT, 100);
  assertPeakUnder200(t, dev);
});

test("a hostile broker's 250 MB message: dropped as it arrives and acknowledged; the next command on the same connection works; memory stays under 200 MB", async (t) => {
  const port = await freePort();
  const broker = await hostileBroker(port);
  t.after(broker.close);
  const dev = await startDevice({ args: ["--mqtt-url", `mqtt://127.0.0.1:${port}`] });
  t.after(() => dev.stop());
  const socket = await broker.connected;
  await eventually(async () => (await mqttState(dev)) === 0, WAIT, 100);

  const size = 250 * MiB;
  await broker.quietly(async () => {
    socket.write(publishHead("frame-fi/display/set", size, { qos: 1, retain: false, id: 0x1234 }));
    await writeFiller(socket, size);
    socket.write(Buffer.concat([publishHead("frame-fi/display/set", 3, { qos: 0, retain: false }), Buffer.from("OFF")]));
    // A topic too long for a log line, with terminal escapes in it.
    socket.write(publishHead(`\x1b]0;PWNED\x07${"x".repeat(60_000)}`, 0, { qos: 0, retain: false }));
  });
  await dev.program.waitFor(/MQTT frame-fi\/display\/set: ignored/, 60_000);
  assertPeakUnder200(t, dev);
  assert.match(
    dev.program.stdout() + dev.program.stderr(),
    /warning: MQTT frame-fi\/display\/set: ignored a 2621440\d\d-byte message \(the limit is 4096 bytes\)\./,
  );
  await eventually(() => broker.acked.has(0x1234), WAIT, 50);
  await eventually(async () => (await status(dev)).display.status === "off", WAIT, 100);
  const [line] = await dev.program.waitFor(/warning: MQTT [^\n]*: ignored a 600\d\d-byte message[^\n]*/, WAIT);
  assert.ok(line.length < 250 && !line.includes("\x1b"), `a short line without escapes: ${line.slice(0, 80)}`);
  assert.equal(await mqttState(dev), 0, "still connected");
});
