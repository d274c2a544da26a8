// Building a hook answer: headers under canonical names, and the Content-Type sniffed from the
// body when none is set, as Go's ResponseWriter does.
import { canonicalHeaderKey } from "../go/header.js";
import type { HttpResponse } from "../http/contract.js";
import { detectContentType } from "../http/sniff.js";

/** Response headers under canonical names, later values replacing earlier ones (Go's Header.Set). */
export class Headers {
  private readonly map = new Map<string, [string, string]>();
  set(name: string, value: string): void {
    const k = canonicalHeaderKey(name);
    this.map.set(k, [k, value]);
  }
  has(name: string): boolean {
    return this.map.has(name);
  }
  list(): [string, string][] {
    return [...this.map.values()];
  }
}

export function respond(status: number, headers: Headers, body: string | Buffer): HttpResponse {
  // Most answers are one of a few fixed messages: their sniffed type is cached.
  if (body.length > 0 && !headers.has("Content-Type")) {
    let type = typeof body === "string" ? sniffed.get(body) : undefined;
    if (type === undefined) {
      type = detectContentType(body);
      if (typeof body === "string" && body.length <= 128 && sniffed.size < 256) sniffed.set(body, type);
    }
    headers.set("Content-Type", type);
  }
  return { status, headers: headers.list(), body };
}

const sniffed = new Map<string, string>();
