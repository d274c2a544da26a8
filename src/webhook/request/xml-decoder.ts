// XML bodies decoded off the event loop. fast-xml-parser takes about half a second per megabyte here, time in
// which no other request would be served: one request of -max-body's 10 MB held the whole server for seconds.
// One worker thread, started on first use, decodes the large ones in turn; small ones stay inline (a round trip
// to the thread costs more than they do). Bodies wait here, counted in the transport's request memory, and take
// turns by client address and bytes (deficit round robin): another client's flood of large bodies delays a small
// one by the decode under way. The thread holds one body at a time, its heap is capped, and it sends back only the
// parts of the payload the hook reads (copying a whole decoded payload back held the event loop for seconds).
import { Worker } from "node:worker_threads";
import { clientKey } from "../../shared/connection-counts.js";
import type { PayloadReads } from "../hooks/payload-reads.js";
import type { Payload } from "./request.js";

/** Bodies up to this size are decoded on the event loop. */
export const XML_INLINE_MAX = 64 * 1024;
/** The thread's heap: a 10 MB body of small elements decodes in 300 to 500 MB; a body needing more fails to decode. */
const THREAD_HEAP_MB = 512;
/** Bytes of credit a client address gets per turn. */
const TURN_BYTES = 1024 * 1024;

interface Waiting {
  body: Buffer;
  reads: PayloadReads;
  resolve: (payload: Payload) => void;
  reject: (e: Error) => void;
}

/** One client address's bodies waiting, and the bytes it may still send to the thread this round. */
interface Line {
  bodies: Waiting[];
  credit: number;
}

export interface DecodeRequest {
  body: Uint8Array;
  reads: PayloadReads;
}

export class XmlDecoder {
  private worker: Worker | undefined;
  /** The bodies waiting, by client address (in the order the addresses take turns). */
  private readonly waiting = new Map<string | undefined, Line>();
  private current: Waiting | undefined;

  /**
   * The parts of the body's payload that `reads` names, as parseXmlPayload gives them; rejects with its
   * "error parsing XML payload: …". `remoteAddr` is the client's "ip:port".
   */
  decode(body: Buffer, reads: PayloadReads, remoteAddr: string): Promise<Payload> {
    const client = clientKey(remoteAddr.slice(0, remoteAddr.lastIndexOf(":")).replace(/^\[(.*)\]$/, "$1"));
    return new Promise((resolve, reject) => {
      const line = this.waiting.get(client);
      if (line) line.bodies.push({ body, reads, resolve, reject });
      else this.waiting.set(client, { bodies: [{ body, reads, resolve, reject }], credit: 0 });
      this.next();
    });
  }

  /** Sends the next body to the thread when it is idle: a copy, moved there (the request keeps its own). */
  private next(): void {
    if (this.current || this.waiting.size === 0) return;
    const w = (this.current = this.take());
    const body = new Uint8Array(w.body);
    const message: DecodeRequest = { body, reads: w.reads };
    (this.worker ??= this.start()).postMessage(message, [body.buffer]);
  }

  /** The next body: each address in turn gets TURN_BYTES more credit, and sends its first body once the credit covers it. */
  private take(): Waiting {
    for (;;) {
      for (const [client, line] of this.waiting) {
        line.credit += TURN_BYTES;
        const w = line.bodies[0]!;
        if (w.body.length > line.credit) continue;
        line.bodies.shift();
        line.credit -= w.body.length;
        // Its next body waits for the other addresses' turns; an address with none waiting starts afresh.
        this.waiting.delete(client);
        if (line.bodies.length > 0) this.waiting.set(client, line);
        return w;
      }
    }
  }

  private start(): Worker {
    const worker = new Worker(new URL("./xml-decoder-thread.js", import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    // Not a reason to keep the process alive: the connection waiting for the answer is one.
    worker.unref();
    worker.on("message", (m: { payload?: Payload; error?: string }) => {
      const w = this.current;
      this.current = undefined;
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve(m.payload);
      this.next();
    });
    worker.on("error", (e) => this.fail(worker, new Error(`error parsing XML payload: the decoding thread failed (${e.message})`, { cause: e })));
    worker.on("exit", () => this.fail(worker, new Error("error parsing XML payload: the decoding thread stopped")));
    return worker;
  }

  /** The thread is gone: the body it held fails, and the next one starts a new thread. */
  private fail(worker: Worker, e: Error): void {
    if (this.worker !== worker) return; // its "exit" after its "error"
    this.worker = undefined;
    const w = this.current;
    this.current = undefined;
    w?.reject(e);
    this.next();
  }
}
