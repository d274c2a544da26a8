// A command's output on its way out: the tail kept for the answer and the log (-max-output), and
// the stream a streaming answer reads (stream-command-output), which pauses the command while the
// client is behind.
import type { RunningCommand } from "./spawn.js";

/** The line a cut output starts with: how many bytes were dropped before the tail that follows. */
export function cutMarker(dropped: number, kept: number): string {
  return `[webhook: output cut: the first ${dropped} bytes were dropped, the last ${kept} follow (-max-output)]\n`;
}

/** Collects output, keeping only the last `max` bytes (0: all). */
export class Tail {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  constructor(private readonly max: number) {}

  push(c: Buffer): void {
    this.chunks.push(c);
    this.size += c.length;
    if (this.max <= 0) return;
    // Whole chunks first; the first one kept is cut when the output ends.
    while (this.size - this.chunks[0]!.length >= this.max) {
      const first = this.chunks.shift()!;
      this.size -= first.length;
      this.dropped += first.length;
    }
  }

  /** Bytes pushed in all, kept or not. */
  get received(): number {
    return this.size + this.dropped;
  }

  /** Whether every byte pushed is still held (result() is then all of them, uncut). */
  get whole(): boolean {
    return this.dropped === 0 && (this.max <= 0 || this.size <= this.max);
  }

  result(): Buffer {
    let all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    let dropped = this.dropped;
    if (this.max > 0 && all.length > this.max) {
      dropped += all.length - this.max;
      all = all.subarray(all.length - this.max);
    }
    return dropped === 0 ? all : Buffer.concat([Buffer.from(cutMarker(dropped, all.length)), all]);
  }
}

/** Output queued for a slow streaming client beyond which its command is paused. */
const STREAM_HIGH_WATER = 1024 * 1024;

/**
 * Output queued for a slow streaming client of a command that cannot be paused (it runs on another
 * instance, -queue): beyond it, output is dropped and the stream says how much.
 */
const STREAM_LIMIT = 16 * 1024 * 1024;

/**
 * A command's output as an async iterator for the transport: chunks are queued until read, and
 * the command is paused while more than STREAM_HIGH_WATER bytes wait (or, with no command to
 * pause, output beyond STREAM_LIMIT is dropped). Once the reader returns (the client went away,
 * or HEAD), later output is dropped rather than queued.
 */
export class OutputStream implements AsyncIterableIterator<Buffer> {
  private readonly queued: Buffer[] = [];
  private queuedBytes = 0;
  private ended = false;
  private abandoned = false;
  private wake: (() => void) | undefined;
  private command: RunningCommand | undefined;
  private paused = false;
  /** Bytes dropped (no command to pause, the client far behind) not yet told in the stream. */
  private dropped = 0;

  /** The command whose output this is, to pause while the reader is behind. */
  attach(command: RunningCommand): void {
    this.command = command;
  }

  push(chunk: Buffer): void {
    if (this.abandoned) return;
    if (!this.command && this.queuedBytes + chunk.length > STREAM_LIMIT) {
      this.dropped += chunk.length;
      return;
    }
    this.tellDropped();
    this.queued.push(chunk);
    this.queuedBytes += chunk.length;
    if (!this.paused && this.queuedBytes > STREAM_HIGH_WATER && this.command) {
      this.paused = true;
      this.command.pause();
    }
    this.wake?.();
  }

  private flowAgain(): void {
    this.queuedBytes = 0;
    if (!this.paused) return;
    this.paused = false;
    this.command?.resume();
  }

  /** Queues the line saying how much output was dropped since the client fell behind, if any was. */
  private tellDropped(): void {
    if (this.dropped === 0) return;
    const line = Buffer.from(`\n[webhook: ${this.dropped} bytes of output dropped: the client read more slowly than the command wrote]\n`);
    this.dropped = 0;
    this.queued.push(line);
    this.queuedBytes += line.length;
  }

  end(): void {
    if (!this.abandoned) this.tellDropped();
    this.ended = true;
    this.wake?.();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    for (;;) {
      if (this.queued.length > 0) {
        const value = this.queued.length === 1 ? this.queued.pop()! : Buffer.concat(this.queued.splice(0));
        this.flowAgain();
        return { value, done: false };
      }
      if (this.ended || this.abandoned) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<Buffer>> {
    this.abandoned = true;
    this.queued.length = 0;
    // Nobody reads any more: the command runs on to its end, its output dropped.
    this.flowAgain();
    this.wake?.();
    return { value: undefined, done: true };
  }
}
