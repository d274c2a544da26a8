// Small HTTP helpers shared by the API and the uploads: JSON answers, body reading, 100-continue.
import type { IncomingMessage, ServerResponse } from "node:http";

export interface ErrorBody {
  status: "error";
  message: string;
}

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

function waitsForContinue(req: IncomingMessage, res: ServerResponse): boolean {
  return /100-continue/i.test(req.headers.expect ?? "") && !continued.has(res);
}

/**
 * Answers with an error while the client may still be sending a body. A client that waits for "100 Continue"
 * gets the answer at once and sends nothing. Any other client gets it once its body has arrived (discarded):
 * most clients, fetch among them, stop reading the answer when the server stops reading the body.
 * The connection closes after the answer.
 */
export function sendErrorAndClose(req: IncomingMessage, res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
  if (!hasBody) {
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
  req.once("end", () => sendError(res, status, message, headers));
  req.resume();
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
