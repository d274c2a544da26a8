// The FTP side of a sync: finding the device's FTP server once FTP mode is on, a small pool of logged-in
// connections (several files travel at once), the card's file tree, and the operations a mirror needs. The
// control connection is ftp-control.ts; the data connections (passive mode only) are here.
import { connect, type Socket } from "node:net";
import { posix } from "node:path";
import type { Readable } from "node:stream";
import { FtpConnectionError, FtpControl, FtpReplyError, replyLine, type FtpReply } from "./ftp-control.js";
import { FtpLoginError, FtpUnreachableError } from "./sync-errors.js";

export interface FtpTarget {
  host: string;
  /** Ports to try in order until one greets. */
  ports: readonly number[];
  user: string;
  password: string;
  /**
   * The server is known to read pipelined commands (our device service, known by its X-FrameFi-FTP-Port): each
   * MFMT then travels with the next transfer's EPSV, one round trip less per file. Others get one command at a time.
   */
  pipeline?: boolean | undefined;
}

/** A remote entry, by its path relative to the sync's remote folder ("2024/a.jpg"). */
export interface RemoteEntry {
  type: "file" | "dir";
  size: number;
  /** Modification time in ms since the epoch; undefined when the server's listing has none. */
  mtimeMs: number | undefined;
}

/** An error the FTP server answered (a 4xx/5xx reply): the connection is still good. */
export function isReply(e: unknown): e is FtpReplyError {
  return e instanceof FtpReplyError;
}

/** Time without an answer or progress before a login, command or transfer is given up. */
const TIMEOUT_MS = 10_000;
/** Files up to this size travel through `FtpConnection.store`, read whole; larger ones are streamed. */
export const SMALL_FILE = 1024 * 1024;
/** A small file is written in pieces of this size: each piece written re-arms the data connection's timeout. */
const PIECE = 64 * 1024;
/** A server that serves one client at a time (the firmware's) may leave extra logins hanging: give up sooner. */
const EXTRA_LOGIN_TIMEOUT_MS = 3_000;

/** The names FEAT lists ("MFMT", "MLST", "EPSV", ...), upper case. */
function featureNames(reply: FtpReply): Set<string> {
  const names = new Set<string>();
  // Feature lines start with a space (RFC 2389); other lines are the reply's own.
  for (const line of reply.text.split("\n").slice(1, -1)) {
    if (!line.startsWith(" ")) continue;
    const name = line.trim().split(" ", 1)[0];
    if (name) names.add(name.toUpperCase());
  }
  return names;
}

async function loginOnce(target: FtpTarget, port: number): Promise<FtpConnection> {
  const control = await FtpControl.open(target.host, port, TIMEOUT_MS);
  try {
    const user = await control.send(`USER ${target.user}`);
    if (user.code === 331) await control.send(`PASS ${target.password}`);
    const features = await control.send("FEAT").then(featureNames, (e: unknown) => {
      if (isReply(e)) return new Set<string>();
      throw e;
    });
    if (features.has("UTF8")) await control.send("OPTS UTF8 ON").catch((e: unknown) => {
      if (!isReply(e)) throw e;
    });
    await control.send("TYPE I");
    return new FtpConnection(control, features, target, port);
  } catch (e) {
    control.destroy();
    if (isReply(e) && e.code === 530) {
      throw new FtpLoginError(`The FTP server at ${control.where} refused user "${target.user}" (530). Pass the device's FTP user and password with --ftp-user USER:PASSWORD.`);
    }
    throw e;
  }
}

