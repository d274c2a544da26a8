// The HTTP/1.1 transport in front of an HttpApp (contract.ts), on node:net. A connection handler: any
// net.Server or tls.Server (TCP, Unix socket, TLS) feeds it sockets. It parses requests itself
// (node:http costs ~1.5x the CPU per request), routes each one from its head alone, keeps the
// body only for a request the application accepts (up to -max-body), and writes each answer in one write, or
// chunked when the body is a stream. Nothing here knows about hooks or commands. The transport
// owns what all connections share: the request memory budget, the connection caps and the sweep
// of timeouts; a Connection (connection.ts) reads and answers one client, head.ts parses and
// encode.ts writes.
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TlsOptions } from "node:tls";
import { type CapReached, ConnectionCounts } from "../../shared/connection-counts.js";
import { Connection, type ConnectionHost } from "./connection.js";
import type { HttpApp, HttpResponse } from "./contract.js";
import { date, encodeResponse } from "./encode.js";

export interface TransportOptions {
  /** -max-body: a larger request body is answered 413. */
  maxBody: number;
  /** A connection without traffic for this long, and not waiting for an answer, is closed. */
  idleTimeoutMs?: number;
  /** The whole request head must arrive within this long after its first byte (408). */
  headersTimeoutMs?: number;
  /** The whole request, body included, must arrive within this long (408). */
  requestTimeoutMs?: number;
  /** A request head larger than this is answered 431 (Go's default: 1 MiB). */
  maxHeaderBytes?: number;
  /** More header fields than this are answered 431. */
  maxHeaderCount?: number;
  /**
   * Bytes of unfinished requests held at once, over all connections: heads still arriving and
   * the bodies of accepted requests (until answered, or until the application is done with them). A request
   * that would go beyond is answered 503 and its connection closed. Default: 64 MiB, or maxBody if larger.
   */
  maxRequestMemory?: number;
  /** A request body that sends nothing for this long is dropped: 408 and the connection closed. */
  bodyTimeoutMs?: number;
  /** Open connections at once; one more is answered 503 and closed. 0: no limit. Default 2048. */
  maxConnections?: number;
  /** Open connections at once from one client address (IPv6: one /64); one more is answered 503 and closed. 0: no limit. Default 256. */
  maxConnectionsPerAddress?: number;
}

