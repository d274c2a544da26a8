// A bound on the MQTT packets the device takes in. mqtt.js (through mqtt-packet) holds a whole packet in memory
// before anyone sees its size, and checks maximumPacketSize only under MQTT 5 and only after buffering it, so a
// 200 MB retained message (or a hostile broker) would cost 200 MB and more. This gate reads the framing as bytes
// arrive: small packets pass on untouched; an oversized PUBLISH is read past, its bytes dropped as they come, and
// acknowledged here (the broker would otherwise keep it in flight); any other oversized packet ends the connection.
import { Duplex, pipeline, Transform, type TransformCallback } from "node:stream";

/** What was dropped, for the log. */
export interface OversizedMessage {
  topic: string;
  /** The whole packet's size. */
  bytes: number;
}

const PUBLISH = 3;
const PUBACK = 0x40;
const PUBREC = 0x50;

/** Reads a fixed header (type byte, then 1–4 bytes of remaining length); undefined while incomplete. */
function fixedHeader(head: number[]): { type: number; qos: number; length: number } | "malformed" | undefined {
  let length = 0;
  for (let i = 1; i < head.length; i++) {
    length += (head[i]! & 0x7f) * 128 ** (i - 1);
    if ((head[i]! & 0x80) === 0) return { type: head[0]! >> 4, qos: (head[0]! >> 1) & 3, length };
    if (i === 4) return "malformed";
  }
  return undefined;
}

class Gate extends Transform {
  #phase: "header" | "pass" | "publish-head" | "drop" = "header";
  #head: number[] = [];
  /** Bytes of the current packet still to pass or drop. */
  #remaining = 0;
  #qos = 0;
  #size = 0;
  /** The oversized PUBLISH's variable header (topic, packet id): at most 65 539 bytes. */
  #publishHead: number[] = [];

  constructor(
    private readonly maxBytes: number,
    private readonly onOversized: (m: OversizedMessage) => void,
    private readonly acknowledge: (packet: Buffer) => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#phase === "header") {
        this.#head.push(chunk[at++]!);
        const header = this.#head.length > 1 ? fixedHeader(this.#head) : undefined;
        if (header === undefined) continue;
        if (header === "malformed") {
          done(tooLarge("The broker sent a malformed packet length"));
          return;
        }
        this.#remaining = header.length;
        this.#size = this.#head.length + header.length;
        if (this.#size <= this.maxBytes) {
          this.push(Buffer.from(this.#head));
          this.#phase = "pass";
        } else if (header.type === PUBLISH) {
          this.#qos = header.qos;
          this.#publishHead = [];
          this.#phase = "publish-head";
        } else {
          done(tooLarge(`The broker sent a ${this.#size}-byte packet (type ${header.type}), over the ${this.maxBytes}-byte limit`));
          return;
        }
        this.#head = [];
      } else if (this.#phase === "pass" || this.#phase === "drop") {
        const n = Math.min(this.#remaining, chunk.length - at);
        if (this.#phase === "pass") this.push(chunk.subarray(at, at + n));
        at += n;
        this.#remaining -= n;
      } else {
        this.#publishHead.push(chunk[at++]!);
        this.#remaining--;
        this.#readPublishHead();
      }
      if (this.#remaining === 0) this.#phase = "header";
    }
    done();
  }

  /** Once the topic and packet id are in: say what is dropped, acknowledge it, drop the rest. */
  #readPublishHead(): void {
    const h = this.#publishHead;
    if (h.length < 2) return;
    const topicLength = h[0]! * 256 + h[1]!;
    const needed = 2 + topicLength + (this.#qos > 0 ? 2 : 0);
    if (h.length < needed && this.#remaining > 0) return;
    this.onOversized({ topic: Buffer.from(h.slice(2, 2 + topicLength)).toString("utf8"), bytes: this.#size });
    if (this.#qos > 0 && h.length >= needed) this.acknowledge(Buffer.from([this.#qos === 1 ? PUBACK : PUBREC, 2, h[needed - 2]!, h[needed - 1]!]));
    this.#phase = "drop";
  }
}

function tooLarge(message: string): Error {
  return Object.assign(new Error(`${message}; disconnecting.`), { code: "EMSGSIZE" });
}

/**
 * Wraps the connection to the broker: what mqtt.js writes goes to `socket`, what it reads has passed the gate.
 * Acknowledgements of dropped messages go through the same writer, after whole packets, so they never split one.
 */
export function limitIncoming(socket: Duplex, maxBytes: number, onOversized: (m: OversizedMessage) => void): Duplex {
  const gate = new Gate(maxBytes, onOversized, (packet) => stream.write(packet));
  pipeline(socket, gate, () => undefined);
  const stream = Duplex.from({ readable: gate, writable: socket });
  // A pair that ends cleanly would stay open on its writable side: the broker hanging up must close it for mqtt.js.
  socket.once("close", () => stream.destroy());
  return stream;
}
