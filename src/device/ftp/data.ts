// Data connections: passive (PASV/EPSV, we listen) and active (PORT/EPRT, we connect); one per transfer in stream
// mode, one for many in block mode.
import { createServer, isIPv4, Socket, type Server, type SocketConstructorOpts } from "node:net";

const CONNECT_TIMEOUT_MS = 30_000;
/** Size of the buffer data connections read into; it stays in the CPU's cache (256 KiB read best of 64 KiB–1 MiB). */
export const DATA_READ_BUFFER = 256 * 1024;

/** Takes the bytes of one read. They are valid only during the call: the next read lands in the same memory. */
export type Intake = (bytes: Buffer) => void;

/**
 * A data connection. Node reads what arrives straight into `buffer`, handed to `intake`; the socket's stream gives
 * no data (Node's `onread`). A fresh buffer per read, as a plain socket has, made the kernel fault in new pages for
 * most reads: about half of an upload's CPU time here. Every data connection of a server can share one buffer:
 * each read is taken (written to the card, or copied) within its callback, before any other read. A read that comes
 * while no transfer takes it waits in `waiting` (a copy), and the socket stops reading until a transfer takes it:
 * the kernel's window holds the rest.
 */
export class DataSocket extends Socket {
  intake: Intake | undefined;
  /** Bytes no transfer took yet: early data, or in block mode what followed a file's EOF block. */
  waiting: Buffer | undefined;

  /** Node reads `noDelay` (here always set: a reply's last bytes must not wait) only in the constructor. */
  constructor(buffer: Buffer, options: SocketConstructorOpts & { handle?: unknown } = {}) {
    const owner: { socket?: DataSocket } = {};
    super({
      ...options,
      allowHalfOpen: true,
      noDelay: true,
      onread: { buffer, callback: (n: number) => owner.socket!.arrived(buffer.subarray(0, n)) },
    } as SocketConstructorOpts);
    owner.socket = this;
  }

  /** Whether the client closed the connection with nothing left to take. */
  get closedEmpty(): boolean {
    return this.destroyed || (this.readableEnded && this.waiting === undefined);
  }

  /** false stops reading (Node's onread contract). */
  private arrived(bytes: Buffer): boolean {
    if (this.intake) {
      this.intake(bytes);
      return true;
    }
    this.waiting = this.waiting ? Buffer.concat([this.waiting, bytes]) : Buffer.from(bytes);
    return false;
  }
}

/**
 * The connection a server accepted (paused: the server has pauseOnConnect) as a DataSocket. Node offers `onread`
 * only to sockets it is given at construction, not to a server's, so the accepted socket hands its handle over
 * and is destroyed without it (which releases the server's count of it).
 */
function adopt(accepted: Socket, buffer: Buffer): DataSocket {
  const held = accepted as unknown as { _handle: unknown };
  const handle = held._handle;
  held._handle = null;
  accepted.destroy();
  return new DataSocket(buffer, { handle, readable: true, writable: true });
}

/** Normalises "::ffff:1.2.3.4" to "1.2.3.4" so peers can be compared. */
export function plainAddress(address: string | undefined): string {
  return (address ?? "").replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
}

/**
 * A data connection prepared by PASV/EPSV/PORT/EPRT and used by the next transfer (in block mode, the next ones).
 * Half-open: the client's end of an upload does not end our side, so the socket is closed once, by close().
 * The socket always has an error listener: a reset between transfers is seen by the next one, never thrown.
 */
export interface DataChannel {
  readonly port: number;
  /** The connected socket (the same one on every call); rejects after a timeout or when closed first. */
  connect(): Promise<DataSocket>;
  close(): void;
}

/** A channel that waits for the connection a listener offers it. */
interface PassiveChannel extends DataChannel {
  /** Takes `s` as this channel's connection; false when it has one already or was closed. */
  offer(s: DataSocket): boolean;
}

function passiveChannel(port: number, onClose: () => void): PassiveChannel {
  let socket: DataSocket | undefined;
  let waiting: ((s: DataSocket) => void) | undefined;
  let failed: ((e: Error) => void) | undefined;
  let closed = false;
  return {
    port,
    offer: (s) => {
      if (socket || closed) return false;
      socket = s.on("error", () => undefined);
      waiting?.(s);
      return true;
    },
    connect: () =>
      new Promise<DataSocket>((resolve, reject) => {
        if (socket) return resolve(socket);
        if (closed) return reject(new Error("data channel closed"));
        const timer = setTimeout(() => reject(new Error("no data connection within 30 s")), CONNECT_TIMEOUT_MS);
        waiting = (s) => {
          clearTimeout(timer);
          resolve(s);
        };
        failed = (e) => {
          clearTimeout(timer);
          reject(e);
        };
      }),
    close: () => {
      closed = true;
      onClose();
      socket?.destroy();
      failed?.(new Error("data channel closed"));
    },
  };
}

