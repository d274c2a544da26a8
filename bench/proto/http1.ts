// A minimal HTTP/1.1 server on node:net: keep-alive, pipelining (answered in order),
// Content-Length and chunked request bodies, Expect: 100-continue, size limits.
// It hands each complete request to `onRequest` and writes its answer in one write.
import { createServer, type Server, type Socket } from "node:net";
import type { HookResponse, RawRequest } from "./logic.js";

export interface Http1Options {
  maxHeaderBytes: number;
  maxBodyBytes: number;
  /** A connection with no traffic for this long is closed (slowloris, idle keep-alive). */
  idleTimeoutMs: number;
  onRequest: (req: RawRequest) => HookResponse | Promise<HookResponse>;
}

const reasons: Record<number, string> = {
  100: "Continue", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request",
  404: "Not Found", 405: "Method Not Allowed", 413: "Request Entity Too Large", 431: "Request Header Fields Too Large",
  500: "Internal Server Error", 501: "Not Implemented", 504: "Gateway Timeout",
};

let dateLine = "";
let dateSecond = 0;
function date(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateLine = `Date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

function encode(res: HookResponse, keepAlive: boolean, omitBody = false): Buffer {
  const full = typeof res.body === "string" ? Buffer.from(res.body, "utf8") : res.body;
  const body = omitBody ? full.subarray(0, 0) : full;
  let head = `HTTP/1.1 ${res.status} ${reasons[res.status] ?? "Status"}\r\n`;
  for (const name in res.headers) head += `${name}: ${res.headers[name]}\r\n`;
  head += `${date()}Content-Length: ${full.length}\r\n${keepAlive ? "" : "Connection: close\r\n"}\r\n`;
  const out = Buffer.allocUnsafe(Buffer.byteLength(head, "latin1") + body.length);
  const n = out.write(head, 0, "latin1");
  body.copy(out, n);
  return out;
}

const plain = (status: number, body: string): HookResponse => ({
  status,
  headers: { "Content-Type": "text/plain; charset=utf-8" },
  body,
});

// Control bytes other than HTAB, and CR or LF outside a CRLF pair.
const ctlRe = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|(?<!\r)\n/;
const tokenRe = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const enum State { Head, Body, ChunkSize, ChunkData, ChunkTrailer }

class Connection {
  private buf: Buffer = Buffer.alloc(0);
  private state = State.Head;
  private req: RawRequest | null = null;
  private keepAlive = true;
  private need = 0; // bytes left of the body or chunk
  private body: Buffer[] = [];
  private bodyLen = 0;
  private busy = false; // a request is being answered; later bytes wait in buf
  private closed = false;
  private isHead = false;

  constructor(private readonly socket: Socket, private readonly opts: Http1Options) {
    socket.setNoDelay(true);
    socket.setTimeout(opts.idleTimeoutMs, () => socket.destroy());
    // A client that pipelines requests but does not read the answers stops being read.
    socket.on("drain", () => {
      if (!this.closed) socket.resume();
    });
    socket.on("data", (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      // Requests pipelined behind one that is still being answered wait here, up to a bound.
      if (this.busy && this.buf.length > 1 << 20) socket.pause();
      this.parse();
    });
    socket.on("error", () => {});
    socket.on("close", () => (this.closed = true));
  }

  private fail(status: number, msg: string): void {
    this.keepAlive = false;
    this.socket.end(encode(plain(status, msg), false));
    this.closed = true;
  }

  private parse(): void {
    while (!this.busy && !this.closed) {
      if (this.state === State.Head) {
        const end = this.buf.indexOf("\r\n\r\n");
        if (end < 0) {
          if (this.buf.length > this.opts.maxHeaderBytes) this.fail(431, "Request header too large");
          return;
        }
        if (end > this.opts.maxHeaderBytes) return this.fail(431, "Request header too large");
        if (!this.head(this.buf.toString("latin1", 0, end))) return;
        this.buf = this.buf.subarray(end + 4);
        continue;
      }
      if (this.state === State.Body || this.state === State.ChunkData) {
        if (this.buf.length === 0) return;
        const take = Math.min(this.need, this.buf.length);
        this.body.push(this.buf.subarray(0, take));
        this.bodyLen += take;
        this.buf = this.buf.subarray(take);
        this.need -= take;
        if (this.need > 0) return;
        if (this.state === State.Body) this.dispatch();
        else this.state = State.ChunkTrailer; // the CRLF after chunk data
        continue;
      }
      const eol = this.buf.indexOf("\r\n");
      if (eol < 0) {
        if (this.buf.length > 1024) this.fail(400, "Malformed chunked encoding");
        return;
      }
      const line = this.buf.toString("latin1", 0, eol);
      this.buf = this.buf.subarray(eol + 2);
      if (this.state === State.ChunkTrailer) {
        if (line !== "") return this.fail(400, "Malformed chunked encoding");
        this.state = State.ChunkSize;
        continue;
      }
      if (this.need === -1) {
        // trailer section after the last chunk: ends with an empty line
        if (line === "") this.dispatch();
        continue;
      }
      const size = parseInt(line, 16); // ignores chunk extensions after ';'
      if (!/^[0-9a-fA-F]+/.test(line) || !Number.isFinite(size)) return this.fail(400, "Malformed chunked encoding");
      if (this.bodyLen + size > this.opts.maxBodyBytes) return this.fail(413, "Request body too large");
      if (size === 0) this.need = -1;
      else {
        this.need = size;
        this.state = State.ChunkData;
      }
    }
  }

  /** Parses the request line and headers; false when the connection was failed. */
  private head(text: string): boolean {
    const lines = text.split("\r\n");
    const m = /^([A-Za-z]+) (\S+) HTTP\/1\.([01])$/.exec(lines[0]);
    if (!m) {
      this.fail(400, "Malformed request line");
      return false;
    }
    if (lines.length > 101) {
      this.fail(431, "Too many header fields");
      return false;
    }
    // Control characters other than HTAB are not allowed anywhere in the head (RFC 9110 5.5).
    if (ctlRe.test(text)) {
      this.fail(400, "Invalid characters in the request head");
      return false;
    }
    const headers: Record<string, string> = {};
    for (let i = 1; i < lines.length; i++) {
      const l = lines[i];
      const c = l.indexOf(":");
      if (c <= 0 || !tokenRe.test(l.slice(0, c))) {
        this.fail(400, "Malformed header line");
        return false;
      }
      const name = l.slice(0, c).toLowerCase();
      const value = l.slice(c + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    const conn = (headers["connection"] ?? "").toLowerCase();
    this.keepAlive = m[3] === "1" ? conn !== "close" : conn === "keep-alive";
    this.isHead = m[1] === "HEAD";
    this.req = {
      method: m[1],
      target: m[2],
      headers,
      body: Buffer.alloc(0),
      remoteAddr: `${this.socket.remoteAddress}:${this.socket.remotePort}`,
    };
    this.body = [];
    this.bodyLen = 0;
    const te = headers["transfer-encoding"];
    const cl = headers["content-length"];
    if (te !== undefined && cl !== undefined) {
      // Both framings at once is how requests are smuggled past proxies (RFC 9112 6.3).
      this.fail(400, "Both Transfer-Encoding and Content-Length");
      return false;
    }
    if (te !== undefined) {
      if (te.toLowerCase() !== "chunked") {
        this.fail(501, "Unsupported transfer encoding");
        return false;
      }
      this.state = State.ChunkSize;
      this.need = 0;
    } else if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl)) {
        // also refuses repeated Content-Length headers, joined as "n, n"
        this.fail(400, "Bad Content-Length");
        return false;
      }
      const n = Number(cl);
      if (n > this.opts.maxBodyBytes) {
        this.fail(413, "Request body too large");
        return false;
      }
      this.need = n;
      this.state = State.Body;
      if (n === 0) {
        this.dispatch();
        return true;
      }
    } else {
      this.dispatch();
      return true;
    }
    if ((headers["expect"] ?? "").toLowerCase() === "100-continue") this.socket.write("HTTP/1.1 100 Continue\r\n\r\n");
    return true;
  }

  private dispatch(): void {
    const req = this.req!;
    req.body = this.body.length === 1 ? this.body[0] : Buffer.concat(this.body);
    this.req = null;
    this.state = State.Head;
    this.need = 0;
    const res = this.opts.onRequest(req);
    if (!(res instanceof Promise)) return this.reply(res);
    this.busy = true;
    res.then(
      (r) => this.reply(r),
      () => this.reply(plain(500, "Internal Server Error")),
    ).finally(() => {
      this.busy = false;
      if (!this.closed && this.socket.writableLength === 0) this.socket.resume();
      this.parse();
    });
  }

  private reply(res: HookResponse): void {
    if (this.closed) return;
    const out = encode(res, this.keepAlive, this.isHead);
    if (this.keepAlive) {
      if (!this.socket.write(out)) this.socket.pause();
    }
    else {
      this.socket.end(out);
      this.closed = true;
    }
  }
}

export function createHttp1Server(opts: Http1Options): Server {
  return createServer({ noDelay: true }, (socket) => new Connection(socket, opts));
}
