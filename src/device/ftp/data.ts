// Data connections: passive (PASV/EPSV, we listen) and active (PORT/EPRT, we connect); one per transfer in stream
// mode, one for many in block mode.
import { createConnection, createServer, isIPv4, type Server, type Socket } from "node:net";

const CONNECT_TIMEOUT_MS = 30_000;

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
  connect(): Promise<Socket>;
  close(): void;
}

/** A channel that waits for the connection a listener offers it. */
interface PassiveChannel extends DataChannel {
  /** Takes `s` as this channel's connection; false when it has one already or was closed. */
  offer(s: Socket): boolean;
}

function passiveChannel(port: number, onClose: () => void): PassiveChannel {
  let socket: Socket | undefined;
  let waiting: ((s: Socket) => void) | undefined;
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
      new Promise<Socket>((resolve, reject) => {
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
export async function listenPassive(host: string, peer: string, range: [number, number]): Promise<DataChannel> {
  const server = createServer({ noDelay: true, allowHalfOpen: true });
  const port = await listenInRange(server, host, range);
  const channel = passiveChannel(port, () => server.close());
  server.on("connection", (s) => {
    // only the logged-in client may connect to its data port
    if (plainAddress(s.remoteAddress) !== peer || !channel.offer(s)) s.destroy();
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
  ) {
    server.on("connection", (s) => {
      if (plainAddress(s.remoteAddress) !== this.peer || !this.current?.offer(s)) s.destroy();
    });
  }

  static async open(host: string, peer: string): Promise<PassivePort> {
    const server = createServer({ noDelay: true, allowHalfOpen: true });
    const port = await listenInRange(server, host, undefined);
    return new PassivePort(server, port, peer);
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
export function activeChannel(host: string, port: number): DataChannel {
  let socket: Socket | undefined;
  let connected: Promise<Socket> | undefined;
  return {
    port,
    connect: () =>
      (connected ??= new Promise<Socket>((resolve, reject) => {
        const s = createConnection({ host, port, noDelay: true, allowHalfOpen: true, timeout: CONNECT_TIMEOUT_MS });
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
