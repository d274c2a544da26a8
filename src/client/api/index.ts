// The typed client of the FrameFi web API (our device service and the real firmware alike). Built on node:http
// and node:https rather than fetch: loading fetch (undici) costs the `framefi` command ~0.1 s of CPU at start.
// Every endpoint has a method with typed request and response; failures are typed errors:
// DeviceUnreachableError (no answer), AuthenticationError (401), ForbiddenError (403), DeviceHttpError (any other
// error status, carrying the status and the device's message) and ProtocolError (an answer that is not the JSON
// the API promises), each with its code and message from ../errors.ts.
import { createReadStream, readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import http, { type IncomingHttpHeaders } from "node:http";
import https from "node:https";
import { basename } from "node:path";
import { pipeline, Readable } from "node:stream";
import { createSecureContext, type SecureContext } from "node:tls";
import { blankControls, firstLine, hidePassword } from "./text.js";
import { FrameFiError } from "../errors.js";
import type {
  ActionResult,
  Brightness,
  CollectionsStatus,
  CollectionUsed,
  DeviceStatus,
  DisplayStatus,
  LedStatus,
  Mode,
  ModeStatus,
  MqttStatus,
} from "../../shared/firmware.js";

export {
  MODE_FTP,
  MODE_MSC,
  MQTT_STATES,
  type ActionResult,
  type Brightness,
  type CollectionsStatus,
  type CollectionUsed,
  type DeviceStatus,
  type DisplayStatus,
  type LedStatus,
  type Mode,
  type ModeName,
  type ModeStatus,
  type MqttStatus,
  type OnOff,
} from "../../shared/firmware.js";
export { framePhotos, sync, type PhotoChoices, type SyncFolderOptions } from "./sync.js";
export type { PhotoReport, SyncEvents, SyncResult } from "../sync/sync.js";
export type { Plan, Upload } from "../sync/plan.js";
export type { PhotoOptions } from "../photos/profile.js";
export { FtpLoginError, FtpUnreachableError, SyncStopped } from "../sync/errors.js";
export { switchMode } from "../sync/modes.js";
export { ERRORS, FrameFiError, type ErrorCode } from "../errors.js";
export type Toggle = "on" | "off" | "toggle";
export type MqttAction = "enable" | "disable" | "toggle";

/** No answer: the address is wrong, the device is off or restarting, or the request timed out. */
export class DeviceUnreachableError extends FrameFiError {
  override name = "DeviceUnreachableError";
  constructor(
    readonly url: string,
    reason: string,
    options?: ErrorOptions,
    /** The answer came over https with a certificate that does not check out: no trusted CA signed it, or another. */
    certificate?: "untrusted" | "invalid",
  ) {
    const code = certificate === "untrusted" ? "FRAMEFI_CERT_UNTRUSTED" : certificate === "invalid" ? "FRAMEFI_CERT_INVALID" : "FRAMEFI_DEVICE_UNREACHABLE";
    super(code, { url, reason }, options);
  }
}

/** The device answered with an error status; `deviceMessage` is the message of its JSON body. */
export class DeviceHttpError extends FrameFiError {
  override name = "DeviceHttpError";
  constructor(
    readonly status: number,
    readonly deviceMessage: string,
    readonly body: string,
    readonly request: string,
  ) {
    const parts = { request, status, deviceMessage, reason: deviceMessage.replace(/[.!?\s]+$/, "") };
    super(
      status === 401
        ? "FRAMEFI_LOGIN_REFUSED"
        : status === 403
          ? "FRAMEFI_FORBIDDEN"
          : /MSC mode/i.test(deviceMessage)
            ? "FRAMEFI_DEVICE_IN_MSC_MODE"
            : "FRAMEFI_DEVICE_ERROR",
      parts,
    );
  }

  /** Whether the answer was the device API's JSON; if not, the address may lead to another server. */
  get fromApi(): boolean {
    try {
      return isObject(JSON.parse(this.body));
    } catch {
      return false;
    }
  }
}

/** 401: credentials missing or wrong. */
export class AuthenticationError extends DeviceHttpError {
  override name = "AuthenticationError";
}

/** 403: the account may not do this (the read-only account on a POST). */
export class ForbiddenError extends DeviceHttpError {
  override name = "ForbiddenError";
}

/** The device answered something that is not the API's JSON. */
export class ProtocolError extends FrameFiError {
  override name = "ProtocolError";
}

export interface ClientOptions {
  /** "host", "host:port" or a URL such as "http://192.168.1.50"; a bare host means http on port 80. */
  host: string;
  user?: string;
  password?: string;
  /** Per request, except uploads (which have none unless given `uploadTimeoutMs`). Default 10 s. */
  timeoutMs?: number;
  uploadTimeoutMs?: number;
}

/** What to upload: a local file path, or bytes/a stream with the name to store it under. */
export type UploadSource = string | { name: string; data: Uint8Array | Readable; size?: number };

/** Turns "host", "host:port", "[v6]:port" or a URL into a base URL without a trailing slash. */
export function baseUrl(host: string): string {
  const text = host.trim();
  if (!text) throw new FrameFiError("FRAMEFI_EMPTY_ADDRESS", {});
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new FrameFiError("FRAMEFI_BAD_ADDRESS", { host: hidePassword(host) });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new FrameFiError("FRAMEFI_BAD_SCHEME", { host: hidePassword(host) });
  return url.origin + url.pathname.replace(/\/+$/, "");
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

type Body = string | AsyncIterable<Uint8Array>;

interface Answer {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One connection per request, closed after the answer: no idle socket outlives a command. */
const HTTP_AGENT = new http.Agent({ keepAlive: false });
const HTTPS_AGENT = new https.Agent({ keepAlive: false });
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * The error codes of a certificate no trusted CA signed (OpenSSL's verify codes): the one case a CA file in
 * NODE_EXTRA_CA_CERTS can cure. A wrong host name or an expired certificate keeps the plain message.
 */
const UNTRUSTED = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
]);

/**
 * What https requests trust when bin/framefi handed NODE_EXTRA_CA_CERTS on (see there): Node's default store,
 * whichever it is (its own roots, or OpenSSL's with --use-openssl-ca), plus the file's certificates, as Node itself
 * trusts them. Made once per client: parsing the roots takes tens of milliseconds. A file that cannot be read or
 * holds no certificate is, as in Node, a warning.
 */
function trustWithExtraCa(file: string): SecureContext | undefined {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
    if (!pem.includes("-----BEGIN CERTIFICATE-----")) throw new Error("no PEM certificate in it");
  } catch (e) {
    process.emitWarning(`Ignoring extra certs from \`${file}\`, load failed: ${(e as Error).message}`);
    return undefined;
  }
  const trust = createSecureContext();
  // The native context adds to its own copy of the default store; the public `ca` option would replace the store.
  (trust as unknown as { context: { addCACert(pem: string): void } }).context.addCACert(pem);
  return trust;
}

/** The most the client reads of an answer: the API's JSON is under 1 KB; an error page is read for its first line. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** An answer longer than MAX_ANSWER_BYTES; `text` is its beginning. */
class OverlongAnswer extends Error {
  constructor(readonly answer: Answer) {
    super("overlong answer");
  }
}

/**
 * One request and its answer, read up to MAX_ANSWER_BYTES (then OverlongAnswer); rejects with the transport's
 * error (an errno code, the abort, …). `signal` bounds the whole exchange, the answer's body included.
 */
function exchange(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Body | undefined,
  signal: AbortSignal | undefined,
  httpsAgent: () => https.Agent,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = { method, headers };
    const req = url.protocol === "https:" ? https.request(url, { ...options, agent: httpsAgent() }) : http.request(url, { ...options, agent: HTTP_AGENT });
    const stop = (e: unknown): void => {
      signal?.removeEventListener("abort", onAbort);
      req.destroy();
      reject(e);
    };
    const onAbort = (): void => stop(signal!.reason);
    if (signal?.aborted) return stop(signal.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("error", stop);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      // TextDecoder, like fetch's text(), drops a byte order mark.
      const answer = (): Answer => ({
        status: res.statusCode ?? 0,
        statusText: res.statusMessage ?? "",
        headers: res.headers,
        text: new TextDecoder().decode(Buffer.concat(chunks)),
      });
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) stop(new OverlongAnswer(answer()));
      });
      res.on("error", stop);
      res.on("close", () => stop(new Error("the connection closed before the answer's end")));
      res.on("end", () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(answer());
      });
    });
    if (typeof body === "object") pipeline(body, req, (e) => e && stop(e));
    else req.end(body);
  });
}

