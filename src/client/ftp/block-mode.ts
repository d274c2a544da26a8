// A sync's FTP connection in block mode (RFC 959 `MODE B`), for servers that have it (our device service does; the
// firmware and most servers do not, and then basic-ftp's stream mode is used: stream-mode.ts). One data connection carries
// every transfer of a connection, each ending with an EOF block: a file costs STOR, its blocks and MFMT — no
// passive port, connect and close per file — and an interrupted upload is never taken for a complete one.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { StringDecoder } from "node:string_decoder";
import { BlockDecoder, END_BLOCK, toBlocks } from "../../shared/ftp-blocks.js";
import { writeAll } from "../../shared/socket-write.js";
import { checkFtpText, FtpReplyError, mfmtTime, mfmtUnknown, MlsdListing, seconds, type FtpTarget, type RemoteConnection, type RemoteEntry } from "./remote.js";
import { FtpLoginError, LocalFileError } from "../sync/errors.js";

/** Time without an answer or progress before a command or transfer is given up, unless --timeout says. */
const TIMEOUT_MS = 10_000;
/** Bytes read from the local file at once. */
const CHUNK = 256 * 1024;
/** The largest listing taken from a server: 64 MiB (our device's for 100 000 files is under 10). */
const MAX_LISTING = 64 * 1024 * 1024;
/** Bounds on what a server may send before it completes a reply, and on replies nobody asked for. */
const MAX_REPLY_BYTES = 64 * 1024;
const MAX_UNASKED = 16;

interface Reply {
  code: number;
  message: string;
}

const none = (): undefined => undefined;

function refusal(reply: Reply): FtpReplyError {
  return new FtpReplyError(reply.code, reply.message);
}

/** A control connection: commands go out, replies come back in order. Every wait ends when the connection does. */
class Control {
  private text = "";
  private lines: string[] = [];
  /** Characters of the reply being read: its complete lines and what came of the next one. */
  private held = 0;
  private readonly replies: Reply[] = [];
  private readonly waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  private failure: Error | undefined;
  /**
   * Whether the replies awaited are on the clock (see next()). The socket's timeout stays armed, restarted by every
   * command and reply, and ends only such a wait: setting and clearing it around each command cost more than the
   * command.
   */
  private timed = false;
  /** When the reply awaited must be complete: a server dripping it a byte at a time never trips the socket's timeout. */
  private deadline = 0;

  constructor(
    readonly socket: Socket,
    private readonly replyMs: number,
  ) {
    socket.setEncoding("utf8");
    socket.on("data", (text: string) => this.read(text));
    socket.on("error", (e) => this.fail(e));
    socket.on("close", () => this.fail(new Error("The FTP server closed the connection.")));
    socket.on("timeout", () => {
      if (this.timed) this.late();
    });
  }

  private late(): void {
    this.socket.destroy(new Error(`The FTP server did not answer within ${seconds(this.replyMs)} s.`));
  }

