// One console client's event stream (Server-Sent Events) of one run: its record whenever it
// changes, and its output as it comes. Bounded per client: what waits for a slow reader is at most
// MAX_QUEUED bytes; past that the oldest output is dropped (an "skipped" event says how much) and a
// newer record replaces the one waiting, so a slow reader always gets the latest.

/** Bytes of events waiting for one client at most. */
export const MAX_QUEUED = 256 * 1024;

export class EventStream implements AsyncIterable<Buffer> {
  private readonly queue: { kind: "output" | "other"; data: Buffer }[] = [];
  private queued = 0;
  /** The latest record not yet sent: coalesced, one at a time. */
  private record: Buffer | undefined;
  private skipped = 0;
  private ended = false;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly onClose: () => void) {}

  /** The run's record changed. */
  job(json: string): void {
    this.record = frame("job", json);
    this.notify();
  }

  /** Output came: sent as a JSON string (any bytes, as UTF-8 text). */
  output(chunk: Buffer): void {
    const data = frame("output", JSON.stringify(chunk.toString("utf8")));
    this.queue.push({ kind: "output", data });
    this.queued += data.length;
    while (this.queued > MAX_QUEUED && this.queue.length > 1) {
      const i = this.queue.findIndex((e) => e.kind === "output");
      if (i === -1) break;
      const [dropped] = this.queue.splice(i, 1);
      this.queued -= dropped!.data.length;
      this.skipped += dropped!.data.length;
    }
    this.notify();
  }

  /** A comment line, so proxies and the client see the connection alive. */
  ping(): void {
    this.queue.push({ kind: "other", data: Buffer.from(": ping\n\n") });
    this.queued += 9;
    this.notify();
  }

  /** No more events: the stream ends once what waits is sent. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** What waits, in one chunk; undefined when nothing does. */
  private take(): Buffer | undefined {
    const parts: Buffer[] = [];
    if (this.skipped > 0) {
      parts.push(frame("skipped", String(this.skipped)));
      this.skipped = 0;
    }
    for (const e of this.queue.splice(0)) parts.push(e.data);
    this.queued = 0;
    if (this.record) parts.push(this.record);
    this.record = undefined;
    return parts.length > 0 ? Buffer.concat(parts) : undefined;
  }

  /** Once: the client went, or all was sent. */
  private close(): void {
    if (this.closed) return;
    this.closed = this.ended = true;
    this.notify();
    this.onClose();
  }

  // A plain iterator, not a generator: a client that goes away is let go at once (return), even while nothing is waiting.
  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: async (): Promise<IteratorResult<Buffer>> => {
        for (;;) {
          const value = this.closed ? undefined : this.take();
          if (value) return { value, done: false };
          if (this.ended) {
            this.close();
            return { value: undefined, done: true };
          }
          await new Promise<void>((r) => (this.wake = r));
        }
      },
      return: async (): Promise<IteratorResult<Buffer>> => {
        this.close();
        return { value: undefined, done: true };
      },
    };
  }
}

function frame(event: string, data: string): Buffer {
  return Buffer.from(`event: ${event}\ndata: ${data}\n\n`);
}
