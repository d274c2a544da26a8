// MQTT messages too large to take in: a 200 MB retained command through a real broker and a hostile broker's
// 250 MB message, against the real bin/framefi-device. Its memory stays under 200 MB (VmHWM, the peak the kernel
// saw), the message is ignored with a log line, and the device keeps taking commands on the same connection.
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { ownBroker } from "./fixtures/broker.js";
import { WAIT } from "./fixtures/frame.js";
import { eventually, freePort, startDevice, type RunningDevice } from "../helpers.js";
import { peakRssMiB } from "../fixtures/memory.js";

const MiB = 1024 * 1024;

/** MQTT's variable-length "remaining length". */
function varint(n: number): Buffer {
  const out: number[] = [];
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return Buffer.from(out);
}

const str = (s: string): Buffer => Buffer.concat([Buffer.from([s.length >> 8, s.length & 255]), Buffer.from(s)]);

/** A PUBLISH's fixed header and variable header; the payload (`size` bytes) follows separately. */
function publishHead(topic: string, size: number, opts: { qos: 0 | 1; retain: boolean; id?: number }): Buffer {
  const variable = Buffer.concat([str(topic), opts.qos ? Buffer.from([(opts.id ?? 1) >> 8, (opts.id ?? 1) & 255]) : Buffer.alloc(0)]);
  const first = 0x30 | (opts.qos << 1) | (opts.retain ? 1 : 0);
  return Buffer.concat([Buffer.from([first]), varint(variable.length + size), variable]);
}

/** Writes `size` bytes of filler, 1 MiB at a time, waiting for the socket to drain: the test never holds it all. */
async function writeFiller(socket: Socket, size: number): Promise<void> {
  const block = Buffer.alloc(MiB, 0x41);
  for (let left = size; left > 0; left -= block.length) {
    if (!socket.write(left >= block.length ? block : block.subarray(0, left))) await once(socket, "drain");
  }
}

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

/**
 * A broker that speaks just enough MQTT to keep the device connected (CONNACK, SUBACK, PUBACK, PINGRESP) and
 * records the packet ids the device acknowledges; the test writes whatever else it likes to the socket.
 */
async function hostileBroker(
  port: number,
): Promise<{ connected: Promise<Socket>; acked: Set<number>; quietly: (send: () => Promise<void>) => Promise<void>; close: () => void }> {
  const acked = new Set<number>();
  // While the test sends, the broker's own answers wait: written meanwhile, they would land inside the test's packet.
  let held: Buffer[] | undefined;
  let client: Socket | undefined;
  let resolve: (s: Socket) => void = () => undefined;
  const connected = new Promise<Socket>((res) => (resolve = res));
  const server = createServer((socket) => {
    client = socket;
    socket.on("error", () => undefined);
    const reply = (packet: Buffer): void => {
      if (held) held.push(packet);
      else socket.write(packet);
    };
    let buffered = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      buffered = Buffer.concat([buffered, d]);
      for (;;) {
        let length = 0;
        let at = 1;
        for (let shift = 1; at < buffered.length; at++, shift *= 128) {
          length += (buffered[at]! & 0x7f) * shift;
          if ((buffered[at]! & 0x80) === 0) break;
        }
        if (at >= buffered.length || buffered.length < at + 1 + length) return;
        const type = buffered[0]! >> 4;
        const qos = (buffered[0]! >> 1) & 3;
        const body = buffered.subarray(at + 1, at + 1 + length);
        buffered = buffered.subarray(at + 1 + length);
        if (type === 1) {
          reply(Buffer.from([0x20, 0x02, 0x00, 0x00]));
          resolve(socket);
        } else if (type === 8) reply(Buffer.from([0x90, 0x05, body[0]!, body[1]!, 1, 1, 1]));
        else if (type === 12) reply(Buffer.from([0xd0, 0x00]));
        else if (type === 3 && qos > 0) {
          const topicLength = body[0]! * 256 + body[1]!;
          reply(Buffer.from([0x40, 0x02, body[2 + topicLength]!, body[3 + topicLength]!]));
        } else if (type === 4) acked.add(body[0]! * 256 + body[1]!);
      }
    });
  });
  await new Promise<void>((res) => server.listen(port, "127.0.0.1", res));
  return {
    connected,
    acked,
    quietly: async (send) => {
      held = [];
      try {
        await send();
      } finally {
        const waiting = held;
        held = undefined;
        for (const packet of waiting) client?.write(packet);
      }
    },
    close: () => {
      client?.destroy();
      server.close();
    },
  };
}

/** The device's peak memory (VmHWM) so far, reported and held under 200 MB. */
function assertPeakUnder200(t: TestContext, dev: RunningDevice): void {
  const peak = peakRssMiB(dev.program.child.pid!);
  t.diagnostic(`device peak RSS ${peak.toFixed(0)} MiB`);
  assert.ok(peak < 200, `the device's memory peaked at ${peak.toFixed(0)} MiB`);
}

const status = async (dev: RunningDevice): Promise<{ display: { status: string } }> => (await fetch(`${dev.url}/`)).json() as never;
const mqttState = async (dev: RunningDevice): Promise<number> => ((await (await fetch(`${dev.url}/mqtt/status`)).json()) as { mqtt_state: number }).mqtt_state;

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
