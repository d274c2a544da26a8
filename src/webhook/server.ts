// The HTTP transport: node:http in front of HookServer. It turns a Node request into a
// RequestHead, reads the body only for a matched hook (up to -max-body) and writes the
// HookResponse. Nothing here knows about hooks, so another transport can replace it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { HookResponse, HookServer, RequestHead } from "./handler.js";

export interface ListenOptions {
  ip: string;
  port: number;
  maxBody: number;
}

/** Go's RemoteAddr: "ip:port", IPv6 in brackets, IPv4-mapped IPv6 shown as plain IPv4. */
function remoteAddr(req: IncomingMessage): string {
  let ip = req.socket.remoteAddress ?? "";
  if (ip.startsWith("::ffff:") && ip.includes(".")) ip = ip.slice(7);
  const port = req.socket.remotePort ?? 0;
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The path and query of the request target, also for the absolute form "http://host/path". */
function target(url: string): string {
  if (url.startsWith("/")) return url;
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?]*(.*)$/.exec(url);
  return m ? m[1] || "/" : url;
}

/** Go's net/http writes a header value's CR and LF as spaces rather than failing. */
function headerValue(v: string): string {
  return /[\r\n]/.test(v) ? v.replace(/[\r\n]/g, " ") : v;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function send(res: ServerResponse, r: HookResponse): void {
  try {
    const noBody = r.status === 204 || r.status === 304 || r.status < 200;
    const body = noBody ? Buffer.alloc(0) : typeof r.body === "string" ? Buffer.from(r.body, "utf8") : r.body;
    // Like Go's net/http, a header whose name is not a valid token is left out.
    const headers = r.headers.filter(([k]) => TOKEN.test(k) && !(noBody && k === "Content-Type")).map(([k, v]) => [k, headerValue(v)]);
    if (!noBody) headers.push(["Content-Length", String(body.length)]);
    res.writeHead(r.status, headers.flat());
    res.end(body);
  } catch (e) {
    // A header the hooks file or -header made unsendable: answer plainly rather than crash.
    if (!res.headersSent) {
      res.removeHeader("Content-Length");
      res.writeHead(500, "Internal Server Error", { "Content-Type": "text/plain; charset=utf-8" });
      res.end(`Internal Server Error: ${(e as Error).message}`);
    } else res.destroy();
  }
}

type BodyResult = { kind: "body"; body: Buffer } | { kind: "too-large" } | { kind: "aborted" };

function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) return Promise.resolve({ kind: "too-large" });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > limit) {
        done = true;
        req.pause();
        resolve({ kind: "too-large" });
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (done) return;
      done = true;
      resolve({ kind: "body", body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
    });
    const abort = (): void => {
      if (done) return;
      done = true;
      resolve({ kind: "aborted" });
    };
    req.on("error", abort);
    req.on("close", abort);
  });
}

/**
 * Reads and drops the rest of a refused body; resolves true once it has all been read, false
 * when the bounds (64 MiB, 30 s) cut it short or the client went away. The 413 is sent only
 * after this: a socket closed while the client is still sending gets reset, and the client
 * then loses the answer it had not read yet.
 */
function drain(req: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    let dropped = 0;
    let settled = false;
    const settle = (complete: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.pause();
      resolve(complete);
    };
    const timer = setTimeout(() => settle(false), 30_000);
    if (req.complete) {
      settle(true);
      return;
    }
    req.on("data", (c: Buffer) => {
      dropped += c.length;
      if (dropped > 64 * 1024 * 1024) settle(false);
    });
    req.once("end", () => settle(true));
    req.once("close", () => settle(req.complete));
    req.resume();
  });
}

export function createHookHttpServer(app: HookServer, opts: ListenOptions): Server {
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const head: RequestHead = {
      method: req.method ?? "GET",
      url: target(req.url ?? "/"),
      rawHeaders: req.rawHeaders,
      remoteAddr: remoteAddr(req),
    };
    const routed = app.route(head);
    if (routed.kind === "response") {
      send(res, routed.response);
      return;
    }
    const respondWith = async (b: BodyResult): Promise<void> => {
      if (b.kind === "aborted") return;
      if (b.kind === "too-large") {
        const complete = await drain(req);
        if (res.destroyed) return;
        send(res, app.tooLarge(routed, opts.maxBody));
        if (!complete) res.once("finish", () => req.socket.destroy());
        return;
      }
      let response: HookResponse;
      try {
        response = await app.handle(routed, b.body);
      } catch (e) {
        response = { status: 500, headers: [["Content-Type", "text/plain; charset=utf-8"]], body: `Internal Server Error: ${(e as Error).message}` };
      }
      if (!res.destroyed) send(res, response);
    };
    void readBody(req, opts.maxBody).then(async (b) => {
      try {
        await respondWith(b);
      } catch {
        res.destroy();
      }
    });
  });
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    if (socket.writable && err.code !== "ECONNRESET") {
      const status = err.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
      socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${status}`);
    } else socket.destroy();
  });
  return server;
}

/** Listens as Go does for the address: 0.0.0.0 also accepts IPv6 when the host has it. */
export function listen(server: Server, ip: string, port: number): Promise<void> {
  const attempt = (host: string, ipv6Only?: boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(e);
      server.once("error", onError);
      server.listen({ host, port, ...(ipv6Only === undefined ? {} : { ipv6Only }) }, () => {
        server.off("error", onError);
        resolve();
      });
    });
  if (ip === "0.0.0.0" || ip === "") {
    return attempt("::", false).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "EADDRINUSE" || e.code === "EACCES") throw e;
      return attempt("0.0.0.0");
    });
  }
  return attempt(ip);
}
