// The FTP side of a sync, on basic-ftp: finding the device's FTP server once FTP mode is on, a small pool of
// logged-in connections (several files travel at once), the card's file tree, and the operations a mirror needs.
import { Client, FTPError, FileType } from "basic-ftp";
import { posix } from "node:path";
import type { Readable } from "node:stream";
import { BlockConnection } from "./ftp-block.js";
import { FtpLoginError, FtpUnreachableError } from "./sync-errors.js";

export interface FtpTarget {
  host: string;
  /** Ports to try in order until one greets. */
  ports: readonly number[];
  user: string;
  password: string;
}


/** A remote entry, by its path relative to the sync's remote folder ("2024/a.jpg"). */
export interface RemoteEntry {
  type: "file" | "dir";
  size: number;
  /** Modification time in ms since the epoch; undefined when the server's listing has none. */
  mtimeMs: number | undefined;
}

/** An error the FTP server answered (a 4xx/5xx reply): the connection is still good. */
export function isReply(e: unknown): e is FTPError {
  return e instanceof FTPError;
}

/** Time without an answer or progress before a login, command or transfer is given up. */
const TIMEOUT_MS = 10_000;
/** A server that serves one client at a time (the firmware's) may leave extra logins hanging: give up sooner. */
const EXTRA_LOGIN_TIMEOUT_MS = 3_000;

