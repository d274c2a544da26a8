// The gate in front of mqtt.js, fed packets cut at every possible place: small packets come out byte for byte,
// an oversized PUBLISH is reported once, acknowledged with its packet id, and leaves no trace in what mqtt.js reads.
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer } from "node:net";
import { Duplex } from "node:stream";
import { test } from "node:test";
import { limitIncoming, type OversizedMessage } from "../../src/device/mqtt/packet-limit.js";

const publish = (topic: string, payload: Buffer, qos: 0 | 1, id = 0): Buffer => {
  const variable = Buffer.concat([
    Buffer.from([topic.length >> 8, topic.length & 255]),
    Buffer.from(topic),
    qos ? Buffer.from([id >> 8, id & 255]) : Buffer.alloc(0),
  ]);
  const length = variable.length + payload.length;
  const varint: number[] = [];
  for (let n = length; ; ) {
    const byte = n % 128;
    n = Math.floor(n / 128);
    varint.push(n > 0 ? byte | 0x80 : byte);
    if (n === 0) break;
  }
  return Buffer.concat([Buffer.from([0x30 | (qos << 1), ...varint]), variable, payload]);
};

/** Runs `input` through the gate in pieces of `cut` bytes; what mqtt.js would read, what was written back, what was reported. */
async function through(input: Buffer, cut: number, max: number): Promise<{ read: Buffer; written: Buffer; reported: OversizedMessage[] }> {
  const written: Buffer[] = [];
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk);
      done();
    },
  });
  const reported: OversizedMessage[] = [];
  const gated = limitIncoming(socket, max, (m) => reported.push(m));
  const read: Buffer[] = [];
  gated.on("data", (d: Buffer) => read.push(d));
  for (let at = 0; at < input.length; at += cut) socket.push(input.subarray(at, at + cut));
  await new Promise((r) => setImmediate(r));
  return { read: Buffer.concat(read), written: Buffer.concat(written), reported };
}

test("small packets pass untouched and an oversized PUBLISH is dropped and acknowledged, however the bytes are cut", async () => {
  const before = publish("frame-fi/display/set", Buffer.from("ON"), 1, 1);
  const big = publish("frame-fi/display/set", Buffer.alloc(5000, 0x41), 1, 0x1234);
  const ping = Buffer.from([0xd0, 0x00]);
  const after = publish("frame-fi/mode/set", Buffer.from("ftp"), 0);
  const input = Buffer.concat([before, big, ping, after]);
  for (const cut of [1, 2, 3, 7, 64, 4096, input.length]) {
    const { read, written, reported } = await through(input, cut, 256);
    assert.deepEqual(read, Buffer.concat([before, ping, after]), `cut ${cut}`);
    assert.deepEqual(written, Buffer.from([0x40, 0x02, 0x12, 0x34]), `cut ${cut}: PUBACK for id 0x1234`);
    assert.deepEqual(reported, [{ topic: "frame-fi/display/set", bytes: big.length }], `cut ${cut}`);
  }
});

test("an oversized packet that is not a PUBLISH ends the connection with EMSGSIZE", async () => {
  const socket = new Duplex({ read() {}, write: (_c, _e, done) => done() });
  const gated = limitIncoming(socket, 256, () => undefined);
  gated.resume();
  const failed = new Promise<NodeJS.ErrnoException>((r) => gated.once("error", r));
  socket.push(Buffer.concat([Buffer.from([0x90, 0x90, 0x03]), Buffer.alloc(400)]));
  const error = await failed;
  assert.equal(error.code, "EMSGSIZE");
  assert.match(error.message, /over the 256-byte limit; disconnecting/);
});

test("the broker hanging up closes the stream mqtt.js reads (so it reconnects at once, not after a keepalive timeout)", { timeout: 5_000 }, async (t) => {
  const server = createServer((socket) => socket.end());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const gated = limitIncoming(connect((server.address() as { port: number }).port, "127.0.0.1"), 256, () => undefined);
  gated.resume();
  await once(gated, "close");
});
