// Small HTTP helpers shared by the API and the uploads: JSON answers, body reading, 100-continue, slow bodies.
import { readFileSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { ErrorBody } from "../../shared/firmware.js";
import { ConnectionCounts, type ConnectionCaps } from "../../shared/connection-counts.js";

/**
 * The request's target as a URL, or undefined when it is not one (`//`, `/\\`, a bad percent escape): every
 * server of the device answers that with 400 instead of letting `new URL` throw in its request handler.
 * Origin form ("/path?query") is the norm; absolute form ("http://host/path") is allowed by HTTP/1.1.
 */
export function requestUrl(req: IncomingMessage): URL | undefined {
  const target = req.url ?? "/";
  try {
    const url = target.startsWith("/") ? new URL(`http://device${target}`) : new URL(target);
    decodeURIComponent(url.pathname);
    return url;
  } catch {
    return undefined;
  }
}

export const MALFORMED_URL = "Malformed request URL.";

export function sendJson(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const body: ErrorBody = { status: "error", message };
  sendJson(res, status, body, headers);
}

const continued = new WeakSet<ServerResponse>();

/** Bytes of an unwanted body read (and dropped) after an early answer before the connection is cut. */
const DRAIN_BYTES = 1 << 20;
/** How long an unwanted body is read after an early answer before the connection is cut. */
const DRAIN_MS = 2_000;

function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}

/**
 * Answers with an error while the client may still be sending a body, and closes the connection after. A client
 * that waits for "100 Continue" gets the answer at once and sends nothing. Any other client gets it once its body
 * has arrived (read and dropped; a body that trickles is cut by watchBodyProgress): most clients, fetch among
 * them, fail with EPIPE rather than read an answer when the connection closes while they send.
 */
export function sendErrorAndClose(req: IncomingMessage, res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (!hasBody(req)) {
    sendError(res, status, message, headers);
    req.resume();
    return;
  }
  headers = { ...headers, Connection: "close" };
  if (req.complete || waitsForContinue(req, res)) {
    sendError(res, status, message, headers);
    req.resume();
    return;
  }
  if (req.destroyed) {
    req.socket.destroy();
    return;
  }
  req.once("end", () => sendError(res, status, message, headers));
  req.once("close", () => {
    if (!req.complete) req.socket.destroy();
  });
  req.resume();
}

/**
 * Answers a request that is refused before anything is read (wrong credentials, a foreign Host, a cross-site
 * request) at once, whatever body is on its way. Up to 1 MiB of that body is read and dropped; beyond, it is no
 * longer read, and after 2 s the connection is cut. Until then a client which sends it anyway can read the answer:
 * a connection closed while the client's bytes are unread sends it a reset, which often reaches it before the
 * answer does (curl then reports "Send failure: Broken pipe" and never shows the answer), while a client that
 * cannot send any more waits, and reads.
 */
export function sendErrorEarly(req: IncomingMessage, res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  sendError(res, status, message, headers);
  if (!hasBody(req) || req.complete) {
    req.resume();
    return;
  }
  // Node closes a "Connection: close" answer's socket as soon as the answer is out (destroySoon: end, then destroy
  // on "finish"). While the body still comes only the end is kept; the body's end or the timer closes it. Never
  // later: a connection that ended its side is not read from again nor timed by Node, and would be held for good.
  const socket = req.socket;
  res.once("finish", () => {
    if (!req.complete) socket.removeListener("finish", socket.destroy);
  });
  let dropped = 0;
  const timer = setTimeout(() => req.destroy(), DRAIN_MS);
  timer.unref();
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_BYTES) req.pause();
  });
  req.once("end", () => {
    clearTimeout(timer);
    if (socket.writableEnded) socket.destroySoon();
  });
  req.once("close", () => clearTimeout(timer));
  req.resume();
}

export interface BodyWatch {
  /** Milliseconds a body may go without bringing `minBytes`. */
  windowMs: number;
  minBytes: number;
  /** Told once when a body is cut for being too slow. */
  onSlow: (req: IncomingMessage) => void;
}

/**
 * Cuts a request whose body trickles in (fewer than `minBytes` per `windowMs`): answers 408 if nothing was
 * answered yet, then closes. Time spent waiting on us (the body buffered, unread) does not count.
 */