/** Milliseconds from the environment (for tests of the timeouts), else the default. */
function envMs(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const DEFAULT_REQUEST_MEMORY = 64 * 1024 * 1024;
export const DEFAULT_MAX_CONNECTIONS = 2048;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
// A connection turned away at a cap has this long to read its 503 before it is destroyed; at most
// this many wait at once (more are closed at once: the cap is what keeps a flood cheap).
const TURNED_AWAY_MS = 2000;
const MAX_TURNED_AWAY = 1024;
// What such a connection sends is read (and dropped) up to this much: a request's head and a small body.
const TURNED_AWAY_READ = 64 * 1024;

/** The HTTP/1.1 transport: feed it connections, close it gracefully. */
export class HttpTransport implements ConnectionHost {
  readonly maxBody: number;
  readonly maxHeaderBytes: number;
  readonly maxHeaderCount: number;
  private readonly idleTimeoutMs: number;
  private readonly headersTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly bodyTimeoutMs: number;
  private readonly maxRequestMemory: number;
  /** Bytes of unfinished requests held now, over all connections. */
  private requestMemory = 0;
  /** The part of it each client address holds. */
  private readonly memoryByClient = new Map<string, number>();
  /** The most one address may hold: half the request memory (or -max-body, if larger), so one client alone cannot take it all. */
  private readonly clientShare: number;
  private readonly connections = new Set<Connection>();
  /** Connections accepted before open(), not read yet. */
  private held: Socket[] | undefined = [];
  private readonly servers = new Set<Server>();
  private sweeper: NodeJS.Timeout | undefined;
  /** The listening servers' closing, once stopAccepting has begun it. */
  private readonly stopped: Promise<void>[] = [];
  private idleWaiters: (() => void)[] = [];
  private readonly counts: ConnectionCounts;
  /** Connections answered 503 at a cap, and when: what they send is dropped until they are destroyed. */
  private readonly turnedAway = new Map<Socket, number>();
  accepting = true;

  constructor(
    readonly app: HttpApp,
    opts: TransportOptions,
  ) {
    this.maxBody = opts.maxBody;
    this.maxHeaderBytes = opts.maxHeaderBytes ?? 1024 * 1024;
    this.maxHeaderCount = opts.maxHeaderCount ?? 200;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? envMs("WEBHOOK_IDLE_TIMEOUT_MS", 30_000);
    this.headersTimeoutMs = opts.headersTimeoutMs ?? envMs("WEBHOOK_HEADERS_TIMEOUT_MS", 20_000);
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 300_000;
    this.bodyTimeoutMs = opts.bodyTimeoutMs ?? 15_000;
    this.maxRequestMemory = opts.maxRequestMemory ?? Math.max(DEFAULT_REQUEST_MEMORY, opts.maxBody);
    this.clientShare = Math.max(Math.floor(this.maxRequestMemory / 2), opts.maxBody);
    this.counts = new ConnectionCounts({
      total: opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      perAddress: opts.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    });
  }

  /**
   * Counts `n` more bytes of unfinished requests held for `client`; false (nothing counted) when that
   * would exceed the request memory, or that client's share of it.
   */
  reserve(n: number, client: string | undefined): boolean {
    if (this.requestMemory + n > this.maxRequestMemory) return false;
    if (client !== undefined) {
      const mine = (this.memoryByClient.get(client) ?? 0) + n;
      if (mine > this.clientShare) return false;
      this.memoryByClient.set(client, mine);
    }
    this.requestMemory += n;
    return true;
  }

  release(n: number, client: string | undefined): void {
    if (n === 0) return;
    this.requestMemory -= n;
    if (client === undefined) return;
    const left = this.memoryByClient.get(client)! - n;
    if (left === 0) this.memoryByClient.delete(client);
    else this.memoryByClient.set(client, left);
  }

  /** Hands a connection (TCP, Unix socket or TLS) to the transport. */
  readonly onConnection = (socket: Socket): void => {
    if (!this.accepting) {
      socket.destroy();
      return;
    }
    const cap = this.counts.admit(socket);
    if (cap) {
      this.turnAway(socket, cap);
      return;
    }
    if (this.held) {
      // Unread until open(); a reset meanwhile must not end the server (a socket's error without a listener does).
      socket.on("error", () => undefined);
      socket.pause();
      this.held.push(socket);
      return;
    }
    this.serve(socket);
  };

  /** Reads and answers an admitted connection. */
  private serve(socket: Socket): void {
    this.connections.add(new Connection(socket, this));
    this.sweeper ??= setInterval(() => this.sweep(), 1000).unref();
  }

  /**
   * A connection beyond a cap: answered 503 before its request is read (a client reads it as the answer
   * to what it sends), then what it sends is dropped, so that closing does not reset the connection
   * before the answer is read, until it closes or TURNED_AWAY_MS have passed.
   */
  private turnAway(socket: Socket, cap: CapReached): void {
    if (this.turnedAway.size >= MAX_TURNED_AWAY) {
      socket.destroy();
      return;
    }
    this.turnedAway.set(socket, Date.now());
    socket.on("error", () => undefined);
    socket.once("close", () => this.turnedAway.delete(socket));
    let dropped = 0;
    socket.on("data", (d: Buffer) => {
      dropped += d.length;
      if (dropped > TURNED_AWAY_READ) socket.pause();
    });
    const body = `503 Service Unavailable: too many open connections${cap === "address" ? " from your address" : ""}; close one or try again later`;
    const res: HttpResponse = {
      status: 503,
      headers: [
        ["Content-Type", "text/plain; charset=utf-8"],
        ["Retry-After", "1"],
      ],
      body,
    };
    socket.end(encodeResponse(res, { http10: false, isHead: false, keepAlive: false }, date()));
    this.sweeper ??= setInterval(() => this.sweep(), 1000).unref();
  }

  /**
   * Starts serving: the connections accepted so far, then every new one. As the reference, the socket
   * listens first (it may need root) and requests are served only once the hooks are loaded.
   */
  open(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const socket of held) {
      socket.resume();
      // Admitted (and counted) when accepted.
      if (!socket.destroyed) this.serve(socket);
    }
  }

  /** A server for TCP or a Unix socket, or for TLS when `tls` options are given; close() stops it. */
  createServer(tls?: TlsOptions): Server {
    const server = tls ? createTlsServer(tls, this.onConnection) : createNetServer({ noDelay: true }, this.onConnection);
    return this.track(server);
  }

  /** Makes close() stop a server that feeds this transport. */
  track<S extends Server>(server: S): S {
    this.servers.add(server);
    return server;
  }

  forget(c: Connection): void {
    this.connections.delete(c);
    if (this.connections.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Timeouts, checked once a second rather than with a timer per request. */
  private sweep(): void {
    const now = Date.now();
    for (const [socket, since] of this.turnedAway) if (now - since > TURNED_AWAY_MS) socket.destroy();
    for (const c of this.connections) {
      if (c.endedAt) {
        if (now - c.endedAt > 5000) c.socket.destroy();
      } else if (c.waiting) {
        continue;
      } else if (c.receivingSince && now - c.receivingSince > (c.readingHead ? this.headersTimeoutMs : this.requestTimeoutMs)) {
        c.refuse(408);
      } else if (c.receivingSince && !c.readingHead && now - c.lastActive > this.bodyTimeoutMs) {
        c.refuse(408, "the request body stopped arriving");
      } else if (now - c.lastActive > this.idleTimeoutMs) {
        c.socket.destroy();
      }
    }
    if (this.connections.size === 0 && this.turnedAway.size === 0 && !this.accepting) clearInterval(this.sweeper);
  }

  /** Stops accepting: the listening servers close, idle connections end, busy ones after their answer. */
  stopAccepting(): void {
    this.accepting = false;
    for (const s of this.servers) this.stopped.push(new Promise<void>((resolve) => s.close(() => resolve())));
    for (const c of this.connections) c.shutdown();
  }

  /** Resolves once no connection is left (at once when none is). */
  idle(): Promise<void> {
    if (this.connections.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Ends the connections still open and resolves once the listening servers are closed. */
  async close(): Promise<void> {
    if (this.accepting) this.stopAccepting();
    for (const c of this.connections) c.socket.destroy();
    for (const socket of this.turnedAway.keys()) socket.destroy();
    await Promise.all(this.stopped);
    clearInterval(this.sweeper);
  }
}
