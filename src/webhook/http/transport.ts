// The HTTP/1.1 transport in front of an HttpApp (contract.ts), on node:net. A connection handler: any
// net.Server or tls.Server (TCP, Unix socket, TLS) feeds it sockets. It parses requests itself
// (node:http costs ~1.5x the CPU per request), routes each one from its head alone, keeps the
// body only for a request the application accepts (up to -max-body), and writes each answer in one write, or
// chunked when the body is a stream. Nothing here knows about hooks or commands.
//
// Parsing is strict where requests could be smuggled past a proxy: Transfer-Encoding together
// with Content-Length, differing Content-Lengths, a Transfer-Encoding other than "chunked",
// bare CR, control bytes and non-token header names are all refused. Obsolete line folding is
// joined with one space, as Go does. The head may end its lines with a bare LF, as Go accepts;
// chunked framing needs CRLF.
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TlsOptions } from "node:tls";
import type { Accepted, HttpApp, HttpResponse, RequestHead, Routed } from "./contract.js";
import { clientKey, ConnectionCounts, type CapReached } from "../../shared/connection-counts.js";
import { STATUS_TEXT } from "./status.js";

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

// A refused body is read and dropped (so closing cannot reset the connection before the client
// has read the answer), but not without bound.
const MAX_DISCARD = 64 * 1024 * 1024;
// Pipelined requests waiting behind one that is being answered are buffered up to this much.
const MAX_BUFFERED = 1024 * 1024;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Bytes a header value may not hold: controls other than HTAB, and DEL (RFC 9110 5.5).
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
// A request target: visible bytes only.
const BAD_TARGET = /[\x00-\x20\x7f]/;
const CHUNK_SIZE = /^[0-9a-fA-F]{1,15}$/;
const DEFAULT_REQUEST_MEMORY = 64 * 1024 * 1024;
export const DEFAULT_MAX_CONNECTIONS = 2048;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
// A connection turned away at a cap has this long to read its 503 before it is destroyed; at most
// this many wait at once (more are closed at once: the cap is what keeps a flood cheap).
const TURNED_AWAY_MS = 2000;
const MAX_TURNED_AWAY = 1024;
// What such a connection sends is read (and dropped) up to this much: a request's head and a small body.
const TURNED_AWAY_READ = 64 * 1024;
const EMPTY = Buffer.alloc(0);

