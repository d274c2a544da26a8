// The web API: routes → state, with the firmware's JSON (its src/main.cpp's answers, byte for byte).
// Errors are always {"status":"error","message":"…"}: 400, 401, 403, 404, 405 (with Allow), 500, 507.
import { sameSecret } from "../../shared/secret.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Card } from "../card/card.js";
import { MALFORMED_URL, readShortBody, readSmallBody, requestUrl, sendError, sendErrorAndClose, sendErrorEarly, sendJson } from "./answers.js";
import { bodies, errors, MODE_LABELS, statusBody, type CollectionsStatus, type CollectionUsed, type Mode } from "../../shared/firmware.js";
import { refuseForeign, type HostPolicy } from "./request-guard.js";
import type { Settings } from "../settings.js";
import type { DeviceState } from "../state.js";
import type { LoginThrottle } from "../auth/throttle.js";
import { handleMultipartUpload, handleRawUpload } from "./upload.js";
import type { Collections } from "../collections.js";
import { DeviceError, toHttp } from "../errors.js";

export interface ApiContext {
  state: DeviceState;
  card: Card;
  settings: () => Settings;
  readonlyAccount: { user: string; password: string };
  /** Called after the restart answer has been sent. */
  restart: () => void;
  /** Called after the Wi-Fi reset answer has been sent. */
  wifiReset: () => void;
  log: (message: string) => void;
  /** Failed logins per client address: the service's one throttle, shared with FTP and kept across restarts. */
  throttle: LoginThrottle;
  /** Which Host values name the device. */
  hosts: HostPolicy;
  /** With --collections: what GET /collections lists and POST /collections/use switches. */
  collections?: Collections | undefined;
  /** More routes behind the same auth and error handling (the web panel under /panel/). */
  extraRoutes?: ReadonlyArray<{ method: "GET" | "POST"; path: string; handler: Handler }>;
}

type Method = "GET" | "POST" | "PUT";

/** Bytes a collection's name may take as a body: 32 characters, and room for a line break or spaces. */
const COLLECTION_BODY_LIMIT = 64;
type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

/**
 * The brightness the firmware accepts: Arduino's `String.toInt()` (C `atol`: optional sign, then the leading
 * digits, so `0128` → 128, `12.5` → 12, `50abc` → 50), refused when it reads 0 from anything but "0" or lies
 * outside 0–255. Undefined for what the firmware refuses.
 */
export function firmwareBrightness(text: string): number | undefined {
  const m = /^\s*([+-]?)(\d*)/.exec(text)!;
  const value = Number(m[2] || "0") * (m[1] === "-" ? -1 : 1);
  if ((value === 0 && text !== "0") || value < 0 || value > 255) return undefined;
  return value;
}

