// The API client's HTTP on node:http(s). Node's fetch (undici) costs some 30 ms of CPU to load on the first
// request, most of a short `framefi status`; node:http costs a few. node:https loads only for https addresses.
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";

export interface HttpAnswer {
  status: number;
  statusText: string;
  /** A header's value (the first, for a repeated one); null when absent. */
  header(name: string): string | null;
  text: string;
}

/** No answer: `reason` is a short cause ("ECONNREFUSED", "no answer within 10000 ms"). */
export class HttpNoAnswer extends Error {
  override name = "HttpNoAnswer";
  constructor(readonly reason: string, options?: ErrorOptions) {
    super(reason, options);
  }
}

export interface HttpRequest {
  method: string;
  headers: OutgoingHttpHeaders;
  body?: string | AsyncIterable<Uint8Array> | undefined;
  /** For the whole exchange, the answer's body included; undefined: none. */
  timeoutMs?: number | undefined;
}

/** Sends one request and reads the whole answer as UTF-8 text. */
export async function send(url: string, req: HttpRequest): Promise<HttpAnswer> {
  const target = new URL(url);
  const request = target.protocol === "https:" ? (await import("node:https")).request : httpRequest;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const headers = { ...req.headers };
    if (typeof req.body === "string") headers["Content-Length"] = Buffer.byteLength(req.body);
    // One connection per request: a kept-alive one the server closes just as it is reused fails the request.
    const out = request(target, { method: req.method, headers, agent: false });
    let settled = false;
    const fail = (reason: string, cause?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      out.destroy();
      reject(new HttpNoAnswer(reason, { cause }));
    };
    const timer = req.timeoutMs ? setTimeout(() => fail(`no answer within ${req.timeoutMs} ms`), req.timeoutMs) : undefined;
    out.on("error", (e: NodeJS.ErrnoException) => fail(e.code ?? e.message, e));
    out.on("response", (res: IncomingMessage) => {
      res.setEncoding("utf8");
      let text = "";
      res.on("data", (piece: string) => (text += piece));
      res.on("error", (e: NodeJS.ErrnoException) => fail(e.code ?? e.message, e));
      res.on("end", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          header: (name) => {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? (v[0] ?? null) : v;
          },
          text,
        });
      });
    });
    if (req.body === undefined || typeof req.body === "string") out.end(req.body);
    else void stream(req.body, out, fail);
  });
}

/** Writes a streamed body with backpressure. */
async function stream(body: AsyncIterable<Uint8Array>, out: ReturnType<typeof httpRequest>, fail: (reason: string, cause?: unknown) => void): Promise<void> {
  try {
    for await (const piece of body) {
      if (out.destroyed) return;
      if (!out.write(piece)) {
        await new Promise<void>((resolve) => {
          const go = (): void => {
            out.off("drain", go);
            out.off("close", go);
            resolve();
          };
          out.on("drain", go);
          out.on("close", go);
        });
      }
    }
    out.end();
  } catch (e) {
    fail((e as NodeJS.ErrnoException).code ?? (e as Error).message, e);
  }
}
