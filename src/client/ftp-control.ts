// An FTP control connection: commands out, replies in (RFC 959 §4.2, multi-line replies included). Commands may
// be sent before the previous reply came (pipelined); replies are matched to commands in order.
import { connect, type Socket } from "node:net";

export interface FtpReply {
  code: number;
  /** The reply's text, its lines joined with "\n" (the code of each line kept, as the server sent it). */
  text: string;
}

/** A 4xx/5xx reply (or a command refused before it was sent): that command failed, the connection is still good. */
export class FtpReplyError extends Error {
  override name = "FtpReplyError";
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** The server broke the protocol, or the connection broke or timed out: the connection is no longer usable. */
export class FtpConnectionError extends Error {
  override name = "FtpConnectionError";
}

/** A reply longer than this (all its lines) is not a reply: no server the sync talks to sends one near it. */
const MAX_REPLY = 64 * 1024;

/**
 * Splits what a server sends into replies. Text arrives in any pieces: a reply split over packets, or several in
 * one. A line ends at LF (a CR before it is dropped). A multi-line reply starts "123-" and ends at a line
 * starting "123 " with the same code; lines between may hold anything.
 */
export class ReplyParser {
  private buffer = "";
  /** The code and lines of a multi-line reply not yet ended. */
  private open: { code: number; lines: string[]; size: number } | undefined;

  /** Takes the next piece of text; gives the replies it completes. Throws FtpConnectionError on what is not FTP. */
  push(text: string): FtpReply[] {
    const out: FtpReply[] = [];
    this.buffer += text;
    let start = 0;
    for (let end = this.buffer.indexOf("\n"); end >= 0; end = this.buffer.indexOf("\n", start)) {
      const line = this.buffer.charCodeAt(end - 1) === 13 && end > start ? this.buffer.slice(start, end - 1) : this.buffer.slice(start, end);
      start = end + 1;
      const reply = this.line(line);
      if (reply) out.push(reply);
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length + (this.open?.size ?? 0) > MAX_REPLY) throw new FtpConnectionError(`The FTP server sent a reply longer than ${MAX_REPLY / 1024} KB; it does not speak FTP.`);
    return out;
  }

  private line(line: string): FtpReply | undefined {
    const code = /^[1-5]\d\d(?=[ -]|$)/.test(line) ? Number(line.slice(0, 3)) : undefined;
    if (this.open) {
      this.open.lines.push(line);
      this.open.size += line.length + 1;
      if (code !== this.open.code || line[3] === "-") {
        if (this.open.size > MAX_REPLY) throw new FtpConnectionError(`The FTP server sent a reply longer than ${MAX_REPLY / 1024} KB; it does not speak FTP.`);
        return undefined;
      }
      const reply = { code, text: this.open.lines.join("\n") };
      this.open = undefined;
      return reply;
    }
    if (code === undefined) throw new FtpConnectionError(`The FTP server sent "${printable(line)}", which is not an FTP reply; check the FTP port.`);
    if (line[3] === "-") {
      this.open = { code, lines: [line], size: line.length + 1 };
      return undefined;
    }
    return { code, text: line };
  }
}

/** A line fit for a one-line error message: control characters shown as "?", cut at 80 characters. */
function printable(line: string): string {
  const clean = line.replace(/[\x00-\x1f\x7f]/g, "?");
  return clean.length > 80 ? clean.slice(0, 80) + "…" : clean;
}

interface Waiter {
  command: string;
  resolve(reply: FtpReply): void;
  reject(e: Error): void;
  /** Hears 1xx replies (150 before a transfer). */
  preliminary: ((reply: FtpReply) => void) | undefined;
}

/** The first line of a reply's text without its code, for messages. */
export function replyLine(reply: FtpReply): string {
  return printable(reply.text.split("\n", 1)[0]!);
}

export class FtpControl {
  private readonly parser = new ReplyParser();
  private readonly waiting: Waiter[] = [];
  private failure: Error | undefined;
  /** While a transfer runs, its data connection's timeout watches progress instead of this one's. */
  private paused = false;