/** The beginning of an overlong error answer stands for it (its first line is the message); a success that long is not the API's. */
function overlong(answer: Answer, request: string, url: string): Answer {
  if (answer.status >= 200 && answer.status <= 299) {
    throw new ProtocolError("FRAMEFI_ANSWER_TOO_LONG", { request, url, kib: MAX_ANSWER_BYTES >> 10 });
  }
  return answer;
}

/** A request that got no answer: why, in the device's terms. */
function unreachable(e: unknown, url: string, timedOut: string | undefined): DeviceUnreachableError {
  const code = (e as NodeJS.ErrnoException).code;
  const reason = timedOut ?? code ?? (e as Error).message;
  const certificate = code === undefined ? undefined : UNTRUSTED.has(code) ? "untrusted" : /CERT/.test(code) ? "invalid" : undefined;
  return new DeviceUnreachableError(url, reason, { cause: e }, certificate);
}

/**
 * Sends a request and follows redirects as fetch does: at most 20; a 303, or a 301/302 after a POST, turns into
 * a GET without body; the login goes to the device's own origin only. An upload's stream cannot be sent twice,
 * so a 307/308 to it is the answer.
 */
async function send(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: Body | undefined,
  signal: AbortSignal | undefined,
  httpsAgent: () => https.Agent,
): Promise<Answer> {
  for (let redirects = 0; ; redirects++) {
    const answer = await exchange(url, method, headers, body, signal, httpsAgent);
    const location = answer.headers.location;
    const resend = answer.status === 307 || answer.status === 308;
    if (!REDIRECTS.has(answer.status) || location === undefined || (resend && typeof body === "object")) return answer;
    if (redirects === 20) throw new Error("redirect count exceeded");
    const next = new URL(location, url);
    headers = { ...headers };
    if (!resend && method === "POST") {
      method = "GET";
      body = undefined;
      delete headers["Content-Type"];
      delete headers["Content-Length"];
    }
    if (next.origin !== url.origin) delete headers.Authorization;
    url = next;
  }
}