function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return { user: decoded, password: "" };
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function createApi(ctx: ApiContext): (req: IncomingMessage, res: ServerResponse) => void {
  const { state, card } = ctx;
  const routes = new Map<string, Partial<Record<Method, Handler>>>();
  const route = (method: Method, path: string, handler: Handler): void => {
    routes.set(path, { ...routes.get(path), [method]: handler });
  };

  const modeAnswer: Handler = (_req, res) => sendJson(res, 200, bodies.mode(state.snapshot().mode));
  // The answer comes once the switch is done, so a switch that fails (FTP port taken, …) answers an error
  // instead of a success the device cannot keep.
  const switchMode =
    (mode: Mode): Handler =>
    async (_req, res) => {
      if (!state.setMode(mode)) return sendJson(res, 200, bodies.alreadyIn(mode));
      const failure = await state.switchOutcome(mode);
      if (failure) sendError(res, 500, `Could not switch to ${MODE_LABELS[mode]} mode: ${failure} The device stays in USB MSC mode.`);
      else sendJson(res, 200, bodies.switching(mode));
    };

  route("GET", "/", async (_req, res) => {
    const s = state.snapshot();
    sendJson(res, 200, statusBody({ ...s, card: await card.figures() }));
  });
  route("GET", "/mode/msc", modeAnswer);
  route("GET", "/mode/ftp", modeAnswer);
  route("POST", "/mode/msc", switchMode("msc"));
  route("POST", "/mode/ftp", switchMode("ftp"));

  route("POST", "/device/restart", (_req, res) => {
    res.once("finish", ctx.restart);
    sendJson(res, 200, bodies.restarting);
  });
  route("POST", "/wifi/reset", (_req, res) => {
    res.once("finish", ctx.wifiReset);
    sendJson(res, 200, bodies.wifiReset);
  });

  route("GET", "/display/status", (_req, res) => sendJson(res, 200, bodies.displayStatus(state.snapshot().display.on)));
  route("POST", "/display/on", (_req, res) => {
    state.setDisplay(true);
    sendJson(res, 200, bodies.displayTurned(true));
  });
  route("POST", "/display/off", (_req, res) => {
    state.setDisplay(false);
    sendJson(res, 200, bodies.displayTurned(false));
  });
  route("POST", "/display/toggle", (_req, res) => sendJson(res, 200, bodies.displayToggled(state.setDisplay("toggle"))));

  route("GET", "/mqtt/status", (_req, res) => sendJson(res, 200, bodies.mqttStatus(state.snapshot().mqtt)));
  const mqttAction =
    (action: "enable" | "disable" | "toggle"): Handler =>
    async (_req, res) => {
      await state.setMqttEnabled(action === "toggle" ? "toggle" : action === "enable").saved;
      sendJson(res, 200, bodies.mqttDone(action));
    };
  route("POST", "/mqtt/enable", mqttAction("enable"));
  route("POST", "/mqtt/disable", mqttAction("disable"));
  route("POST", "/mqtt/toggle", mqttAction("toggle"));

  route("GET", "/led/status", (_req, res) => sendJson(res, 200, bodies.ledStatus(state.snapshot().led)));
  route("POST", "/led/on", (_req, res) => {
    state.setLed(true);
    sendJson(res, 200, bodies.ledTurned(true));
  });
  route("POST", "/led/off", (_req, res) => {
    state.setLed(false);
    sendJson(res, 200, bodies.ledTurned(false));
  });
  route("POST", "/led/toggle", (_req, res) => {
    state.setLed("toggle");
    sendJson(res, 200, bodies.ledToggled);
  });
  route("GET", "/led/brightness", (_req, res) => sendJson(res, 200, bodies.brightness(state.snapshot().led.brightness)));
  route("POST", "/led/brightness", async (req, res) => {
    const body = await readSmallBody(req, res, 64);
    // A plain integer whatever the Content-Type: clients send text/plain, JSON (`128`) or form encoding.
    const value = firmwareBrightness(body?.toString("utf8").trim() ?? "");
    if (value === undefined) {
      sendError(res, 400, errors.brightnessInvalid);
      return;
    }
    await state.setBrightness(value);
    sendJson(res, 200, bodies.brightnessSet(value));
  });

  route("POST", "/upload", async (req, res) => {
    await state.settled();
    await handleMultipartUpload(req, res, card);
  });
  route("PUT", "/upload", async (req, res, url) => {
    await state.settled();
    await handleRawUpload(req, res, card, url.searchParams.get("filename"));
  });
  // Beyond the firmware: the collections (--collections), switched as the MQTT select does.
  const failWith = (req: IncomingMessage, res: ServerResponse, e: unknown): void => {
    if (!(e instanceof DeviceError) || e.row.http === undefined) throw e;
    const { status, message } = toHttp(e);
    sendErrorAndClose(req, res, status, message);
  };
  route("GET", "/collections", async (req, res) => {
    const { collections } = ctx;
    if (!collections) return failWith(req, res, new DeviceError("DEVICE_NO_COLLECTIONS", {}));
    const body: CollectionsStatus = { status: "success", collections: await collections.names(), current: collections.active() ?? null };
    sendJson(res, 200, body);
  });
  route("POST", "/collections/use", async (req, res) => {
    const { collections } = ctx;
    if (!collections) return failWith(req, res, new DeviceError("DEVICE_NO_COLLECTIONS", {}));
    // The name alone, as /led/brightness takes its value: whatever the Content-Type (curl -d sends a form's).
    const body = await readShortBody(req, res, COLLECTION_BODY_LIMIT);
    if (body === undefined) {
      const { status, message } = toHttp(new DeviceError("DEVICE_COLLECTION_BODY_TOO_LARGE", { limit: String(COLLECTION_BODY_LIMIT) }));
      return sendErrorEarly(req, res, status, message, { Connection: "close" });
    }
    const name = body.toString("utf8").trim();
    try {
      const current = await collections.use(name);
      if (current !== name) throw new DeviceError("DEVICE_COLLECTION_OVERRIDDEN", { name, current: current ?? "(none)" });
      const answer: CollectionUsed = { status: "success", message: `The frame now has the collection ${name}.`, current: name };
      sendJson(res, 200, answer);
    } catch (e) {
      failWith(req, res, e);
    }
  });

  for (const extra of ctx.extraRoutes ?? []) route(extra.method, extra.path, extra.handler);

  type Access = "full" | "read-only" | "none";
  const authenticate = (req: IncomingMessage): Access | "open" => {
    const s = ctx.settings();
    // As the firmware: credentials are asked for when a web user is set; a password alone protects nothing.
    if (s.webUser === "") return "open";
    const given = parseBasic(req.headers.authorization);
    if (!given) return "none";
    // Compare everything every time, so the time taken says nothing about which part matched.
    const full = sameSecret(given.user, s.webUser) && sameSecret(given.password, s.webPassword);
    const ro = ctx.readonlyAccount;
    const roUser = sameSecret(given.user, ro.user);
    const roPass = sameSecret(given.password, ro.password);
    const address = req.socket.remoteAddress;
    // Only the full account starts the address afresh: one who knows the read-only account must not
    // wipe its failures between guesses of the full one's password.
    if (full) {
      ctx.throttle.succeeded(address, "web");
      return "full";
    }
    if (ro.user !== "" && roUser && roPass) return "read-only";
    const { failures } = ctx.throttle.failed(address, "web");
    ctx.log(`failed web login from ${address ?? "unknown address"} as user ${JSON.stringify(given.user.slice(0, 64))} (${failures} in a row)`);
    return "none";
  };
  const needsLogin = (): boolean => ctx.settings().webUser !== "" || ctx.settings().webPassword !== "";

  return (req, res) => {
    const url = requestUrl(req);
    if (!url) {
      sendErrorAndClose(req, res, 400, MALFORMED_URL);
      return;
    }
    if (refuseForeign(req, res, ctx.hosts)) return;
    const methods = routes.get(url.pathname);
    if (!methods) {
      sendErrorAndClose(
        req,
        res,
        404,
        `Not found: ${req.method} ${url.pathname}. This device serves the FrameFi firmware's API (GET / for its status) and its web panel at /panel/.`,
      );
      return;
    }
    const wait = needsLogin() ? ctx.throttle.retryAfter(req.socket.remoteAddress) : 0;
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      sendErrorEarly(req, res, 429, `Too many failed logins from your address: try again in ${seconds} s.`, { "Retry-After": String(seconds) });
      return;
    }
    const access = authenticate(req);
    if (access === "none") {
      sendErrorEarly(req, res, 401, "Authentication required: send the web user and password with HTTP basic auth (curl -u USER:PASSWORD).", {
        "WWW-Authenticate": 'Basic realm="FrameFi"',
      });
      return;
    }
    const method = (req.method === "HEAD" ? "GET" : req.method) as Method;
    const handler = methods[method];
    if (!handler) {
      const allow = Object.keys(methods)
        .flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m]))
        .join(", ");
      sendErrorAndClose(req, res, 405, `Method ${req.method} is not allowed on ${url.pathname}; use ${allow}.`, { Allow: allow });
      return;
    }
    if (access === "read-only" && method !== "GET") {
      sendErrorEarly(req, res, 403, "Forbidden: this account is read-only; it may read (GET) but not change anything.");
      return;
    }
    const fail = (e: unknown): void => {
      ctx.log(`internal error on ${req.method} ${url.pathname}: ${(e as Error).stack ?? String(e)}`);
      if (!res.headersSent)
        sendErrorAndClose(req, res, 500, `Internal error while handling ${req.method} ${url.pathname}: ${(e as Error).message}. The service keeps running.`);
      else res.destroy();
    };
    try {
      const done = handler(req, res, url);
      if (done) done.catch(fail);
    } catch (e) {
      fail(e);
    }
  };
}
