// The web panel's routes, served by the device's API server under /panel/ (so they share its basic auth and its
// read-only account): the page, the display picture, the device view as JSON, server-sent events, the button.
import type { Puller } from "../pull/puller.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { MODE_LABELS } from "../../shared/firmware.js";
import { MALFORMED_URL, requestUrl, sendError, sendErrorAndClose, sendJson } from "../http/answers.js";
import { SimulatedDisplay, type Display, type Screen } from "../hardware.js";
import { addressKey } from "../auth/throttle.js";
import type { DeviceState } from "../state.js";
import { panelPage } from "./page.js";
import { renderDisplayPng, renderDisplaySvg } from "./render.js";
import { deviceView, type DeviceView } from "./view.js";

export interface PanelContext {
  state: DeviceState;
  /** The display hardware; the simulated one tells what it shows and when it changes. */
  display: Display;
  /** Called once the button's "held 3 s" answer has been sent, as the firmware's long press does. */
  wifiReset: () => void;
  /** Where the page can point when the device stops answering: its API port and its setup page's port. */
  ports: { api: number; setup: number };
  /** With --pull: its last pull is part of the view. */
  pull?: Puller | undefined;
}

export interface PanelRoute {
  method: "GET" | "POST";
  path: string;
  handler: (req: IncomingMessage, res: ServerResponse, url: URL) => void;
}

export interface Panel {
  routes: PanelRoute[];
  /**
   * Hands every open event stream the device as it is now and ends the stream, resolving once they are sent, or
   * after 1 s (a panel that does not read its stream does not hold the device up): what a device about to go down
   * awaits. Ended, not cut: a browser can drop the last event of a stream that breaks off.
   */
  shown(): Promise<void>;
}

/** How long shown() waits for panels that do not read their streams. */
const SHOWN_MS = 1_000;

/** Milliseconds between keep-alive comments on an idle event stream (proxies drop silent connections). */
const KEEP_ALIVE_MS = 15_000;
/** Open event streams at most, in all and from one address (each costs socket buffers in the kernel). */
const MAX_STREAMS = 128;
const MAX_STREAMS_PER_ADDRESS = 64;
/** Bytes an event stream may have waiting to be sent; beyond, only the latest state is sent once it drains. */
const STREAM_BUFFER = 64 * 1024;
/** A stream whose client has read nothing for this long is closed (its page reconnects if it is alive). */
const STALLED_MS = 60_000;

/** The `scale` parameter of a display picture (pixels per display pixel, 1–8); undefined once a 400 is sent. */
function scaleOf(url: URL, res: ServerResponse): number | undefined {
  const text = url.searchParams.get("scale") ?? "1";
  if (/^[1-8]$/.test(text)) return Number(text);
  sendError(res, 400, `Invalid scale "${text}": use a whole number from 1 to 8 (pixels per display pixel).`);
  return undefined;
}