export class FrameFiClient {
  readonly url: string;
  private readonly auth: string | undefined;
  /** Per request (ClientOptions.timeoutMs); a sync's FTP replies get as long. */
  readonly timeoutMs: number;
  private readonly uploadTimeoutMs: number | undefined;
  /** Each result this client returned, with the body it was parsed from. */
  private readonly bodies = new WeakMap<object, string>();
  /** X-FrameFi-FTP-Port of the last answer: null when it had none (the firmware), undefined before any answer. */
  private announcedFtp: number | null | undefined;
  /**
   * The agent of https requests: the shared one, or this client's own when it trusts a CA file besides Node's
   * default (made at the first https request). Its own, because an agent reuses TLS sessions across requests: a
   * session this client checked with the file must not spare another client the check.
   */
  private https: https.Agent | undefined;

  constructor(opts: ClientOptions) {
    this.url = baseUrl(opts.host);
    this.auth =
      opts.user !== undefined && (opts.user !== "" || (opts.password ?? "") !== "")
        ? "Basic " + Buffer.from(`${opts.user}:${opts.password ?? ""}`).toString("base64")
        : undefined;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.uploadTimeoutMs = opts.uploadTimeoutMs;
  }

  status(): Promise<DeviceStatus> {
    return this.call<DeviceStatus>("GET", "/");
  }

  /** The current mode (GET /mode/msc). */
  mode(): Promise<ModeStatus> {
    return this.call<ModeStatus>("GET", "/mode/msc");
  }

  /**
   * The FTP port the device announces: our device service sends `X-FrameFi-FTP-Port` with every answer; the
   * firmware sends nothing (its FTP server is on port 21), which gives undefined. Asks the device if no answer
   * has been seen yet.
   */
  async ftpPort(): Promise<number | undefined> {
    if (this.announcedFtp === undefined) await this.mode();
    return this.announcedFtp ?? undefined;
  }