/** Logs in; `giveUpMs` bounds the whole login (the connection's own timeout stays the usual one). */
async function login(target: FtpTarget, port: number, giveUpMs?: number): Promise<Client> {
  const client = new Client(TIMEOUT_MS);
  const timer = giveUpMs === undefined ? undefined : setTimeout(() => client.close(), giveUpMs);
  try {
    await client.access({ host: target.host, port, user: target.user, password: target.password, secure: false });
  } catch (e) {
    client.close();
    if (isReply(e) && e.code === 530) {
      throw new FtpLoginError(`The FTP server at ${target.host}:${port} refused user "${target.user}" (530). Pass the device's FTP user and password with --ftp-user USER:PASSWORD.`);
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return client;
}

/** Tries the target's ports until one logs in; retries until `timeoutMs` passes. A refused login fails at once. */
export async function waitForFtp(target: FtpTarget, timeoutMs: number, signal?: AbortSignal): Promise<{ client: Client; port: number }> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    for (const port of target.ports) {
      if (signal?.aborted) throw signal.reason;
      try {
        return { client: await login(target, port), port };
      } catch (e) {
        if (e instanceof FtpLoginError) throw e;
        const err = e as NodeJS.ErrnoException;
        last = `${port}: ${err.code ?? err.message}`;
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

/** One logged-in connection with the operations a mirror needs. Paths are absolute on the server. */
export class FtpConnection {
  constructor(
    private client: Client,
    private readonly target: FtpTarget,
    private readonly port: number,
  ) {}

  /** Replaces a broken connection with a fresh login. */
  async reconnect(): Promise<void> {
    this.client.close();
    this.client = await login(this.target, this.port);
  }

  get closed(): boolean {
    return this.client.closed;
  }

  close(): void {
    this.client.close();
  }

  /**
   * Drops the connection at once. The data connection is reset, not closed: in FTP's stream mode a closed data
   * connection means "the file is complete", so a server would keep half a file; a reset makes it discard it.
   */
  abort(): void {
    for (const socket of [this.client.ftp.dataSocket, this.client.ftp.socket]) {
      try {
        if (socket && !socket.destroyed) socket.resetAndDestroy();
      } catch {
        socket?.destroy();
      }
    }
    this.client.close();
  }

  async list(dir: string): Promise<Map<string, RemoteEntry>> {
    const out = new Map<string, RemoteEntry>();
    for (const info of await this.client.list(dir)) {
      if (info.name === "." || info.name === "..") continue;
      const type = info.type === FileType.Directory ? "dir" : info.type === FileType.File ? "file" : undefined;
      if (!type) continue;
      out.set(info.name, { type, size: info.size, mtimeMs: info.modifiedAt?.getTime() });
    }
    return out;
  }

  /** Uploads a file's content; `onBytes` hears the bytes sent of this file so far. */
  async upload(source: Readable, remotePath: string, onBytes: (sent: number) => void): Promise<void> {
    this.client.trackProgress((info) => onBytes(info.bytes));
    try {
      await this.client.uploadFrom(source, remotePath);
    } finally {
      this.client.trackProgress();
    }
  }

  /** Sets a file's modification time (MFMT); false when the server does not support it. */
  async setMtime(remotePath: string, mtimeMs: number): Promise<boolean> {
    try {
      await this.client.send(`MFMT ${mfmtTime(mtimeMs)} ${remotePath}`);
      return true;
    } catch (e) {
      if (isReply(e) && [500, 501, 502, 504].includes(e.code)) return false;
      throw e;
    }
  }

  /** Whether the server has block mode (MODE B); the connection is left in stream mode. */
  async hasBlockMode(): Promise<boolean> {
    try {
      await this.client.send("MODE B");
    } catch (e) {
      if (isReply(e)) return false;
      throw e;
    }
    await this.client.send("MODE S");
    return true;
  }

  /** Creates a folder and its missing parents. */
  async ensureDir(path: string): Promise<void> {
    await this.client.ensureDir(path);
  }

  async mkdir(path: string): Promise<void> {
    await this.client.send(`MKD ${path}`);
  }

  async removeFile(path: string): Promise<void> {
    await this.client.remove(path);
  }

  async removeDir(path: string): Promise<void> {
    await this.client.send(`RMD ${path}`);
  }
}

/** Several connections to one server, handing out work to whichever is free. */
export class Pool<C extends { close(): void; abort(): void }> {
  protected readonly live: Set<C>;

  constructor(connections: C[]) {
    this.live = new Set(connections);
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Runs `work` on each item (of a list, or of a queue as they come), each connection taking the next item when it is free. A `work` that throws takes
   * its connection out of service for good; the others carry on. Throws the first such error when no
   * connection is left.
   */
  async each<T>(items: Iterable<T> | AsyncIterable<T>, work: (conn: C, item: T) => Promise<void>): Promise<void> {
    const it = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
    let firstError: unknown;
    const worker = async (conn: C): Promise<void> => {
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

/** The sync's connections (basic-ftp, stream mode): listings, folders, deletions, and uploads without block mode. */
export class FtpPool extends Pool<FtpConnection> {
  private constructor(
    connections: FtpConnection[],
    private readonly target: FtpTarget,
    private readonly port: number,
    /** The server takes MFMT: uploaded files can carry their local modification time. */
    readonly canSetTimes: boolean,
  ) {
    super(connections);
  }

  /**
   * Opens up to `size` connections (the first one given). A server that allows fewer (the firmware's allows one)
   * still works: connections it refuses are simply not used.
   */
  static async open(first: Client, target: FtpTarget, port: number, size: number): Promise<FtpPool> {
    const features = await first.features();
    const extra = await Promise.allSettled(Array.from({ length: Math.max(0, size - 1) }, () => login(target, port, EXTRA_LOGIN_TIMEOUT_MS)));
    const clients = [first, ...extra.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))];
    return new FtpPool(
      clients.map((c) => new FtpConnection(c, target, port)),
      target,
      port,
      features.has("MFMT"),
    );
  }

  /**
   * As many block-mode connections as this pool has, for the uploads, when the server has block mode (asked on
   * one of this pool's connections: a server that takes one login at a time is never asked for another); else
   * undefined.
   */
  async blockConnections(): Promise<Pool<BlockConnection> | undefined> {
    const [first] = this.live;
    if (!first || !(await first.hasBlockMode())) return undefined;
    const opened = await Promise.allSettled(Array.from({ length: this.size }, () => BlockConnection.open(this.target, this.port)));
    const connections = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    return connections.length > 0 ? new Pool(connections) : undefined;
  }
}

/** Joins a remote folder and a relative posix path into an absolute server path. */
export function remoteJoin(root: string, rel: string): string {
  return posix.join("/", root, rel);
}
