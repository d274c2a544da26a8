// One client connection of the HTTP transport: reads requests from the socket (the head, then the
// body of a request the application accepts), hands them over, and writes the answers in order;
// pipelined requests wait in the buffer while one is being answered.
import type { Socket } from "node:net";
import { clientKey } from "../../shared/connection-counts.js";
import type { Accepted, HttpApp, HttpResponse, RequestHead, Routed } from "./contract.js";
import { date, encodeResponse, encodeStreamHead, type Exchange, goRefusal, noBody, plain, starResponse } from "./encode.js";
import { afterHead, badTrailer, chunkSize, headEnd, type ParsedHead, parseHead, Refused, resumeAt, target } from "./head.js";

/** What a connection asks of the transport that holds it. */
export interface ConnectionHost {
  readonly app: HttpApp;
  readonly maxBody: number;
  readonly maxHeaderBytes: number;
  readonly maxHeaderCount: number;
  /** False once graceful shutdown has begun: answers then close their connections. */
  readonly accepting: boolean;
  /** Counts `n` more bytes of unfinished requests for `client`; false when the request memory (or the client's share) is used up. */
  reserve(n: number, client: string | undefined): boolean;
  release(n: number, client: string | undefined): void;
  /** The connection has closed. */
  forget(c: Connection): void;
}