  private httpsAgent(): https.Agent {
    if (this.https === undefined) {
      const file = process.env.FRAMEFI_EXTRA_CA_CERTS;
      const secureContext = file ? trustWithExtraCa(file) : undefined;
      this.https = secureContext ? new https.Agent({ keepAlive: false, secureContext }) : HTTPS_AGENT;
    }
    return this.https;
  }

  /** Switches mode; answers at once, the switch completes just after. */
  setMode(mode: Mode): Promise<ActionResult> {
    return this.call<ActionResult>("POST", `/mode/${mode}`);
  }

  restart(): Promise<ActionResult> {
    return this.call<ActionResult>("POST", "/device/restart");
  }

  wifiReset(): Promise<ActionResult> {
    return this.call<ActionResult>("POST", "/wifi/reset");
  }

  displayStatus(): Promise<DisplayStatus> {
    return this.call<DisplayStatus>("GET", "/display/status");
  }

  display(action: Toggle): Promise<ActionResult> {
    return this.call<ActionResult>("POST", `/display/${action}`);
  }

  mqttStatus(): Promise<MqttStatus> {
    return this.call<MqttStatus>("GET", "/mqtt/status");
  }

  mqtt(action: MqttAction): Promise<ActionResult> {
    return this.call<ActionResult>("POST", `/mqtt/${action}`);
  }

  ledStatus(): Promise<LedStatus> {
    return this.call<LedStatus>("GET", "/led/status");
  }

  led(action: Toggle): Promise<ActionResult> {
    return this.call<ActionResult>("POST", `/led/${action}`);
  }

  brightness(): Promise<Brightness> {
    return this.call<Brightness>("GET", "/led/brightness");
  }

  /** Sets the LED brightness, an integer 0–255 (sent as a plain-text body, as the firmware expects). */
  setBrightness(value: number): Promise<ActionResult> {
    if (!Number.isInteger(value) || value < 0 || value > 255) {
      return Promise.reject(new FrameFiError("FRAMEFI_BAD_BRIGHTNESS", { value }));
    }
    return this.call<ActionResult>("POST", "/led/brightness", { body: String(value), contentType: "text/plain" });
  }

  /**
   * The collections the frame can be switched between, and the one it has (a device started with --collections);
   * undefined when the device has none (404: no --collections, or the firmware).
   */
  async collections(): Promise<CollectionsStatus | undefined> {
    try {
      return await this.call<CollectionsStatus>("GET", "/collections");
    } catch (e) {
      if (e instanceof DeviceHttpError && e.status === 404) return undefined;
      throw e;
    }
  }

  /** Switches the frame to the collection `name` (USB MSC mode only): the card is swapped, no photo is copied. */
  useCollection(name: string): Promise<CollectionUsed> {
    return this.call<CollectionUsed>("POST", "/collections/use", { body: name, contentType: "text/plain" });
  }