export function createPanel(ctx: PanelContext): Panel {
  const observable = ctx.display instanceof SimulatedDisplay ? ctx.display : undefined;

  const drawn = (): Screen | undefined => observable?.screen;
  const view = (): DeviceView => ({ ...deviceView(ctx.state.snapshot(), drawn()), ...(ctx.pull ? { pull: ctx.pull.last } : {}) });
  const current = (): { view: DeviceView; svg: string } => {
    const v = view();
    return { view: v, svg: renderDisplaySvg(v.display) };
  };

  // One subscription to the state and the display, shared by every open event stream: each change is drawn once
  // (at most once per turn of the event loop) and sent to all of them.
  interface Client {
    /**
     * Sends `data` unless it is what this client last got; resolves once it has been handed to the network, or at
     * once when the client lags (it then gets the latest state when it catches up).
     */
    send(data: string): Promise<void>;
    /** Sends the latest state if it has not gone out yet (also to a lagging client), then ends the stream. */
    end(): Promise<void>;
  }
  const clients = new Set<Client>();
  const perAddress = new Map<string, number>();
  let scheduled: NodeJS.Immediate | undefined;
  const sendAll = async (): Promise<void> => {
    const data = JSON.stringify(current());
    await Promise.all([...clients].map((c) => c.send(data)));
  };
  const onChange = (): void => {
    scheduled ??= setImmediate(() => {
      scheduled = undefined;
      void sendAll();
    });
  };
  const join = (client: Client): void => {
    if (clients.size === 0) {
      ctx.state.on("change", onChange);
      observable?.on("change", onChange);
      ctx.pull?.on("change", onChange);
    }
    clients.add(client);
  };
  const leave = (client: Client): void => {
    clients.delete(client);
    if (clients.size > 0) return;
    ctx.state.off("change", onChange);
    observable?.off("change", onChange);
    ctx.pull?.off("change", onChange);
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
  };

  const running = (res: ServerResponse): boolean => {
    if (ctx.state.snapshot().phase === "running") return true;
    sendError(res, 409, "The button does nothing until the device has booted and joined its network; try again in a moment.");
    return false;
  };

  const endAll = async (): Promise<void> => {
    await sendAll();
    await Promise.all([...clients].map((c) => c.end()));
  };
  const shown = (): Promise<void> => Promise.race([endAll(), sleep(SHOWN_MS, undefined, { ref: false })]);

  const routes: PanelRoute[] = [
    {
      method: "GET",
      path: "/panel",
      handler: (_req, res) => {
        res.writeHead(301, { Location: "/panel/", "Content-Length": 0 });
        res.end();
      },
    },
    {
      method: "GET",
      path: "/panel/",
      handler: (_req, res) => {
        const html = panelPage(current(), ctx.ports);
        res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Content-Length": Buffer.byteLength(html), "Cache-Control": "no-store" });
        res.end(html);
      },
    },
    {
      method: "GET",
      path: "/panel/display.svg",
      handler: (_req, res, url) => {
        const scale = scaleOf(url, res);
        if (scale === undefined) return;
        const svg = renderDisplaySvg(view().display, scale);
        res.writeHead(200, { "Content-Type": "image/svg+xml; charset=utf-8", "Content-Length": Buffer.byteLength(svg), "Cache-Control": "no-store" });
        res.end(svg);
      },
    },
    {
      method: "GET",
      path: "/panel/display.png",
      handler: (_req, res, url) => {
        const scale = scaleOf(url, res);
        if (scale === undefined) return;
        const png = renderDisplayPng(view().display, scale);
        res.writeHead(200, { "Content-Type": "image/png", "Content-Length": png.length, "Cache-Control": "no-store" });
        res.end(png);
      },
    },
    {
      method: "GET",
      path: "/panel/state",
      handler: (_req, res) => sendJson(res, 200, view(), { "Cache-Control": "no-store" }),
    },
    {
      method: "GET",
      path: "/panel/events",
      handler: (req, res) => {
        const address = addressKey(req.socket.remoteAddress);
        const fromAddress = perAddress.get(address) ?? 0;
        if (clients.size >= MAX_STREAMS || fromAddress >= MAX_STREAMS_PER_ADDRESS) {
          const limit = clients.size >= MAX_STREAMS ? `${MAX_STREAMS} in all` : `${MAX_STREAMS_PER_ADDRESS} from one address`;
          sendError(res, 503, `Too many open panels (${limit}): close one and reload; GET /panel/state answers without a stream.`, { "Retry-After": "5" });
          return;
        }
        perAddress.set(address, fromAddress + 1);
        res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" });
        let last = "";
        let latest = "";
        let stalled: NodeJS.Timeout | undefined;
        const lagging = (): boolean => res.writableLength > STREAM_BUFFER;
        const write = (data: string, done: () => void): void => {
          last = data;
          res.write(`event: device\ndata: ${data}\n\n`, () => done());
        };
        const send = (data: string): Promise<void> =>
          new Promise((resolve) => {
            latest = data;
            if (data === last || res.writableEnded) return resolve();
            if (!lagging()) return write(data, resolve);
            // The client reads slower than the state changes: keep only the latest state for when it catches up.
            stalled ??= setTimeout(() => res.destroy(), STALLED_MS);
            resolve();
          });
        res.on("drain", () => {
          clearTimeout(stalled);
          stalled = undefined;
          if (latest !== last && !res.writableEnded) write(latest, () => undefined);
        });
        const client: Client = {
          send,
          end: () =>
            new Promise((resolve) => {
              if (res.writableEnded) return resolve();
              if (latest !== last) write(latest, () => undefined);
              res.end(resolve);
            }),
        };
        res.write("retry: 1000\n\n");
        void send(JSON.stringify(current()));
        join(client);
        const keepAlive = setInterval(() => {
          if (res.writableLength === 0 && !res.writableEnded) res.write(": keep-alive\n\n");
        }, KEEP_ALIVE_MS);
        keepAlive.unref();
        req.socket.setTimeout(0);
        res.on("close", () => {
          clearInterval(keepAlive);
          clearTimeout(stalled);
          leave(client);
          const left = (perAddress.get(address) ?? 1) - 1;
          if (left > 0) perAddress.set(address, left);
          else perAddress.delete(address);
        });
      },
    },
    {
      method: "POST",
      path: "/panel/button/click",
      handler: (_req, res) => {
        if (!running(res)) return;
        const target = ctx.state.snapshot().mode === "msc" ? "ftp" : "msc";
        ctx.state.setMode(target);
        sendJson(res, 200, { status: "success", message: `Button clicked: switching to ${MODE_LABELS[target]} mode.` });
      },
    },
    {
      method: "POST",
      path: "/panel/button/hold",
      handler: (_req, res) => {
        if (!running(res)) return;
        res.once("finish", ctx.wifiReset);
        sendJson(res, 200, { status: "success", message: "Button held for 3 seconds: resetting Wi-Fi and restarting..." });
      },
    },
  ];
  return { routes, shown };
}

/**
 * The panel on a server without the API's router (the setup page's server in setup mode, where the API is down):
 * answers the panel's paths and returns true, or returns false and leaves the request to the caller.
 */
export function servePanel(routes: PanelRoute[]): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = requestUrl(req);
    if (!url) {
      sendErrorAndClose(req, res, 400, MALFORMED_URL);
      return true;
    }
    const method = req.method === "HEAD" ? "GET" : req.method;
    const route = routes.find((r) => r.path === url.pathname && r.method === method);
    if (!route) return false;
    route.handler(req, res, url);
    return true;
  };
}