  static open(host: string, port: number, replyMs: number): Promise<Control> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, noDelay: true, timeout: TIMEOUT_MS });
      const slow = (): void => void socket.destroy(new Error(`No connection to the FTP server within ${TIMEOUT_MS / 1000} s.`));
      socket.once("connect", () => {
        socket.off("error", reject).off("timeout", slow);
        socket.setTimeout(replyMs);
        resolve(new Control(socket, replyMs));
      });
      socket.once("timeout", slow);
      socket.once("error", reject);
    });
  }

  /**
   * The next reply: the greeting, or the answer to the command sent before. Unless `untimed` (the end of a
   * transfer, which the control connection is silent for, however long it takes), it must come within the reply
   * time (--timeout).
   */
  next(untimed = false): Promise<Reply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    if (this.failure) return Promise.reject(this.failure);
    // The command just sent, or the reply just read, restarted the clock.
    if (!untimed) this.onTheClock();
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** The replies awaited must come within the reply time from now (after a silence, such as a transfer's). */
  expectSoon(): void {
    // None awaited (it came already, a 552 while the data still went out): an idle connection is no stall.
    if (this.waiting.length === 0) return;
    this.onTheClock();
    this.socket.setTimeout(this.replyMs);
  }

  private onTheClock(): void {
    if (!this.timed) this.deadline = Date.now() + this.replyMs;
    this.timed = true;
  }

  /** Sends one command line; one with a CR, LF or NUL in it is refused, never sent (it would be two commands). */
  send(command: string): Promise<Reply> {
    try {
      checkFtpText("An FTP command", command);
    } catch (e) {
      return Promise.reject(e);
    }
    this.socket.write(`${command}\r\n`);
    return this.next();
  }

  private read(text: string): void {
    if (this.timed && Date.now() > this.deadline) return this.late();
    this.text += text;
    this.held += text.length;
    if (this.held > MAX_REPLY_BYTES) return void this.socket.destroy(new Error("The FTP server sent an overlong reply."));
    for (let nl = this.text.indexOf("\n"); nl >= 0; nl = this.text.indexOf("\n")) {
      const line = this.text.slice(0, nl).replace(/\r$/, "");
      this.text = this.text.slice(nl + 1);
      this.lines.push(line);
      const first = this.lines[0]!;
      if (!/^\d{3}[ -]/.test(first)) return void this.socket.destroy(new Error(`The FTP server sent "${first.slice(0, 60)}", not a reply.`));
      // A reply ends with a line "ddd text" of its first line's code (RFC 959 §4.2).
      if (first[3] === "-" && (this.lines.length === 1 || !line.startsWith(`${first.slice(0, 3)} `))) continue;
      this.deliver({ code: Number(first.slice(0, 3)), message: this.lines.join("\n") });
      this.lines = [];
      this.held = this.text.length;
    }
  }

  private deliver(reply: Reply): void {
    const waiter = this.waiting.shift();
    // The next reply awaited (a command sent ahead) gets its own time.
    this.timed = false;
    if (this.waiting.length > 0) this.onTheClock();
    if (waiter) return waiter.resolve(reply);
    this.replies.push(reply);
    if (this.replies.length > MAX_UNASKED) this.socket.destroy(new Error("The FTP server sent replies nobody asked for."));
  }

  private fail(e: Error): void {
    this.failure ??= e;
    for (const w of this.waiting.splice(0)) w.reject(this.failure);
  }
}

/** One logged-in connection in block mode, with its data connection opened on first use and kept. */
export class BlockConnection implements RemoteConnection {
  private data: Socket | undefined;
  /** Where the local file is read into, a chunk at a time (each chunk is in the kernel before the next read). */
  private readonly chunk = Buffer.allocUnsafe(CHUNK);

  private constructor(
    private control: Control,
    private readonly target: FtpTarget,
    private readonly port: number,
  ) {}

  /** Logs in and switches to binary block mode; a server without block mode fails it with an FtpReplyError. */
  static async open(target: FtpTarget, port: number): Promise<BlockConnection> {
    return new BlockConnection(await blockLogin(target, port), target, port);
  }

  /**
   * Logs in on `port` and asks for block mode; when the server refuses it, logs out (a server that takes one
   * client at a time is free again) and gives undefined.
   */
  static async tryOpen(target: FtpTarget, port: number): Promise<BlockConnection | undefined> {
    const { control, blockMode } = await login(target, port);
    if (blockMode) return new BlockConnection(control, target, port);
    await control.send("QUIT").catch(() => undefined);
    control.socket.destroy();
    return undefined;
  }

  /** The server's FEAT lines, as names ("MFMT", "MLST"…). */
  async features(): Promise<Set<string>> {
    const reply = await this.control.send("FEAT");
    if (reply.code !== 211) return new Set();
    return new Set(
      reply.message
        .split("\n")
        .slice(1, -1)
        .map((l) => l.trim().split(" ")[0]!.toUpperCase()),
    );
  }