// A refused body is read and dropped (so closing cannot reset the connection before the client
// has read the answer), but not without bound.
const MAX_DISCARD = 64 * 1024 * 1024;
// Pipelined requests waiting behind one that is being answered are buffered up to this much.
const MAX_BUFFERED = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** Go's RemoteAddr: "ip:port", IPv6 in brackets, IPv4-mapped IPv6 shown as plain IPv4; "@" on a Unix socket. */
function remoteAddr(socket: Socket): string {
  let ip = socket.remoteAddress;
  if (ip === undefined) return "@";
  if (ip.startsWith("::ffff:") && ip.includes(".")) ip = ip.slice(7);
  const port = socket.remotePort ?? 0;
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function isStream(body: HttpResponse["body"]): body is AsyncIterable<Buffer> {
  return typeof body !== "string" && !Buffer.isBuffer(body);
}

const enum State {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailer,
}

export class Connection {
  private buf: Buffer = EMPTY;
  /** Storage `buf` may end in, with room to grow: `used` bytes of it are filled. */
  private store: Buffer | undefined;
  private used = 0;
  /** Where the search for the end of the head resumes (the head arrives in pieces). */
  private scanned = 0;
  private state = State.Head;
  private need = 0;
  private chunks: Buffer[] = [];
  /** A Content-Length body of an accepted request, filled as it arrives (one copy, no concatenation at the end). */
  private whole: Buffer | undefined;
  private bodyLen = 0;
  /** Bytes of the body counted against the transport's request memory. */
  private held = 0;
  /** Bytes of an incomplete head counted against it. */
  private headHeld = 0;
  /** Reads nothing more (answered 503 for the request memory). */
  private deaf = false;
  /** The request being read: its routing, or null between requests. */
  private routed: Routed | null = null;
  /** The request's answer was sent before its body was read (413); drop the body, then close. */
  private answered = false;
  /** The current request's version and method, and whether the connection stays open after its answer. */
  private readonly x: Exchange = { http10: false, isHead: false, keepAlive: true };
  /** An answer is being produced or streamed: later requests wait in `buf`. */
  private busy = false;
  private closed = false;
  /** When the current request's first byte arrived; 0 between requests. */
  receivingSince = 0;
  lastActive = Date.now();
  /** When this side ended the connection (it then only drops what still arrives). */
  endedAt = 0;
  private readonly remote: string;
  /** The client address the request memory is shared out by (undefined on a Unix socket). */
  private readonly client: string | undefined;

  constructor(
    readonly socket: Socket,
    private readonly t: ConnectionHost,
  ) {
    this.remote = remoteAddr(socket);
    this.client = clientKey(socket.remoteAddress);
    socket.setNoDelay(true);
    socket.on("data", (d: Buffer) => this.onData(d));
    socket.on("drain", () => this.readOn());
    socket.on("error", () => undefined);
    socket.on("close", () => {
      this.closed = true;
      this.releaseBody();
      t.forget(this);
    });
  }

  get idle(): boolean {
    return !this.busy && this.routed === null && this.buf.length === 0;
  }

  get waiting(): boolean {
    return this.busy;
  }

  /** Whether the request being received is still in its head (else its body). */
  get readingHead(): boolean {
    return this.state === State.Head;
  }

  private onData(d: Buffer): void {
    this.lastActive = Date.now();
    if (this.endedAt) return; // answered and ended: drop the rest
    this.append(d);
    if (this.busy) {
      if (this.buf.length > MAX_BUFFERED) this.socket.pause();
      return;
    }
    this.parse();
  }

  /**
   * Appends received bytes to `buf`. Its storage grows by half again each time, so a request head
   * arriving in many pieces is copied O(n) times rather than O(n²) (garbage a flood would multiply).
   */
  private append(d: Buffer): void {
    if (this.buf.length === 0) {
      this.buf = d;
      this.store = undefined;
      return;
    }
    const store = this.store;
    const start = this.buf.byteOffset - (store?.byteOffset ?? 0);
    if (store && this.buf.buffer === store.buffer && start + this.buf.length === this.used && this.used + d.length <= store.length) {
      d.copy(store, this.used);
      this.used += d.length;
      this.buf = store.subarray(start, this.used);
      return;
    }
    const size = this.buf.length + d.length;
    const next = Buffer.allocUnsafeSlow(Math.max(size + (size >> 1), 16 * 1024));
    this.buf.copy(next, 0);
    d.copy(next, this.buf.length);
    this.store = next;
    this.used = size;
    this.buf = next.subarray(0, size);
  }

  /** Reads again once the answers are written, unless MAX_BUFFERED of pipelined requests already wait. */
  private resume(): void {
    // Without the bound, each answer let another read's worth in while one request was taken out.
    if (!this.closed && !this.busy && !this.deaf && this.socket.writableLength === 0 && this.buf.length <= MAX_BUFFERED) this.socket.resume();
  }

  /** The answers written so far have been taken by the socket: reads, and starts the requests waiting, again. */
  private readOn(): void {
    this.lastActive = Date.now();
    this.resume();
    if (!this.busy && !this.endedAt && !this.deaf) this.parse();
  }

  /** Answers a bad request and ends the connection. */
  refuse(status: number, detail = ""): void {
    this.releaseBody();
    if (this.answered) {
      this.end(); // its answer (413, 503) is out already
      return;
    }
    this.x.keepAlive = false;
    const raw = goRefusal(status, detail);
    if (raw === undefined) {
      this.write(plain(status, detail));
      return;
    }
    if (this.closed) return;
    this.socket.write(raw);
    this.end();
  }

  /** Ends the connection after its current answer (graceful shutdown); at once when idle. */
  shutdown(): void {
    this.x.keepAlive = false;
    if (this.idle && !this.endedAt) this.end();
  }

  private end(): void {
    this.endedAt = Date.now();
    this.buf = EMPTY;
    this.store = undefined;
    this.socket.end();
  }

  private parse(): void {
    while (!this.busy && !this.endedAt && !this.closed) {
      switch (this.state) {
        case State.Head: {
          // Empty lines before a request line are ignored (RFC 9112 2.2).
          let i = 0;
          while (i < this.buf.length && (this.buf[i] === 0x0d || this.buf[i] === 0x0a)) i++;
          if (i > 0) this.buf = this.buf.subarray(i);
          if (this.buf.length === 0) {
            this.receivingSince = 0;
            return;
          }
          if (this.socket.writableNeedDrain) {
            // Answers the socket has not taken yet (the client is not reading them): the next request starts
            // on "drain" (readOn), as the reference reads the next request once the last answer is written.
            this.socket.pause();
            return;
          }
          if (this.receivingSince === 0) this.receivingSince = Date.now();
          const end = headEnd(this.buf, this.scanned);
          if (end === -1) {
            this.scanned = resumeAt(this.buf);
            if (this.buf.length > this.t.maxHeaderBytes) this.refuse(431, "request header too large");
            else {
              // What the head holds is the storage it grows in, not just the bytes received so far.
              const size = this.store?.length ?? this.buf.length;
              if (size > this.headHeld) {
                if (!this.t.reserve(size - this.headHeld, this.client)) {
                  this.overBudget();
                  return;
                }
                this.headHeld = size;
              }
            }
            return;
          }
          this.releaseHead();
          if (end > this.t.maxHeaderBytes) {
            this.refuse(431, "request header too large");
            return;
          }
          const parsed = parseHead(this.buf.toString("latin1", 0, end), this.t.maxHeaderCount);
          this.buf = this.buf.subarray(afterHead(this.buf, end));
          this.scanned = 0;
          if (parsed instanceof Refused) {
            if (parsed.http10 !== undefined) this.x.http10 = parsed.http10;
            this.refuse(parsed.status, parsed.detail);
            return;
          }
          this.begin(parsed);
          continue;
        }
        case State.Body:
        case State.ChunkData: {
          if (this.buf.length === 0) return;
          const take = Math.min(this.need, this.buf.length);
          this.keep(this.buf.subarray(0, take));
          this.buf = this.buf.subarray(take);
          this.need -= take;
          if (this.need > 0) return;
          if (this.state === State.Body) this.complete();
          else this.state = State.ChunkEnd;
          continue;
        }
        default: {
          // Chunked framing lines: CRLF only (a bare LF here is how chunked bodies get smuggled).
          const lf = this.buf.indexOf(0x0a);
          if (lf === -1) {
            if (this.buf.length > 4096) this.refuse(400, "malformed chunked encoding");
            return;
          }
          if (lf === 0 || this.buf[lf - 1] !== 0x0d) {
            this.refuse(400, "malformed chunked encoding");
            return;
          }
          const line = this.buf.toString("latin1", 0, lf - 1);
          this.buf = this.buf.subarray(lf + 1);
          if (this.state === State.ChunkEnd) {
            if (line !== "") {
              this.refuse(400, "malformed chunked encoding");
              return;
            }
            this.state = State.ChunkSize;
          } else if (this.state === State.Trailer) {
            if (line === "") this.complete();
            else if (badTrailer(line)) {
              this.refuse(400, "malformed chunked encoding");
              return;
            }
          } else {
            const size = chunkSize(line);
            if (size === undefined) {
              this.refuse(400, "malformed chunked encoding");
              return;
            }
            if (size === 0) this.state = State.Trailer;
            else {
              this.need = size;
              this.state = State.ChunkData;
              if (!this.answered && this.bodyLen + size > this.t.maxBody && this.routed?.kind === "accepted") this.tooLarge();
            }
          }
        }
      }
    }
  }

  /** Routes a request whose head was read, and gets ready for its body. */
  private begin(h: ParsedHead): void {
    this.x.http10 = h.http10;
    this.x.keepAlive = this.t.accepting && h.keepAlive;
    this.x.isHead = h.method === "HEAD";
    const head: RequestHead = { method: h.method, url: target(h.target), rawHeaders: h.rawHeaders, remoteAddr: this.remote };
    this.routed = h.target === "*" ? { kind: "response", response: starResponse(h.method) } : this.t.app.route(head);
    this.chunks = [];
    this.whole = undefined;
    this.bodyLen = 0;
    this.answered = false;
    const length = h.contentLength ?? 0;
    if (h.chunked) {
      this.state = State.ChunkSize;
      if (h.http10) this.x.keepAlive = false;
    } else if (length > 0) {
      this.state = State.Body;
      this.need = length;
      if (this.routed.kind === "accepted" && length > this.t.maxBody) {
        this.tooLarge();
        return;
      }
      // The whole declared length is counted at once: a flood is refused before its bodies are read.
      if (this.routed.kind === "accepted") {
        if (!this.t.reserve(length, this.client)) {
          this.overBudget();
          return;
        }
        this.held = length;
        this.whole = Buffer.allocUnsafe(length);
      }
    } else {
      this.complete();
      return;
    }
    if (h.expectContinue) this.socket.write("HTTP/1.1 100 Continue\r\n\r\n");
  }

  /** Keeps body bytes for an accepted request (within the request memory); drops them otherwise (bounded). */
  private keep(bytes: Buffer): void {
    this.bodyLen += bytes.length;
    if (this.routed?.kind === "accepted" && !this.answered) {
      // A chunked body is counted as it arrives (a Content-Length one was counted whole).
      if (this.whole) bytes.copy(this.whole, this.bodyLen - bytes.length);
      else if (this.t.reserve(bytes.length, this.client)) {
        this.held += bytes.length;
        this.chunks.push(bytes);
      } else this.overBudget();
    } else if (this.bodyLen > MAX_DISCARD) this.socket.destroy();
  }

  /** Gives the memory of the body being read back to the transport (once `inUse` settles, when given). */
  private releaseBody(inUse?: Promise<unknown>): void {
    this.releaseHead();
    this.chunks = [];
    this.whole = undefined;
    const held = this.held;
    this.held = 0;
    if (held === 0) return;
    if (inUse) void inUse.finally(() => this.t.release(held, this.client));
    else this.t.release(held, this.client);
  }

  private releaseHead(): void {
    this.t.release(this.headHeld, this.client);
    this.headHeld = 0;
  }

  /** -max-body exceeded: answer 413 now, then drop the rest of the body and close. */
  private tooLarge(): void {
    this.answered = true;
    this.x.keepAlive = false;
    this.releaseBody();
    const response = this.t.app.tooLarge(this.routed as Accepted, this.t.maxBody);
    this.socket.write(encodeResponse(response, this.x, date()));
  }

  /**
   * The request memory is used up by other unfinished requests: answer 503 and close now. Unlike
   * a 413, the rest of the request is not read (reading it is what the flood wants): the connection
   * stops reading and is destroyed a few seconds later, time for the client to read the answer.
   */
  private overBudget(): void {
    this.answered = true;
    this.x.keepAlive = false;
    this.releaseBody();
    const res = plain(503, "too many unfinished requests at once; try again later");
    res.headers.push(["Retry-After", "1"]);
    this.socket.write(encodeResponse(res, this.x, date()));
    this.deaf = true;
    this.socket.pause();
    this.end();
  }

  /** The whole request has arrived. */
  private complete(): void {
    const routed = this.routed!;
    this.routed = null;
    this.state = State.Head;
    this.need = 0;
    this.receivingSince = 0;
    if (this.answered) {
      this.end();
      return;
    }
    if (routed.kind === "response") {
      this.write(routed.response);
      return;
    }
    const body = this.whole ?? (this.chunks.length === 1 ? this.chunks[0]! : this.chunks.length === 0 ? EMPTY : Buffer.concat(this.chunks));
    this.chunks = [];
    this.whole = undefined;
    let response: HttpResponse | Promise<HttpResponse>;
    try {
      response = this.t.app.handle(routed, body);
    } catch (e) {
      response = plain(500, (e as Error).message);
    }
    if (!(response instanceof Promise)) {
      this.releaseBody(response.bodyInUse);
      this.write(response);
      return;
    }
    this.busy = true;
    response.then(
      (r) => this.answer(r),
      (e: Error) => this.answer(plain(500, e.message)),
    );
  }

  /** Writes an answer that was produced asynchronously, then reads on. */
  private answer(r: HttpResponse): void {
    // The body counts against the request memory until its request is answered (or its command is done with it).
    this.releaseBody(r.bodyInUse);
    this.busy = false;
    if (this.closed) return;
    this.write(r);
    if (!this.busy && !this.endedAt) {
      this.resume();
      this.parse();
    }
  }

  private write(res: HttpResponse): void {
    if (this.closed) return;
    // The application asks for the connection to close with "Connection: close" (after a bad request).
    for (const [name, value] of res.headers) if (name === "Connection" && value === "close") this.x.keepAlive = false;
    if (isStream(res.body)) {
      void this.stream(res, res.body);
      return;
    }
    const ok = this.socket.write(encodeResponse(res, this.x, date()));
    this.lastActive = Date.now();
    if (!this.x.keepAlive) this.end();
    else if (!ok) this.socket.pause();
  }

  /** Sends a streamed body as it is produced: chunked, or raw until close for HTTP/1.0. */
  private async stream(res: HttpResponse, body: AsyncIterable<Buffer>): Promise<void> {
    this.busy = true;
    const chunked = !this.x.http10;
    if (!chunked) this.x.keepAlive = false;
    const bodiless = this.x.isHead || noBody(res.status);
    this.socket.write(encodeStreamHead(res, this.x, date()));
    const it = body[Symbol.asyncIterator]();
    // A client that goes away ends the stream at once, even while the producer is quiet.
    const abandon = (): void => void it.return?.();
    this.socket.once("close", abandon);
    try {
      if (!bodiless) {
        for (;;) {
          const next = await it.next();
          if (next.done || this.closed) break;
          const chunk = next.value;
          if (chunk.length === 0) continue;
          let ok: boolean;
          if (chunked) {
            this.socket.cork();
            this.socket.write(`${chunk.length.toString(16)}\r\n`);
            this.socket.write(chunk);
            ok = this.socket.write("\r\n");
            this.socket.uncork();
          } else ok = this.socket.write(chunk);
          this.lastActive = Date.now();
          if (!ok) await this.drained();
        }
        if (this.closed) await it.return?.();
        else if (chunked) this.socket.write("0\r\n\r\n");
      } else {
        await it.return?.();
      }
    } catch {
      // The producer failed mid-body: the client sees the answer cut short, never a false end.
      this.socket.destroy();
      return;
    } finally {
      this.socket.off("close", abandon);
    }
    this.busy = false;
    this.lastActive = Date.now();
    if (!this.x.keepAlive) this.end();
    else if (!this.closed) {
      this.resume();
      this.parse();
    }
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        resolve();
      };
      this.socket.on("drain", done);
      this.socket.on("close", done);
    });
  }
}