/** Listens for one data connection from `peer` (the control connection's client) in `range`; others are dropped. */
export async function listenPassive(host: string, peer: string, range: [number, number], buffer: Buffer): Promise<DataChannel> {
  const server = createServer({ noDelay: true, allowHalfOpen: true, pauseOnConnect: true });
  const port = await listenInRange(server, host, range);
  const channel = passiveChannel(port, () => server.close());
  server.on("connection", (s) => {
    // only the logged-in client may connect to its data port
    if (plainAddress(s.remoteAddress) !== peer) return s.destroy();
    const data = adopt(s, buffer);
    if (!channel.offer(data)) data.destroy();
    else server.close();
  });
  return channel;
}

/**
 * A session's passive data port when no port range is set: one listener (any free port) for the whole session,
 * sparing a listen and a close per transfer. Each PASV/EPSV gets a channel for the next connection from the peer;
 * any other connection is dropped.
 */
export class PassivePort {
  private current: PassiveChannel | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly peer: string,
    private readonly buffer: Buffer,
  ) {
    server.on("connection", (s) => {
      if (plainAddress(s.remoteAddress) !== this.peer || !this.current) return s.destroy();
      const data = adopt(s, this.buffer);
      if (!this.current.offer(data)) data.destroy();
    });
  }

  static async open(host: string, peer: string, buffer: Buffer): Promise<PassivePort> {
    const server = createServer({ noDelay: true, allowHalfOpen: true, pauseOnConnect: true });
    const port = await listenInRange(server, host, undefined);
    return new PassivePort(server, port, peer, buffer);
  }

  /** The channel for the next connection; a previous one still open stops waiting. */
  next(): DataChannel {
    this.current?.close();
    const channel: PassiveChannel = passiveChannel(this.port, () => {
      if (this.current === channel) this.current = undefined;
    });
    this.current = channel;
    return channel;
  }

  close(): void {
    this.current?.close();
    this.server.close();
  }
}

/** Connects to the client's announced address when the transfer starts. */
export function activeChannel(host: string, port: number, buffer: Buffer): DataChannel {
  let socket: DataSocket | undefined;
  let connected: Promise<DataSocket> | undefined;
  return {
    port,
    connect: () =>
      (connected ??= new Promise<DataSocket>((resolve, reject) => {
        const s = new DataSocket(buffer).setTimeout(CONNECT_TIMEOUT_MS).connect({ host, port });
        socket = s;
        s.once("connect", () => {
          s.setTimeout(0);
          resolve(s);
        });
        s.once("timeout", () => s.destroy(new Error("data connection timed out")));
        s.on("error", reject);
      })),
    close: () => socket?.destroy(),
  };
}

async function listenInRange(server: Server, host: string, range: [number, number] | undefined): Promise<number> {
  const [low, high] = range ?? [0, 0];
  const count = high - low + 1;
  const first = Math.floor(Math.random() * count);
  for (let i = 0; i < count; i++) {
    const port = low === 0 ? 0 : low + ((first + i) % count);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          server.on("error", () => undefined); // a failed accept (out of file descriptors) drops that connection only
          resolve();
        });
      });
      const addr = server.address();
      return typeof addr === "object" && addr ? addr.port : port;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    }
  }
  throw new Error(`no free passive port in ${low}-${high}`);
}

/** "h1,h2,h3,h4,p1,p2" (RFC 959 PORT) → host and port; undefined when malformed. */
export function parsePort(arg: string): { host: string; port: number } | undefined {
  const n = arg.split(",").map((x) => Number(x.trim()));
  if (n.length !== 6 || n.some((x) => !Number.isInteger(x) || x < 0 || x > 255)) return undefined;
  return { host: n.slice(0, 4).join("."), port: n[4]! * 256 + n[5]! };
}

/** "|1|1.2.3.4|5282|" or "|2|::1|5282|" (RFC 2428 EPRT) → host and port; undefined when malformed. */
export function parseEprt(arg: string): { host: string; port: number } | undefined {
  const d = arg[0];
  if (!d) return undefined;
  const parts = arg.split(d);
  if (parts.length !== 5 || !["1", "2"].includes(parts[1]!)) return undefined;
  const port = Number(parts[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host: parts[2]!, port };
}

/** The PASV reply's "h1,h2,h3,h4,p1,p2", or undefined when the address is not IPv4. */
export function pasvAddress(host: string, port: number): string | undefined {
  if (!isIPv4(host)) return undefined;
  return `${host.replaceAll(".", ",")},${port >> 8},${port & 255}`;
}