let dateLine = "";
let dateSecond = 0;
/** The Date header, formatted once a second. */
function date(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateLine = `Date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

/** Go's RemoteAddr: "ip:port", IPv6 in brackets, IPv4-mapped IPv6 shown as plain IPv4; "@" on a Unix socket. */
function remoteAddr(socket: Socket): string {
  let ip = socket.remoteAddress;
  if (ip === undefined) return "@";
  if (ip.startsWith("::ffff:") && ip.includes(".")) ip = ip.slice(7);
  const port = socket.remotePort ?? 0;
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The path and query of the request target, also for the absolute form "http://host/path". */
function target(url: string): string {
  if (url.startsWith("/")) return url;
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?]*(.*)$/.exec(url);
  return m ? m[1] || "/" : url;
}

/** Strips leading and trailing spaces and tabs only (String.trim would also eat a UTF-8 byte 0xA0). */
function trimSpaceTab(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

const withoutCR = (line: string): string => (line.endsWith("\r") ? line.slice(0, -1) : line);

/**
 * Obsolete line folding: a line starting with a space or tab continues the header line before
 * it, joined with one space. One pass, so a head of many folded lines costs linear time.
 */
function unfold(lines: string[]): string[] {
  const out: string[] = [];
  let pieces: string[] | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const c = line.charCodeAt(0);
    if (i >= 2 && (c === 0x20 || c === 0x09)) {
      pieces ??= [trimSpaceTab(withoutCR(out.pop()!))];
      pieces.push(" ", trimSpaceTab(withoutCR(line)));
      continue;
    }
    if (pieces) out.push(pieces.join(""));
    pieces = undefined;
    out.push(line);
  }
  if (pieces) out.push(pieces.join(""));
  return out;
}

function isStream(body: HttpResponse["body"]): body is AsyncIterable<Buffer> {
  return typeof body !== "string" && !Buffer.isBuffer(body);
}

// The transport alone frames the message: these headers from the application would desynchronise it.
const FRAMING = new Set(["content-length", "transfer-encoding", "connection"]);

function encodeHeaders(headers: [string, string][], noBody: boolean): string {
  let out = "";
  for (const [name, value] of headers) {
    if (!TOKEN.test(name) || (noBody && name === "Content-Type") || FRAMING.has(name.toLowerCase())) continue;
    out += `${name}: ${value.includes("\r") || value.includes("\n") ? value.replace(/[\r\n]/g, " ") : value}\r\n`;
  }
  return out;
}

/**
 * The status line and headers, in the request's HTTP version. Like Go, a header with an invalid
 * name is left out and CR/LF in a value become spaces; a 1xx answer the application asked for goes first,
 * with the headers set so far (Go's WriteHeader of a 1xx code), then the final answer.
 */
function encodeHead(res: HttpResponse, framing: string, noBody: boolean, version: string): string {
  let head = "";
  if (res.informational) {
    const { status, headers } = res.informational;
    const sorted = [...headers].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    head += `${version} ${status} ${STATUS_TEXT[status] ?? `status code ${status}`}\r\n${encodeHeaders(sorted, true)}\r\n`;
  }
  head += `${version} ${res.status} ${STATUS_TEXT[res.status] ?? `status code ${res.status}`}\r\n`;
  return head + encodeHeaders(res.headers, noBody) + date() + framing + "\r\n";
}

/** The answers to the request target "*": Go's server answers OPTIONS itself, the router redirects the rest. */
function starResponse(method: string): HttpResponse {
  return method === "OPTIONS" ? { status: 200, headers: [], body: "" } : { status: 301, headers: [["Location", "/%2A"]], body: "" };
}

/** The reasons Go's server names in its status line and body ("400 Bad Request: missing required Host header"). */
const GO_NAMED = new Set(["missing required Host header", "invalid header name", "invalid header value", "unsupported protocol version"]);
/** The reasons Go's server answers with a bare "400 Bad Request". */
const GO_BARE = new Set([
  "malformed HTTP request",
  "malformed HTTP version",
  "malformed MIME header line",
  "invalid Content-Length",
  "too many transfer encodings",
  "too many Host headers",
]);
const GO_ERROR_HEADERS = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n";

/**
 * The exact bytes Go's server writes for a request it cannot read, before any handler (no Date, no length: the
 * connection closes); undefined for refusals of our own (408, 413, our framing rules), which get plain().
 */
function goRefusal(status: number, detail: string): string | undefined {
  const line = `${status} ${STATUS_TEXT[status]}`;
  if (status === 431) return `HTTP/1.1 ${line}${GO_ERROR_HEADERS}${line}`;
  if (status === 501 && detail === "unsupported transfer encoding") return `HTTP/1.1 ${line}${GO_ERROR_HEADERS}Unsupported transfer encoding`;
  if (GO_NAMED.has(detail)) return `HTTP/1.1 ${line}: ${detail}${GO_ERROR_HEADERS}${line}: ${detail}`;
  if (status === 400 && GO_BARE.has(detail)) return `HTTP/1.1 ${line}${GO_ERROR_HEADERS}${line}`;
  return undefined;
}

/** A plain-text answer for a request the transport refuses itself. */
function plain(status: number, detail = ""): HttpResponse {
  return {
    status,
    headers: [["Content-Type", "text/plain; charset=utf-8"]],
    body: `${status} ${STATUS_TEXT[status] ?? ""}${detail ? `: ${detail}` : ""}`,
  };
}

const enum State {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailer,
}

/** Why a request head was refused. */
class Refused {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {}
}

class Connection {
  private buf: Buffer = EMPTY;
  /** Storage `buf` may end in, with room to grow: `used` bytes of it are filled. */
  private store: Buffer | undefined;
  private used = 0;
  /** Where the search for the end of the head resumes (the head arrives in pieces). */
  private scanned = 0;
  private headNext = 0;
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
  private keepAlive = true;
  private http10 = false;
  private isHead = false;
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
    private readonly t: HttpTransport,
  ) {
    this.remote = remoteAddr(socket);
    this.client = clientKey(socket.remoteAddress);
    socket.setNoDelay(true);
    socket.on("data", (d: Buffer) => this.onData(d));
    socket.on("drain", () => this.resume());
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

  get reading(): State {
    return this.state;
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

  private resume(): void {
    if (!this.closed && !this.busy && !this.deaf && this.socket.writableLength === 0) this.socket.resume();
  }

  /** Answers a bad request and ends the connection. */
  refuse(status: number, detail = ""): void {
    this.releaseBody();
    if (this.answered) {
      this.end(); // its answer (413, 503) is out already
      return;
    }
    this.keepAlive = false;
    const raw = goRefusal(status, detail);
    if (raw === undefined) return this.write(plain(status, detail));
    if (this.closed) return;
    this.socket.write(raw);
    this.end();
  }

  /** Ends the connection after its current answer (graceful shutdown); at once when idle. */
  shutdown(): void {
    this.keepAlive = false;
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
          if (this.receivingSince === 0) this.receivingSince = Date.now();
          const end = this.headEnd();
          if (end === -1) {
            if (this.buf.length > this.t.maxHeaderBytes) this.refuse(431, "request header too large");
            else {
              // What the head holds is the storage it grows in, not just the bytes received so far.
              const size = this.store?.length ?? this.buf.length;
              if (size > this.headHeld) {
                if (!this.t.reserve(size - this.headHeld, this.client)) return this.overBudget();
                this.headHeld = size;
              }
            }
            return;
          }
          this.releaseHead();
          if (end > this.t.maxHeaderBytes) return this.refuse(431, "request header too large");
          const text = this.buf.toString("latin1", 0, end);
          this.buf = this.buf.subarray(this.headNext);
          this.scanned = 0;
          const refused = this.begin(text);
          if (refused) return this.refuse(refused.status, refused.detail);
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
          if (lf === 0 || this.buf[lf - 1] !== 0x0d) return this.refuse(400, "malformed chunked encoding");
          const line = this.buf.toString("latin1", 0, lf - 1);
          this.buf = this.buf.subarray(lf + 1);
          if (this.state === State.ChunkEnd) {
            if (line !== "") return this.refuse(400, "malformed chunked encoding");
            this.state = State.ChunkSize;
          } else if (this.state === State.Trailer) {
            if (line === "") this.complete();
            else if (BAD_VALUE.test(line) || line.indexOf("\r") !== -1) return this.refuse(400, "malformed chunked encoding");
          } else {
            const semi = line.indexOf(";");
            const sizeText = (semi === -1 ? line : line.slice(0, semi)).trimEnd();
            if (!CHUNK_SIZE.test(sizeText) || line.includes("\r") || line.includes("\n")) return this.refuse(400, "malformed chunked encoding");
            const size = parseInt(sizeText, 16);
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

  /**
   * Where the head ends: the offset of the line break before the empty line ("\r\n\r\n", or
   * with bare LFs), or -1 while it is incomplete. `headNext` is set to the offset after it.
   */
  private headEnd(): number {
    const buf = this.buf;
    let i = buf.indexOf(0x0a, this.scanned);
    while (i !== -1) {
      const next = buf[i + 1];
      if (next === 0x0a || (next === 0x0d && buf[i + 2] === 0x0a)) {
        this.headNext = next === 0x0a ? i + 2 : i + 3;
        return buf[i - 1] === 0x0d ? i - 1 : i;
      }
      if (next === undefined || (next === 0x0d && i + 2 >= buf.length)) break;
      i = buf.indexOf(0x0a, i + 1);
    }
    this.scanned = Math.max(0, buf.length - 3);
    return -1;
  }

  /** Parses the head and routes the request; a Refused when it must be answered with an error. */
  private begin(text: string): Refused | undefined {
    const lines = unfold(text.split("\n"));
    let requestLine = lines[0]!;
    if (requestLine.endsWith("\r")) requestLine = requestLine.slice(0, -1);
    const sp1 = requestLine.indexOf(" ");
    const sp2 = requestLine.lastIndexOf(" ");
    if (sp1 <= 0 || sp2 === sp1) return new Refused(400, "malformed HTTP request");
    const method = requestLine.slice(0, sp1);
    const url = requestLine.slice(sp1 + 1, sp2);
    const version = requestLine.slice(sp2 + 1);
    if (!TOKEN.test(method) || url === "" || BAD_TARGET.test(url)) return new Refused(400, "malformed HTTP request");
    if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
      return /^HTTP\/\d\.\d$/.test(version) ? new Refused(505, "unsupported protocol version") : new Refused(400, "malformed HTTP version");
    }
    if (lines.length - 1 > this.t.maxHeaderCount) return new Refused(431, "too many header fields");
    this.http10 = version === "HTTP/1.0";
    const rawHeaders: string[] = [];
    let host = 0;
    let te: string | undefined;
    let cl: string | undefined;
    let connection = "";
    let expect = "";
    for (let i = 1; i < lines.length; i++) {
      let line = lines[i]!;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      const colon = line.indexOf(":");
      if (colon <= 0) return new Refused(400, "malformed MIME header line");
      const name = line.slice(0, colon);
      if (!TOKEN.test(name)) return new Refused(400, "invalid header name");
      const raw = line.slice(colon + 1);
      if (BAD_VALUE.test(raw)) return new Refused(400, "invalid header value");
      const value = trimSpaceTab(raw);
      rawHeaders.push(name, value);
      switch (name.length) {
        case 4:
          if (name.toLowerCase() === "host") host++;
          break;
        case 6:
          if (name.toLowerCase() === "expect") expect = value.toLowerCase();
          break;
        case 10:
          if (name.toLowerCase() === "connection") connection += "," + value.toLowerCase();
          break;
        case 14:
          if (name.toLowerCase() === "content-length") {
            if (!/^\d{1,15}$/.test(value) || (cl !== undefined && cl !== value)) return new Refused(400, "invalid Content-Length");
            cl = value;
          }
          break;
        case 17:
          if (name.toLowerCase() === "transfer-encoding") {
            if (te !== undefined) return new Refused(400, "too many transfer encodings");
            te = value.toLowerCase();
          }
          break;
      }
    }
    if (!this.http10 && host !== 1) return new Refused(400, host === 0 ? "missing required Host header" : "too many Host headers");
    // Both framings at once is how requests are smuggled past proxies (RFC 9112 6.3).
    if (te !== undefined && cl !== undefined) return new Refused(400, "Transfer-Encoding and Content-Length together");
    if (te !== undefined && te !== "chunked") return new Refused(501, "unsupported transfer encoding");

    const tokens = connection.split(",").map((s) => s.trim());
    this.keepAlive = this.t.accepting && (this.http10 ? tokens.includes("keep-alive") : !tokens.includes("close"));
    this.isHead = method === "HEAD";
    const head: RequestHead = { method, url: target(url), rawHeaders, remoteAddr: this.remote };
    this.routed = url === "*" ? { kind: "response", response: starResponse(method) } : this.t.app.route(head);
    this.chunks = [];
    this.whole = undefined;
    this.bodyLen = 0;
    this.answered = false;
    const length = cl === undefined ? 0 : Number(cl);
    if (te !== undefined) {
      this.state = State.ChunkSize;
      if (this.http10) this.keepAlive = false;
    } else if (length > 0) {
      this.state = State.Body;
      this.need = length;
      if (this.routed.kind === "accepted" && length > this.t.maxBody) {
        this.tooLarge();
        return undefined;
      }
      // The whole declared length is counted at once: a flood is refused before its bodies are read.
      if (this.routed.kind === "accepted") {
        if (!this.t.reserve(length, this.client)) {
          this.overBudget();
          return undefined;
        }
        this.held = length;
        this.whole = Buffer.allocUnsafe(length);
      }
    } else {
      this.complete();
      return undefined;
    }
    if (expect === "100-continue" && !this.http10) this.socket.write("HTTP/1.1 100 Continue\r\n\r\n");
    return undefined;
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
    this.keepAlive = false;
    this.releaseBody();
    const response = this.t.app.tooLarge(this.routed as Accepted, this.t.maxBody);
    this.socket.write(this.encode(response));
  }

  /**
   * The request memory is used up by other unfinished requests: answer 503 and close now. Unlike
   * a 413, the rest of the request is not read (reading it is what the flood wants): the connection
   * stops reading and is destroyed a few seconds later, time for the client to read the answer.
   */
  private overBudget(): void {
    this.answered = true;
    this.keepAlive = false;
    this.releaseBody();
    const res = plain(503, "too many unfinished requests at once; try again later");
    res.headers.push(["Retry-After", "1"]);
    this.socket.write(this.encode(res));
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

  private get version(): string {
    return this.http10 ? "HTTP/1.0" : "HTTP/1.1";
  }

  /** Go names the connection's fate only where the version's default does not say it. */
  private connectionHeader(): string {
    if (this.http10) return this.keepAlive ? "Connection: keep-alive\r\n" : "";
    return this.keepAlive ? "" : "Connection: close\r\n";
  }

  private noBody(status: number): boolean {
    return status < 200 || status === 204 || status === 304;
  }

  /** One buffer holding the head and (unless HEAD) the body. */
  private encode(res: HttpResponse): Buffer {
    const body = res.body as string | Buffer;
    const noBody = this.noBody(res.status);
    const size = noBody ? 0 : typeof body === "string" ? Buffer.byteLength(body) : body.length;
    // Go cannot know the length of a HEAD answer the handler wrote nothing for, so it sends none.
    const length = noBody || (this.isHead && size === 0) ? "" : `Content-Length: ${size}\r\n`;
    const head = encodeHead(res, length + this.connectionHeader(), noBody, this.version);
    if (this.isHead || noBody || size === 0) return Buffer.from(head, "utf8");
    const headLen = Buffer.byteLength(head);
    const out = Buffer.allocUnsafe(headLen + size);
    out.write(head, 0, "utf8");
    if (typeof body === "string") out.write(body, headLen, "utf8");
    else body.copy(out, headLen);
    return out;
  }

  private write(res: HttpResponse): void {
    if (this.closed) return;
    // The application asks for the connection to close with "Connection: close" (after a bad request).
    for (const [name, value] of res.headers) if (name === "Connection" && value === "close") this.keepAlive = false;
    if (isStream(res.body)) {
      void this.stream(res, res.body);
      return;
    }
    const ok = this.socket.write(this.encode(res));
    this.lastActive = Date.now();
    if (!this.keepAlive) this.end();
    else if (!ok) this.socket.pause();
  }

  /** Sends a streamed body as it is produced: chunked, or raw until close for HTTP/1.0. */
  private async stream(res: HttpResponse, body: AsyncIterable<Buffer>): Promise<void> {
    this.busy = true;
    const chunked = !this.http10;
    if (!chunked) this.keepAlive = false;
    const noBody = this.isHead || this.noBody(res.status);
    const framing = (chunked && !noBody ? "Transfer-Encoding: chunked\r\n" : "") + this.connectionHeader();
    this.socket.write(encodeHead(res, framing, this.noBody(res.status), this.version));
    const it = body[Symbol.asyncIterator]();
    // A client that goes away ends the stream at once, even while the producer is quiet.
    const abandon = (): void => void it.return?.();
    this.socket.once("close", abandon);
    try {
      if (!noBody) {
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
    if (!this.keepAlive) this.end();
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

/** The HTTP/1.1 transport: feed it connections, close it gracefully. */
export class HttpTransport {
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
    socket.end(encodeHead(res, `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n`, false, "HTTP/1.1") + body);
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
      } else if (c.receivingSince && now - c.receivingSince > (c.reading === State.Head ? this.headersTimeoutMs : this.requestTimeoutMs)) {
        c.refuse(408);
      } else if (c.receivingSince && c.reading !== State.Head && now - c.lastActive > this.bodyTimeoutMs) {
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
