// XML bodies decoded off the event loop. fast-xml-parser takes about half a second per megabyte here, time in
// which no other request would be served: one request of -max-body's 10 MB held the whole server for seconds.
// One worker thread, started on first use, decodes the large ones in turn; small ones stay inline (a round trip
// to the thread costs more than they do).
import { Worker } from "node:worker_threads";
import type { Payload } from "./request.js";

/** Bodies up to this size are decoded on the event loop. */
export const XML_INLINE_MAX = 64 * 1024;

interface Waiting {
  resolve: (payload: Payload) => void;
  reject: (e: Error) => void;
}

export class XmlDecoder {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private sequence = 0;

  /** The body's payload as parseXmlPayload gives it; rejects with its "error parsing XML payload: …". */
  decode(body: Buffer): Promise<Payload> {
    const id = this.sequence++;
    const worker = (this.worker ??= this.start());
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, body });
    });
  }

  private start(): Worker {
    const worker = new Worker(new URL("./xml-decoder-thread.js", import.meta.url));
    // Not a reason to keep the process alive: the connection waiting for the answer is one.
    worker.unref();
    worker.on("message", (m: { id: number; payload?: Payload; error?: string }) => {
      const waiting = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) waiting?.reject(new Error(m.error));
      else waiting?.resolve(m.payload);
    });
    worker.on("error", (e) => this.fail(new Error(`error parsing XML payload: the decoding thread failed (${e.message})`, { cause: e })));
    worker.on("exit", () => this.fail(new Error("error parsing XML payload: the decoding thread stopped")));
    return worker;
  }

  /** The thread is gone: what waited fails, and the next body starts a new one. */
  private fail(e: Error): void {
    this.worker = undefined;
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }
}