  async list(dir: string): Promise<Map<string, RemoteEntry>> {
    const data = await this.dataConnection();
    const listing = readBlocks(data, new MlsdListing(dir));
    const started = await this.control.send(`MLSD ${dir}`);
    if (started.code !== 150 && started.code !== 125) {
      listing.cancel();
      throw refusal(started);
    }
    const reply = this.control.next();
    // A listing refused while it streams in (too many entries, an overlong line) fails at once: the server's
    // end-of-transfer reply waits for bytes this side no longer reads. That reply still comes, out of step with
    // the next command: the connection is dropped (reconnect() makes a new one). A data connection the server
    // closed is not such a failure: its reply (a 426, say) comes at once and says why.
    const failed = await Promise.race([reply.then(none, none), listing.done.then(none, (e: Error) => e)]);
    if (failed && !data.destroyed) {
      this.abort();
      throw failed;
    }
    try {
      const ended = await reply;
      if (ended.code >= 300) throw refusal(ended);
      return await listing.done;
    } catch (e) {
      this.dropData();
      throw e;
    }
  }

  async ensureDir(path: string): Promise<void> {
    let at = "";
    for (const segment of path.split("/").filter(Boolean)) {
      at += `/${segment}`;
      const made = await this.control.send(`MKD ${at}`);
      if (made.code < 300) continue;
      // Refused: fine when it is a folder already.
      const there = await this.control.send(`MLST ${at}`);
      if (there.code !== 250 || !/type=dir;/i.test(there.message)) throw refusal(made);
    }
  }

  mkdir(path: string): Promise<void> {
    return this.command(`MKD ${path}`);
  }

  removeFile(path: string): Promise<void> {
    return this.command(`DELE ${path}`);
  }

  removeDir(path: string): Promise<void> {
    return this.command(`RMD ${path}`);
  }

  async rename(from: string, to: string): Promise<void> {
    const asked = await this.control.send(`RNFR ${from}`);
    if (asked.code !== 350) throw refusal(asked);
    await this.command(`RNTO ${to}`);
  }

  private async command(line: string): Promise<void> {
    const reply = await this.control.send(line);
    if (reply.code >= 300) throw refusal(reply);
  }

  /** Replaces a broken connection with a fresh login. */
  async reconnect(): Promise<void> {
    this.abort();
    this.control = await blockLogin(this.target, this.port);
  }

  close(): void {
    this.dropData();
    this.control.socket.end("QUIT\r\n");
  }

  /** Drops both connections at once; the server discards a file whose EOF block did not arrive. */
  abort(): void {
    this.dropData();
    this.control.socket.resetAndDestroy();
  }