  private constructor(
    private readonly socket: Socket,
    /** "host:port", for messages. */
    readonly where: string,
    private readonly timeoutMs: number,
  ) {
    socket.setEncoding("utf8");
    socket.setNoDelay(true);
    socket.on("data", (text: string) => {
      let replies: FtpReply[];
      try {
        replies = this.parser.push(text);
      } catch (e) {
        return this.fail(e as Error);
      }
      for (const reply of replies) this.deliver(reply);
    });
    socket.on("timeout", () => this.fail(new FtpConnectionError(`The FTP server at ${where} did not answer within ${timeoutMs / 1000} s.`)));
    socket.on("error", (e: NodeJS.ErrnoException) => this.fail(new FtpConnectionError(`The FTP connection to ${where} failed (${e.code ?? e.message}).`, { cause: e })));
    socket.on("close", () => this.fail(new FtpConnectionError(`The FTP server at ${where} closed the connection.`)));
  }

  /** Connects and waits for the server's greeting (220). */
  static async open(host: string, port: number, timeoutMs: number): Promise<FtpControl> {
    const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    const socket = connect({ host, port });
    const control = new FtpControl(socket, where, timeoutMs);
    const greeting = control.expect("(greeting)");
    socket.setTimeout(timeoutMs);
    const reply = await greeting;
    if (reply.code !== 220) {
      control.destroy();
      throw new FtpConnectionError(`The FTP server at ${where} greeted with "${replyLine(reply)}" instead of 220.`);
    }
    return control;
  }

  get closed(): boolean {
    return this.failure !== undefined;
  }

  /** The server's address, for data connections. */
  get remoteAddress(): string {
    return this.socket.remoteAddress ?? "";
  }

  /**
   * Sends a command; resolves with its final reply (2xx or 3xx), rejects with FtpReplyError on 4xx/5xx and with
   * FtpConnectionError when the connection fails. Several may be in flight (pipelined).
   */
  send(command: string, preliminary?: (reply: FtpReply) => void): Promise<FtpReply> {
    if (/[\r\n]/.test(command)) return Promise.reject(new FtpReplyError(501, `"${printable(command)}" holds a line break, which FTP cannot carry.`));
    const done = this.expect(command, preliminary);
    if (!this.failure) this.socket.write(command + "\r\n");
    return done;
  }

  /** Sends several commands in one packet; their replies in order. */
  sendAll(commands: readonly string[]): Promise<FtpReply>[] {
    if (commands.some((c) => /[\r\n]/.test(c))) return commands.map((c) => this.send(c));
    const replies = commands.map((c) => this.expect(c));
    if (!this.failure) this.socket.write(commands.map((c) => c + "\r\n").join(""));
    return replies;
  }

  private expect(command: string, preliminary?: (reply: FtpReply) => void): Promise<FtpReply> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0 && !this.paused) this.socket.setTimeout(this.timeoutMs);
      this.waiting.push({ command, resolve, reject, preliminary });
    });
  }

  /** Stops (true) or restarts the wait for replies while a transfer's data connection shows progress. */
  pauseTimeout(paused: boolean): void {
    this.paused = paused;
    this.socket.setTimeout(!paused && this.waiting.length > 0 ? this.timeoutMs : 0);
  }

  private deliver(reply: FtpReply): void {
    const waiter = this.waiting[0];
    if (!waiter) {
      // 421 may come unasked (the server shuts down); anything else unasked is out of step.
      return this.fail(new FtpConnectionError(`The FTP server at ${this.where} sent "${replyLine(reply)}" unasked.`));
    }
    if (reply.code < 200) {
      waiter.preliminary?.(reply);
      return;
    }
    this.waiting.shift();
    if (this.waiting.length === 0) this.socket.setTimeout(0);
    if (reply.code < 400) waiter.resolve(reply);
    else waiter.reject(new FtpReplyError(reply.code, replyLine(reply)));
  }

  private fail(e: Error, destroy = true): void {
    if (this.failure) return;
    this.failure = e;
    this.socket.setTimeout(0);
    if (destroy) this.socket.destroy();
    for (const w of this.waiting.splice(0)) w.reject(e);
  }

  /** Says goodbye (QUIT) without waiting for the answer, then closes. */
  close(): void {
    if (this.failure) return;
    this.fail(new FtpConnectionError(`The FTP connection to ${this.where} was closed.`), false);
    this.socket.end("QUIT\r\n");
    // A server that does not close after QUIT is not waited for.
    this.socket.setTimeout(this.timeoutMs, () => this.socket.destroy());
  }

  /** Closes at once, with a reset. */
  destroy(): void {
    if (!this.socket.destroyed) this.socket.resetAndDestroy();
    this.fail(new FtpConnectionError(`The FTP connection to ${this.where} was dropped.`));
  }
}
