// The control connection: reads command lines (Telnet sequences stripped, each at most MAX_LINE bytes), hands them
// to the session one at a time, and writes its replies. A client that does not read its replies is not read from
// either, so neither replies nor commands pile up in memory.
import { isUtf8 } from "node:buffer";
import type { Socket } from "node:net";

const MAX_LINE = 8192;
const IDLE_TIMEOUT_MS = 5 * 60_000;
/** Commands read ahead of the one running; beyond this we stop reading until they are done. */
const MAX_QUEUED = 64;

export interface ControlHandlers {
  /** Sees each line as it arrives, before the ones queued ahead of it ran (ABOR must reach a running transfer now). */
  arrived(line: string): void;
  /**
   * Runs one line; the next waits for it. Never rejects. `utf8` is false when its bytes are not UTF-8: decoding
   * made U+FFFD of them, so two names would become one; the session refuses such a line.
   */
  run(line: string, utf8: boolean): Promise<void>;
  /** Whether the session is closing: lines still queued are dropped. */
  closing(): boolean;
}

export class Control {
  private pending: Buffer = Buffer.alloc(0);
  private queue: { line: string; utf8: boolean }[] = [];
  private running = false;

  constructor(
    private readonly socket: Socket,
    private readonly handlers: ControlHandlers,
  ) {
    socket.setNoDelay(true);
    socket.setTimeout(IDLE_TIMEOUT_MS);
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
  }

  /** A long transfer keeps the control connection quiet; that is not idleness. */
  set transferring(on: boolean) {
    this.socket.setTimeout(on ? 0 : IDLE_TIMEOUT_MS);
  }

  /** Writes a reply: one line, or with `lines` a multi-line reply ending with "<code> End". */
  reply(code: number, text: string, lines?: string[]): void {
    if (this.socket.destroyed) return;
    if (lines) this.socket.write(`${code}-${text}\r\n${lines.map((l) => ` ${l}\r\n`).join("")}${code} End\r\n`);
    else this.socket.write(`${code} ${text}\r\n`);
  }

  private receive(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, stripTelnet(chunk)]);
    for (let nl = this.pending.indexOf(10); nl >= 0; nl = this.pending.indexOf(10)) {
      const bytes = this.pending.subarray(0, nl);
      const line = bytes.toString("utf8").replace(/\r$/, "");
      this.pending = this.pending.subarray(nl + 1);
      this.handlers.arrived(line);
      this.queue.push({ line, utf8: isUtf8(bytes) });
    }
    if (this.pending.length > MAX_LINE) {
      this.pending = Buffer.alloc(0);
      this.reply(500, "Command line too long.");
    }
    if (this.queue.length > MAX_QUEUED) this.socket.pause();
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (let next = this.queue.shift(); next !== undefined && !this.handlers.closing(); next = this.queue.shift()) {
      // A client that sends commands but does not read the replies: stop until it does. Meanwhile the queue
      // fills and reading pauses.
      if (this.socket.writableNeedDrain) await this.flushed();
      if (this.handlers.closing()) break;
      await this.handlers.run(next.line, next.utf8);
    }
    this.running = false;
    this.socket.resume();
  }

  /** Resolves once the replies written so far have gone to the kernel, or the connection closed. */
  private flushed(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off("drain", done).off("close", done);
        resolve();
      };
      this.socket.on("drain", done).on("close", done);
    });
  }
}

/** Removes Telnet IAC sequences (clients send IAC IP / IAC DM before ABOR). 0xFF never occurs in UTF-8. */
function stripTelnet(chunk: Buffer): Buffer {
  if (!chunk.includes(0xff)) return chunk;
  const out: number[] = [];
  for (let i = 0; i < chunk.length; i++) {
    const b = chunk[i]!;
    if (b !== 0xff) out.push(b);
    else if (chunk[i + 1] === 0xff) out.push(0xff), i++;
    else i += chunk[i + 1]! >= 0xfb && chunk[i + 1]! <= 0xfe ? 2 : 1;
  }
  return Buffer.from(out);
}