/** Logs in; `giveUpMs` bounds the whole login (the connection's own timeout stays the usual one). */
async function login(target: FtpTarget, port: number, giveUpMs?: number): Promise<FtpConnection> {
  const attempt = loginOnce(target, port);
  if (giveUpMs === undefined) return attempt;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FtpConnectionError(`The FTP server at ${target.host}:${port} did not log in within ${giveUpMs / 1000} s.`)), giveUpMs);
  });
  try {
    return await Promise.race([attempt, expired]);
  } catch (e) {
    attempt.then((c) => c.close(), () => undefined);
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/** Tries the target's ports until one logs in; retries until `timeoutMs` passes. A refused login fails at once. */
export async function waitForFtp(target: FtpTarget, timeoutMs: number, signal?: AbortSignal): Promise<{ connection: FtpConnection; port: number }> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    for (const port of target.ports) {
      if (signal?.aborted) throw signal.reason;
      try {
        return { connection: await login(target, port), port };
      } catch (e) {
        if (e instanceof FtpLoginError) throw e;
        const err = e as Error;
        last = `${port}: ${((err.cause ?? err) as NodeJS.ErrnoException).code ?? err.message}`;
      }
    }
    if (Date.now() > deadline) {
      const ports = target.ports.join(" or ");
      throw new FtpUnreachableError(`No FTP server answered at ${target.host} port ${ports} within ${Math.round(timeoutMs / 1000)} s (${last}). Check that the device is in FTP mode, or give its FTP port with --ftp-port.`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** MFMT's argument: the time in UTC as YYYYMMDDHHMMSS. */
function mfmtTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/[-:T]/g, "").slice(0, 14);
}

/** The port of an EPSV answer: "229 Entering Extended Passive Mode (|||port|)". */
function epsvPort(reply: FtpReply, where: string): number {
  const m = /\(([!-~])\1\1(\d{1,5})\1\)/.exec(reply.text);
  const port = m ? Number(m[2]) : 0;
  if (port < 1 || port > 65535) throw new FtpConnectionError(`The FTP server at ${where} answered EPSV with "${replyLine(reply)}", which holds no port.`);
  return port;
}

/** The port of a PASV answer: "227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)". Its address is not used (see passive). */
function pasvPort(reply: FtpReply, where: string): number {
  const m = /(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3})/.exec(reply.text);
  const port = m ? Number(m[5]) * 256 + Number(m[6]) : 0;
  if (port < 1 || port > 65535) throw new FtpConnectionError(`The FTP server at ${where} answered PASV with "${replyLine(reply)}", which holds no port.`);
  return port;
}

/** "20240102030405" or with fractions, UTC, as ms since the epoch; undefined when it is not such a time. */
function mlsdTime(text: string): number | undefined {
  const m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.(\d{1,3}))?$/.exec(text);
  if (!m) return undefined;
  const ms = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, m[7] ? +m[7].padEnd(3, "0") : 0);
  return Number.isNaN(ms) ? undefined : ms;
}

/** An MLSD listing (RFC 3659 §7): "type=file;size=12;modify=20240102030405; name" per line. */
export function parseMlsd(text: string): Map<string, RemoteEntry> {
  const out = new Map<string, RemoteEntry>();
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const space = line.indexOf(" ");
    if (space < 0) continue;
    const name = line.slice(space + 1);
    if (name === "" || name === "." || name === ".." || name.includes("/")) continue;
    const facts = new Map<string, string>();
    for (const fact of line.slice(0, space).split(";")) {
      const eq = fact.indexOf("=");
      if (eq > 0) facts.set(fact.slice(0, eq).toLowerCase(), fact.slice(eq + 1));
    }
    const type = facts.get("type")?.toLowerCase();
    if (type !== "file" && type !== "dir") continue;
    const size = Number(facts.get("size") ?? 0);
    const modify = facts.get("modify");
    out.set(name, { type, size: Number.isSafeInteger(size) && size >= 0 ? size : 0, mtimeMs: modify === undefined ? undefined : mlsdTime(modify) });
  }
  return out;
}

/** A LIST listing (for a server without MLSD), read by basic-ftp's parser: Unix and DOS formats. */
async function parseLongList(text: string): Promise<Map<string, RemoteEntry>> {
  const { parseList, FileType } = await import("basic-ftp");
  const out = new Map<string, RemoteEntry>();
  for (const info of parseList(text)) {
    if (info.name === "." || info.name === "..") continue;
    const type = info.type === FileType.Directory ? "dir" : info.type === FileType.File ? "file" : undefined;
    if (type) out.set(info.name, { type, size: info.size, mtimeMs: info.modifiedAt?.getTime() });
  }
  return out;
}

/**
 * A data connection's failure, its silence for TIMEOUT_MS, or its end before `use` is done with it; `over()` once
 * the transfer ended (no error is made then: each costs a stack trace, and this runs for every file).
 */
function dataFailure(socket: Socket, where: string): { failed: Promise<never>; over(): void } {
  let ended = false;
  const failed = new Promise<never>((_, reject) => {
    socket.on("error", (e: NodeJS.ErrnoException) => {
      if (!ended) reject(new FtpConnectionError(`The FTP data connection to ${where} failed (${e.code ?? e.message}).`, { cause: e }));
    });
    socket.on("timeout", () => {
      reject(new FtpConnectionError(`The FTP data connection to ${where} made no progress for ${TIMEOUT_MS / 1000} s.`));
      socket.destroy();
    });
    socket.on("close", () => {
      if (!ended) reject(new FtpConnectionError(`The FTP server at ${where} closed the data connection before the transfer ended.`));
    });
  });
  failed.catch(() => undefined);
  return { failed, over: () => (ended = true) };
}

/** One logged-in connection with the operations a mirror needs. Paths are absolute on the server. */
export class FtpConnection {
  /** False once the server refused EPSV: PASV from then on. */
  private epsv = true;
  /** An EPSV sent ahead (pipelined after the last MFMT), for the next transfer. */
  private nextPassive: Promise<FtpReply> | undefined;
  private data: Socket | undefined;
  private buffer: Buffer | undefined;