  /**
   * Uploads one file (FTP mode only) as multipart/form-data, streamed: memory stays flat whatever the size.
   * `remoteName` may contain sub-folders ("2024/summer/a.jpg"); default: the file's own name. `onProgress`
   * hears the file bytes handed to the connection so far.
   */
  async upload(source: UploadSource, remoteName?: string, onProgress?: (bytesSent: number, totalBytes: number | undefined) => void): Promise<ActionResult> {
    let name: string;
    let data: Readable;
    let size: number | undefined;
    if (typeof source === "string") {
      size = (await stat(source)).size;
      name = remoteName ?? basename(source);
      data = createReadStream(source, { highWaterMark: 1 << 20 });
    } else {
      name = remoteName ?? source.name;
      data = source.data instanceof Readable ? source.data : Readable.from([source.data]);
      size = source.data instanceof Readable ? source.size : source.data.byteLength;
    }
    const boundary = `----framefi${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
    const quoted = name
      .replace(/\\/g, "\\\\")
      .replace(/"/g, '\\"')
      .replace(/[\r\n]/g, " ");
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    // A body that breaks its Content-Length would leave the device waiting for bytes or misreading the rest.
    const mismatch = (read: string): FrameFiError => new FrameFiError("FRAMEFI_UPLOAD_CHANGED", { name, read, size: size ?? "" });
    async function* body(): AsyncGenerator<Uint8Array> {
      yield head;
      let sent = 0;
      for await (const chunk of data) {
        sent += (chunk as Uint8Array).byteLength;
        if (size !== undefined && sent > size) throw mismatch("more than");
        yield chunk as Uint8Array;
        onProgress?.(sent, size);
      }
      if (size !== undefined && sent < size) throw mismatch(`only ${sent} of`);
      yield tail;
    }
    const headers: Record<string, string> = {};
    if (size !== undefined) headers["Content-Length"] = String(head.length + size + tail.length);
    try {
      return await this.call<ActionResult>("POST", "/upload", {
        body: body(),
        contentType: `multipart/form-data; boundary=${boundary}`,
        headers,
        timeoutMs: this.uploadTimeoutMs,
      });
    } finally {
      if (typeof source === "string") data.destroy();
    }
  }

  private async call<T extends object>(
    method: "GET" | "POST",
    path: string,
    opts: { body?: Body; contentType?: string; headers?: Record<string, string>; timeoutMs?: number | undefined } = {},
  ): Promise<T> {
    const request = `${method} ${path}`;
    const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
    if (this.auth) headers.Authorization = this.auth;
    if (opts.contentType) headers["Content-Type"] = opts.contentType;
    if (typeof opts.body === "string") headers["Content-Length"] = String(Buffer.byteLength(opts.body));
    // The device and the firmware's web server may wait for a body that a POST does not announce as empty.
    else if (opts.body === undefined && method === "POST") headers["Content-Length"] = "0";
    const timeout = path === "/upload" ? opts.timeoutMs : this.timeoutMs;
    const signal = timeout ? AbortSignal.timeout(timeout) : undefined;
    let res: Answer;
    try {
      res = await send(method, new URL(this.url + path), headers, opts.body, signal, () => this.httpsAgent());
    } catch (e) {
      if (e instanceof FrameFiError) throw e;
      if (e instanceof OverlongAnswer) res = overlong(e.answer, request, this.url);
      else throw unreachable(e, this.url, signal?.aborted ? `no answer within ${timeout} ms` : undefined);
    }
    const { text } = res;
    const announced = Number(res.headers["x-framefi-ftp-port"] ?? NaN);
    this.announcedFtp = Number.isInteger(announced) && announced > 0 && announced < 65536 ? announced : null;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const page = /html/i.test(res.headers["content-type"] ?? "") || /^\s*<(!doctype html|html)/i.test(text);
    if (res.status < 200 || res.status > 299) {
      const given = isObject(json) && typeof json.message === "string" ? blankControls(json.message) : undefined;
      // A login refused may come as a page (the firmware's web server); other errors as a page are not the API's.
      const login = res.status === 401 || res.status === 403;
      const message =
        given ??
        (page && !login ? "a web page, not the device API's JSON; check that this is the device's address" : firstLine(text) || blankControls(res.statusText));
      if (res.status === 401) throw new AuthenticationError(res.status, message, text, request);
      if (res.status === 403) throw new ForbiddenError(res.status, message, text, request);
      throw new DeviceHttpError(res.status, message, text, request);
    }
    if (!isObject(json)) {
      const what = page ? "a web page" : `"${firstLine(text).slice(0, 60)}"`;
      const url = new URL(this.url);
      const parts = { request, url: this.url, what, origin: url.origin };
      throw url.pathname.length > 1 ? new ProtocolError("FRAMEFI_API_NOT_AT_ROOT", parts) : new ProtocolError("FRAMEFI_NOT_THE_API", parts);
    }
    // The firmware answers some errors with status 200 and {"status":"error"}; treat them as errors too.
    if (json.status === "error") {
      throw new DeviceHttpError(res.status, typeof json.message === "string" ? blankControls(json.message) : firstLine(text), text, request);
    }
    this.bodies.set(json, text);
    return json as T;
  }

  /** The device's answer that `result` (a result of this client) was read from, exactly as it was sent. */
  answerOf(result: object): string {
    const body = this.bodies.get(result);
    if (body === undefined) throw new FrameFiError("FRAMEFI_NOT_A_RESULT", {});
    return body;
  }
}
