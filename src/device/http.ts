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

/**
 * Answers with an error while the client may still be sending a body: the connection closes after the answer,
 * and what arrives meanwhile is discarded.
 */
export function sendErrorAndClose(req: IncomingMessage, res: ServerResponse, status: number, message: string): void {
  sendError(res, status, message, { Connection: "close" });
  req.resume();
}

/** Tells a client that waits for "100 Continue" to send its body. */
export function acceptBody(req: IncomingMessage, res: ServerResponse): void {
  if (/100-continue/i.test(req.headers.expect ?? "") && !res.headersSent) res.writeContinue();
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