  constructor(
    private control: FtpControl,
    /** What the server's FEAT listed, upper case. */
    readonly features: ReadonlySet<string>,
    private readonly target: FtpTarget,
    private readonly port: number,
  ) {}

  /** A buffer of at least `size` bytes for this connection's next `store`, reused from one file to the next. */
  scratch(size: number): Buffer {
    if (!this.buffer || this.buffer.length < size) this.buffer = Buffer.allocUnsafe(Math.max(size, 256 * 1024));
    return this.buffer;
  }

  /** Replaces a broken connection with a fresh login. */
  async reconnect(): Promise<void> {
    this.control.destroy();
    const fresh = await login(this.target, this.port);
    this.control = fresh.control;
    this.epsv = fresh.epsv;
    this.nextPassive = undefined;
  }

  get closed(): boolean {
    return this.control.closed;
  }

  close(): void {
    this.data?.destroy();
    this.control.close();
  }

  /**
   * Drops the connection at once. The data connection is reset, not closed: in FTP's stream mode a closed data
   * connection means "the file is complete", so a server would keep half a file; a reset makes it discard it.
   */
  abort(): void {
    if (this.data && !this.data.destroyed) {
      try {
        this.data.resetAndDestroy();
      } catch {
        this.data.destroy();
      }
    }
    this.control.destroy();
  }

  /** Where the next data connection goes: EPSV, or PASV once the server refused EPSV. */
  private async passive(): Promise<number> {
    const early = this.nextPassive;
    this.nextPassive = undefined;
    const where = this.control.where;
    if (this.epsv) {
      try {
        return epsvPort(await (early ?? this.control.send("EPSV")), where);
      } catch (e) {
        if (!isReply(e) || e.code < 500) throw e;
        this.epsv = false;
      }
    }
    return pasvPort(await this.control.send("PASV"), where);
  }

  /**
   * Runs a command that moves data (STOR, MLSD, LIST) over a passive data connection; `use` writes or reads it.
   * The server's 4xx/5xx answer rejects with FtpReplyError and leaves the connection good; anything else (a
   * broken data connection, a server out of step) drops the control connection too, so that it is not reused.
   */
  private async transfer<T>(command: string, direction: "send" | "receive", use: (data: Socket, failed: Promise<never>) => Promise<T>): Promise<T> {
    const port = await this.passive();
    // The server's address as the control connection sees it: a PASV address behind NAT would be wrong.
    const data = connect({ host: this.control.remoteAddress, port });
    this.data = data;
    data.setTimeout(TIMEOUT_MS);
    const { failed, over } = dataFailure(data, this.control.where);
    let started!: () => void;
    const start = new Promise<void>((resolve) => (started = resolve));
    const final = this.control.send(command, (reply) => {
      if (reply.code === 150 || reply.code === 125) started();
    });
    final.then(started, () => undefined);
    const refused = new Promise<never>((_, reject) => final.catch(reject));
    refused.catch(() => undefined);
    let connected = false;
    try {
      // What is sent waits for the server's 150; what is received is read from the start (some servers say 150 late).
      const opened = new Promise((resolve) => data.once("connect", resolve)).then(() => (connected = true));
      await Promise.race([direction === "send" ? Promise.all([opened, start]) : opened, failed, refused]);
      this.control.pauseTimeout(true);
      let result: T;
      try {
        result = await Promise.race([use(data, failed), refused]);
        // All sent or received: the data connection may close now (the server closes it before its 226).
        over();
      } finally {
        this.control.pauseTimeout(false);
      }
      await final;
      return result;
    } catch (e) {
      // A refusal by the server (a full card closes the data connection, then says 552) wins over what it did to
      // the data connection meanwhile; a data connection that never opened leaves nothing to wait for.
      if (connected || isReply(e)) {
        const answer = await final.then(() => undefined, (r: unknown) => r);
        if (isReply(answer)) throw answer;
      }
      this.control.destroy();
      throw e;
    } finally {
      over();
      data.destroy();
      this.data = undefined;
    }
  }

  async list(dir: string): Promise<Map<string, RemoteEntry>> {
    const mlsd = this.features.has("MLST");
    const text = await this.transfer(mlsd ? `MLSD ${dir}` : `LIST ${dir}`, "receive", async (data, failed) => {
      data.setEncoding("utf8");
      let text = "";
      data.on("data", (piece: string) => (text += piece));
      await Promise.race([new Promise((resolve) => data.once("end", resolve)), failed]);
      return text;
    });
    return mlsd ? parseMlsd(text) : parseLongList(text);
  }

