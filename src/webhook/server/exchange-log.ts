// The reference's log line for each answered request and, with -debug, its dump of the request
// and the response.
import { iBytes } from "../go/bytes.js";
import { goDuration } from "../go/duration.js";
import { canonicalHeaderKey } from "../go/header.js";
import type { HttpResponse, RequestHead } from "../http/contract.js";
import { STATUS_TEXT } from "../http/status.js";
import type { Log, LogFields } from "../log/log.js";
import { rawHeader } from "../request/request.js";

/** The reference's request log line for an answered request (and, with -debug, the request and response dump). */
export function logExchange(
  log: Log,
  debug: boolean,
  head: RequestHead,
  rid: string,
  start: bigint,
  res: HttpResponse,
  body?: Buffer,
  fields?: LogFields,
): void {
  if (!log.enabled) return;
  if (debug) log.raw(dump(rid, head, body, res), fields);
  const elapsed = goDuration(process.hrtime.bigint() - start);
  const host = rawHeader(head.rawHeaders, "host") ?? "";
  const size = typeof res.body === "string" || Buffer.isBuffer(res.body) ? Buffer.byteLength(res.body) : 0;
  log.print(`[${rid}] ${String(res.status).padStart(3, "0")} | ${iBytes(size)} | ${elapsed} | ${host} | ${head.method} ${head.url}`, fields);
}

/** The -debug dump of one exchange, in the reference's "> [id] …" / "< [id] …" format. */
function dump(rid: string, head: RequestHead, body: Buffer | undefined, res: HttpResponse): string {
  let out = `> [${rid}] ${head.method} ${head.url}`;
  const headers = new Map<string, string[]>();
  for (let i = 0; i < head.rawHeaders.length; i += 2) {
    const k = canonicalHeaderKey(head.rawHeaders[i]!);
    if (k === "Host") continue;
    headers.set(k, [...(headers.get(k) ?? []), head.rawHeaders[i + 1]!]);
  }
  for (const k of [...headers.keys()].sort()) out += `\n> [${rid}] ${k}: ${headers.get(k)!.join(", ")}`;
  if (body && body.length > 0) {
    out += "\n";
    for (const line of body.toString("utf8").split("\n")) out += `> [${rid}] ${line}\n`;
  }
  out += `\n< [${rid}] ${STATUS_TEXT[res.status] ?? ""}`;
  for (const [k, v] of [...res.headers].sort((a, b) => (a[0] < b[0] ? -1 : 1))) out += `\n< [${rid}] ${k}: ${v}`;
  if ((typeof res.body === "string" || Buffer.isBuffer(res.body)) && res.body.length > 0) {
    out += "\n";
    for (const line of res.body.toString().split("\n")) out += `< [${rid}] ${line}\n`;
  }
  return out + "\n";
}