  /**
   * Sends the local file `abs` of `size` bytes; `onBytes` hears the bytes sent so far. Each chunk is read into
   * one buffer once the previous one is in the kernel, the first before STOR goes out (and with it). The reads are synchronous,
   * as lftp's: a sync's files are mostly in the page cache, where a trip through libuv's thread pool (a thread
   * woken, the CPU handed over and back) cost more than the read. The price, lftp's too: a read from a slow disk
   * holds up the other connections while it lasts. With `mtimeMs`, MFMT follows the upload's 226.
   */
  async upload(abs: string, size: number, remotePath: string, mtimeMs: number | undefined, onBytes: (sent: number) => void, fresh = false): Promise<void> {
    let file: number;
    try {
      file = openSync(abs, "r");
    } catch (e) {
      throw LocalFileError.unreadable(e);
    }
    const readAt = (position: number): number => {
      try {
        return readSync(file, this.chunk, 0, Math.min(CHUNK, size - position), position);
      } catch (e) {
        throw LocalFileError.unreadable(e);
      }
    };
    try {
      let n = readAt(0);
      // A file read whole at once (most photos are smaller than a chunk) goes out with its EOF block in one write.
      const whole = n === size && fstatSync(file).size === size;
      const data = await this.dataConnection();
      const started = this.control.send(`STOR ${remotePath}`);
      // The first chunk goes with STOR, not after its 150: a round trip fewer per file. The server reads the data
      // connection only for an accepted transfer; on a refusal the connection is dropped with what it held.
      const firstBlocks = [...toBlocks(this.chunk.subarray(0, n)), ...(whole ? [END_BLOCK] : [])];
      const first = firstBlocks.length > 0 ? send(data, firstBlocks) : Promise.resolve();
      first.catch(() => undefined);
      const reply = await started;
      if (reply.code !== 150 && reply.code !== 125) {
        this.dropData();
        throw refusal(reply);
      }
      const ended = this.control.next(true);
      ended.catch(() => undefined);
      try {
        if (whole) {
          await first;
          onBytes(size);
        } else {
          let sent = 0;
          let out = first;
          for (;;) {
            await out;
            sent += n;
            onBytes(sent);
            n = sent < size ? readAt(sent) : 0;
            if (n === 0) break;
            out = send(data, toBlocks(this.chunk.subarray(0, n)));
          }
          if (sent !== size || fstatSync(file).size !== size) throw LocalFileError.changed();
          await send(data, [END_BLOCK]);
        }
        this.control.expectSoon();
      } catch (e) {
        // Without its EOF block the server keeps nothing; its reply (a full card, say) says more than a lost connection.
        // It must come soon: a server that stopped reading may never send one.
        this.dropData();
        this.control.expectSoon();
        const answer = await ended.catch(() => undefined);
        if (answer && answer.code >= 400 && !(e instanceof LocalFileError)) throw refusal(answer);
        throw e;
      }
      // A new file's time goes right behind its EOF block, saving a round trip: should the upload fail (552 after
      // its EOF block), MFMT finds no file and stamps nothing. Over an old file it waits for the 226: sent ahead, it
      // would stamp the old file when the upload fails, and a later sync would take that file for the new one.
      const stamp = (): Promise<Reply> => this.control.send(`MFMT ${mfmtTime(mtimeMs!)} ${remotePath}`);
      const early = fresh && mtimeMs !== undefined ? stamp() : undefined;
      early?.catch(() => undefined);
      const answer = await ended;
      if (answer.code >= 300) {
        this.dropData();
        throw refusal(answer);
      }
      if (mtimeMs === undefined) return;
      const set = await (early ?? stamp());
      if (set.code >= 300 && !mfmtUnknown(set.code)) throw refusal(set);
    } finally {
      closeSync(file);
    }
  }

  private async dataConnection(): Promise<Socket> {
    if (this.data && !this.data.destroyed && !this.data.readableEnded) return this.data;
    this.dropData();
    let reply = await this.control.send("EPSV");
    let port = Number(/\|\|\|(\d+)\|/.exec(reply.message)?.[1]);
    if (reply.code >= 500) {
      reply = await this.control.send("PASV");
      const n = /(\d+),(\d+),(\d+),(\d+),(\d+),(\d+)/.exec(reply.message);
      port = n ? Number(n[5]) * 256 + Number(n[6]) : NaN;
    }
    if (reply.code >= 300) throw refusal(reply);
    if (!(port > 0 && port < 65536)) throw new Error(`The FTP server's passive reply gave no port: ${reply.message.slice(0, 80)}`);
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: this.control.socket.remoteAddress!, port, noDelay: true });
      s.once("connect", () => resolve(s));
      s.once("error", reject);
      watchStall(s, this.target.timeoutMs || TIMEOUT_MS);
    });
    // Errors show in the transfer that meets them; none may go unheard between transfers.
    socket.on("error", () => undefined);
    this.data = socket;
    return socket;
  }

  private dropData(): void {
    this.data?.resetAndDestroy();
    this.data = undefined;
  }
}

/** MLSD lines ("type=file;size=12;modify=20240101120000; a.jpg") → the folder's files and folders by name. */
export function parseMlsd(text: string): Map<string, RemoteEntry> {
  const listing = new MlsdListing("/");
  listing.push(text);
  return listing.end();
}

/** Logs in, in binary mode, and asks for block mode: the control connection, and whether the server took it. */
async function login(target: FtpTarget, port: number): Promise<{ control: Control; blockMode: boolean }> {
  const control = await Control.open(target.host, port, target.timeoutMs || TIMEOUT_MS);
  try {
    let reply = await control.next();
    while (reply.code === 120) reply = await control.next();
    if (reply.code !== 220) throw refusal(reply);
    reply = await control.send(`USER ${target.user}`);
    if (reply.code === 331) reply = await control.send(`PASS ${target.password}`);
    if (reply.code === 530) throw new FtpLoginError(target.host, port, target.user);
    if (reply.code !== 230) throw refusal(reply);
    reply = await control.send("TYPE I");
    if (reply.code !== 200) throw refusal(reply);
    reply = await control.send("MODE B");
    if (reply.code !== 200 && reply.code < 500) throw refusal(reply);
    return { control, blockMode: reply.code === 200 };
  } catch (e) {
    control.socket.destroy();
    throw e;
  }
}