export function watchBodyProgress(req: IncomingMessage, res: ServerResponse, watch: BodyWatch): void {
  if (!hasBody(req)) return;
  let seen = req.socket.bytesRead;
  const timer = setInterval(() => {
    if (req.complete || req.destroyed) return stop();
    const now = req.socket.bytesRead;
    const ours = req.readableLength > 0 && !req.readableFlowing;
    if (now - seen < watch.minBytes && !ours && !waitsForContinue(req, res)) {
      stop();
      watch.onSlow(req);
      // Destroying the request (not only its socket) tells whoever reads the body, answered or not.
      if (res.headersSent) req.destroy();
      else {
        sendError(res, 408, `The request body arrived too slowly (under ${watch.minBytes} bytes in ${watch.windowMs / 1000} s); the connection is closed.`, {
          Connection: "close",
        });
        res.once("finish", () => req.destroy());
      }
      return;
    }
    seen = now;
  }, watch.windowMs);
  timer.unref();
  const stop = (): void => clearInterval(timer);
  req.once("end", stop);
  req.once("close", stop);
}

function waitsForContinue(req: IncomingMessage, res: ServerResponse): boolean {
  return /100-continue/i.test(req.headers.expect ?? "") && !continued.has(res);
}

/** Tells a client that waits for "100 Continue" to send its body. */
export function acceptBody(req: IncomingMessage, res: ServerResponse): void {
  if (/100-continue/i.test(req.headers.expect ?? "") && !res.headersSent && !continued.has(res)) {
    continued.add(res);
    res.writeContinue();
  }
}

/** Reads a small body; resolves undefined when it is longer than `limit` bytes. */
export function readSmallBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer | undefined> {
  acceptBody(req, res);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLong = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLong = true;
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(tooLong ? undefined : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/**
 * Reads a short body; resolves undefined as soon as it passes `limit` bytes, the rest left unread (the caller
 * answers with sendErrorEarly, which bounds what is read after).
 */
export function readShortBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer | undefined> {
  if (Number(req.headers["content-length"] ?? 0) > limit) return Promise.resolve(undefined);
  acceptBody(req, res);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off("data", onData);
      req.off("end", onEnd);
      req.pause();
      resolve(undefined);
    };
    const onEnd = (): void => resolve(Buffer.concat(chunks));
    req.on("data", onData);
    req.on("end", onEnd);
    req.once("error", reject);
  });
}

/** The process's limit of open files (Linux), or a conservative guess elsewhere. */
function openFileLimit(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    if (m) return Number(m[1]);
  } catch {
    // not Linux
  }
  return 1024;
}

/**
 * Limits that leave two thirds of the process's file descriptors to the card, the settings and FTP: at most
 * 2 048 connections, half of them from one address (so one client cannot lock out the others).
 */
export function defaultConnectionLimits(): ConnectionCaps {
  const total = Math.max(16, Math.min(2048, Math.floor((openFileLimit() - 64) / 3)));
  return { total, perAddress: Math.max(8, Math.floor(total / 2)) };
}

/**
 * Runs `go` once `res` may be answered: at once, or, for a request pipelined behind others, when their answers are
 * out. Node parses and hands over pipelined requests even behind an answer that closes the connection (and after
 * one, while its body is still read: sendErrorEarly); their answers could never be sent, so such a request is
 * dropped without being carried out.
 */
export function whenItsTurn(req: IncomingMessage, res: ServerResponse, go: () => void): void {
  const socket = req.socket;
  const ready = (): void => {
    if (socket.writableEnded || socket.destroyed) socket.destroy();
    else go();
  };
  if (res.socket) return ready();
  const start = (): void => {
    socket.off("close", drop);
    ready();
  };
  const drop = (): void => void res.off("socket", start);
  res.once("socket", start);
  socket.once("close", drop);
}

/**
 * Answers connections beyond the limits with 503 and closes them before they cost more than a descriptor.
 * Returns whether a request arrived on such a connection (the caller ignores it: its answer is already sent).
 */
export function limitConnections(server: Server, limits: ConnectionCaps): (req: IncomingMessage) => boolean {
  const counts = new ConnectionCounts(limits);
  const refused = new WeakSet<Socket>();
  server.prependListener("connection", (socket: Socket) => {
    if (counts.admit(socket)) {
      const body = JSON.stringify({ status: "error", message: "Too many open connections: try again in a moment." });
      refused.add(socket);
      socket.end(
        `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`,
      );
      socket.destroySoon();
    }
  });
  return (req) => refused.has(req.socket);
}