  /** Uploads a file's content, streamed with backpressure; `onBytes` hears the bytes sent of this file so far. */
  async upload(source: Readable, remotePath: string, onBytes: (sent: number) => void): Promise<void> {
    await this.transfer(`STOR ${remotePath}`, "send", async (data, failed) => {
      let sent = 0;
      for await (const piece of source) {
        sent += (piece as Buffer).length;
        if (!data.write(piece)) await Promise.race([new Promise((resolve) => data.once("drain", resolve)), failed]);
        onBytes(sent);
      }
      await Promise.race([new Promise<void>((resolve) => data.end(() => resolve())), failed]);
    });
  }

  /**
   * Uploads bytes held in memory (a small file: see SMALL_FILE). For many small files the client's CPU time per
   * file sets the pace, and this costs less than `upload`: no stream pipeline, no progress.
   */
  async store(bytes: Buffer, remotePath: string): Promise<void> {
    await this.transfer(`STOR ${remotePath}`, "send", async (data, failed) => {
      for (let at = PIECE; at < bytes.length; at += PIECE) data.write(bytes.subarray(at - PIECE, at));
      const last = bytes.subarray(Math.max(0, Math.ceil(bytes.length / PIECE) - 1) * PIECE);
      await Promise.race([new Promise<void>((resolve) => data.end(last, () => resolve())), failed]);
    });
  }

  /** Sets a file's modification time (MFMT); false when the server does not support it. */
  async setMtime(remotePath: string, mtimeMs: number): Promise<boolean> {
    const command = `MFMT ${mfmtTime(mtimeMs)} ${remotePath}`;
    let reply: Promise<FtpReply>;
    if (this.target.pipeline && this.epsv && !this.nextPassive) {
      const [mfmt, epsv] = this.control.sendAll([command, "EPSV"]);
      epsv!.catch(() => undefined);
      this.nextPassive = epsv;
      reply = mfmt!;
    } else reply = this.control.send(command);
    try {
      await reply;
      return true;
    } catch (e) {
      if (isReply(e) && [500, 501, 502, 504].includes(e.code)) return false;
      throw e;
    }
  }

  /** Creates a folder and its missing parents. */
  async ensureDir(path: string): Promise<void> {
    let at = "";
    for (const part of path.split("/").filter((p) => p !== "")) {
      at += "/" + part;
      await this.control.send(`CWD ${at}`).catch(async (e: unknown) => {
        if (!isReply(e)) throw e;
        await this.control.send(`MKD ${at}`);
      });
    }
  }

  async mkdir(path: string): Promise<void> {
    await this.control.send(`MKD ${path}`);
  }

  async removeFile(path: string): Promise<void> {
    await this.control.send(`DELE ${path}`);
  }

  async removeDir(path: string): Promise<void> {
    await this.control.send(`RMD ${path}`);
  }
}

/** Several connections to one server, handing out work to whichever is free. */
export class FtpPool {
  private readonly live: Set<FtpConnection>;

  private constructor(
    connections: FtpConnection[],
    /** The server takes MFMT: uploaded files can carry their local modification time. */
    readonly canSetTimes: boolean,
  ) {
    this.live = new Set(connections);
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Opens up to `size` connections (the first one given). A server that allows fewer (the firmware's allows one)
   * still works: connections it refuses are simply not used.
   */
  static async open(first: FtpConnection, target: FtpTarget, port: number, size: number): Promise<FtpPool> {
    const extra = await Promise.allSettled(Array.from({ length: Math.max(0, size - 1) }, () => login(target, port, EXTRA_LOGIN_TIMEOUT_MS)));
    const connections = [first, ...extra.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))];
    return new FtpPool(connections, first.features.has("MFMT"));
  }

  /**
   * Runs `work` on each item (of a list, or of a queue as they come), each connection taking the next item when it is free. A `work` that throws takes
   * its connection out of service for good; the others carry on. Throws the first such error when no
   * connection is left.
   */
  async each<T>(items: Iterable<T> | AsyncIterable<T>, work: (conn: FtpConnection, item: T) => Promise<void>): Promise<void> {
    const it = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
    let firstError: unknown;
    const worker = async (conn: FtpConnection): Promise<void> => {
      try {
        for (let next = await it.next(); !next.done; next = await it.next()) await work(conn, next.value);
      } catch (e) {
        firstError ??= e;
        this.live.delete(conn);
        conn.close();
      }
    };
    await Promise.all([...this.live].map(worker));
    if (this.live.size === 0) throw firstError ?? new Error("No FTP connection is left.");
  }

  close(): void {
    for (const c of this.live) c.close();
  }

  /** Drops every connection at once, transfers included (see FtpConnection.abort). */
  abort(): void {
    for (const c of this.live) c.abort();
  }
}

/** Joins a remote folder and a relative posix path into an absolute server path. */
export function remoteJoin(root: string, rel: string): string {
  return posix.join("/", root, rel);
}