/** A login for a further connection to a server that took block mode before. */
async function blockLogin(target: FtpTarget, port: number): Promise<Control> {
  const { control, blockMode } = await login(target, port);
  if (blockMode) return control;
  control.socket.destroy();
  throw new FtpReplyError(504, "The FTP server no longer takes block mode (MODE B).");
}

/**
 * Reads one listing's blocks from the data connection up to its EOF block (at most MAX_LISTING bytes, with no
 * pause as long as --timeout); the connection is then paused for the next transfer. `cancel()` stops reading
 * when the transfer was refused.
 */
function readBlocks(socket: Socket, listing: MlsdListing): { done: Promise<Map<string, RemoteEntry>>; cancel(): void } {
  const decoder = new BlockDecoder();
  const text = new StringDecoder("utf8");
  let bytes = 0;
  let stop!: (failure?: Error) => void;
  const done = new Promise<Map<string, RemoteEntry>>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      let rest: Buffer | undefined;
      try {
        const out = decoder.push(chunk);
        rest = out.rest;
        for (const piece of out.data) {
          // Parsed as it comes: the bound on entries holds while the listing streams in.
          listing.push(text.write(piece));
          bytes += piece.length;
        }
      } catch (e) {
        return stop(e as Error);
      }
      if (bytes > MAX_LISTING) return stop(new Error(`The FTP server's listing is over ${MAX_LISTING >> 20} MiB; giving up.`));
      if (!decoder.ended) return;
      stop();
      // Put back after the listener is gone (and reading paused): it would get the bytes straight back otherwise.
      if (rest) socket.unshift(rest);
    };
    // The data connection's own timeout handler destroys it with the reason, which ends the wait here. Set anew
    // here: a quiet spell before may have spent it, and only a write or data coming re-arms it.
    const onClose = (): void => stop(new Error("The data connection closed before the transfer's end."));
    stop = (failure) => {
      socket.off("data", onData).off("close", onClose).pause();
      if (failure) return reject(failure);
      try {
        listing.push(text.end());
        resolve(listing.end());
      } catch (e) {
        reject(e as Error);
      }
    };
    socket.on("data", onData).on("close", onClose);
    socket.resume();
  });
  done.catch(() => undefined);
  return { done, cancel: () => stop() };
}

/**
 * Destroys a data connection once a transfer on it has waited `ms` (--timeout) with no byte moving; quiet between
 * transfers is no stall (the next file waits for replies on the control connection). A check every tenth of that,
 * not Node's socket timeout: while a write is pending, Node puts off the timeout's first expiry (net.js
 * `_onTimeout`), so a server that stopped reading an upload was noticed after twice the time. A write that waits
 * adds nothing to `bytesWritten` (it counts what was handed over) until the next one is handed over.
 */
function watchStall(s: Socket, ms: number): void {
  let moved = -1;
  let since = Date.now();
  const timer = setInterval(() => {
    const now = s.bytesRead + s.bytesWritten;
    const waiting = s.connecting || s.writableLength > 0 || s.readableFlowing === true;
    if (!waiting || now !== moved) {
      moved = now;
      since = Date.now();
    } else if (Date.now() - since >= ms) {
      s.destroy(new Error(`The FTP server's data connection stalled for ${seconds(ms)} s.`));
    }
  }, ms / 10).unref();
  s.once("close", () => clearInterval(timer));
}

/**
 * Hands `buffers` to the data connection and resolves once the kernel has them; rejects once it is closed. A stall
 * (watchStall) destroys the socket with the reason, which is the rejection then.
 */
function send(socket: Socket, buffers: Buffer[]): Promise<void> {
  return writeAll(socket, buffers, () => new Error("The data connection was closed."));
}
