// The MQTT packet gate under a hostile broker, second round: the log line for a dropped oversized message quotes
// its topic, which the broker chooses. C0 controls are blanked, but C1 controls (U+0080–U+009F: U+009B is CSI,
// a terminal escape on its own) and bidirectional overrides pass into the device's log. Against the real
// bin/framefi-device.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Socket } from "node:net";
import { test } from "node:test";
import { WAIT } from "./fixtures/frame.js";
import { eventually, freePort, startDevice, type RunningDevice } from "../helpers.js";

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

const str = (s: string): Buffer => {
  const bytes = Buffer.from(s);
  return Buffer.concat([Buffer.from([bytes.length >> 8, bytes.length & 255]), bytes]);
};

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

const mqttState = async (dev: RunningDevice): Promise<number> => ((await (await fetch(`${dev.url}/mqtt/status`)).json()) as { mqtt_state: number }).mqtt_state;

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
