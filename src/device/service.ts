// The device as a whole: boots (settings → state → network → API), restarts in-process as a reboot would,
// and after a Wi-Fi reset serves the setup page instead of the API until new settings are saved.
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { listenEverywhere, listenOn } from "../shared/listen.js";
import { sameSecret } from "../shared/secret.js";
import { createApi } from "./http/api.js";
import { defaultConnectionLimits, limitConnections, watchBodyProgress, whenItsTurn } from "./http/answers.js";
import { hostPolicy, refuseForeign, type HostPolicy } from "./http/request-guard.js";
import { Card } from "./card/card.js";
import type { DeviceConfig } from "./cli/config.js";
import { simulatedHardware, type Hardware } from "./hardware.js";
import type { Puller } from "./pull/puller.js";
import { createPanel, servePanel, type Panel, type PanelRoute } from "./panel/routes.js";
import { defaultSettings, SettingsStore, type Settings } from "./settings.js";
import { createSetupHandler, type SetupValues } from "./http/setup.js";
import { DeviceState, noFtpShare, type FtpShare } from "./state.js";
import { createLoginThrottle, type LoginThrottle } from "./auth/throttle.js";
import { deviceLog } from "./log.js";
import { DeviceError, toHttp } from "./errors.js";
import { Collections, FolderCollections, type CollectionBackend } from "./collections.js";
import { join } from "node:path";

/** What plug-ins (the FTP server, the MQTT client) get to work with. */
export interface DeviceContext {
  config: DeviceConfig;
  state: DeviceState;
  card: Card;
  /** The settings as they are now: the settings store, their one owner. */
  settings: () => Settings;
  /** Reboots in-process, as POST /device/restart does (for MQTT's restart command). */
  restart: () => Promise<void>;
  /** Failed logins per client address, for every login surface (FTP and the web API's basic auth). */
  loginThrottle: LoginThrottle;
  /** With --collections: what the frame can be switched between. */
  collections: Collections | undefined;
  log: (message: string) => void;
}

/** A network service that runs while the device is up and joined to its network (the MQTT client). */
export interface DevicePlugin {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface DeviceServiceOptions {
  hardware?: Hardware;
  /** Builds the FTP server of FTP mode; without it FTP mode only hands the card to the network. */
  ftp?: (ctx: DeviceContext) => FtpShare;
  plugins?: Array<(ctx: DeviceContext) => DevicePlugin>;
  /** With --pull: the Puller, whose last pull the web panel shows. */
  pull?: Puller;
  /** The USB gadget's collections (card images); without it, --collections makes the card's folders collections. */
  collections?: CollectionBackend | undefined;
  log?: (message: string) => void;
  /** Called when the device cannot come back up after a failed restart or Wi-Fi reset (the CLI exits 1). */
  fatal?: (error: Error) => void;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** How often a setup page whose port is taken tries again. */
const SETUP_RETRY_MS = 2_000;

/** Bytes a request body must bring per --request-timeout window. */
const MIN_BODY_BYTES = 4096;

export function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** Listens on host:port; "::" falls back to 0.0.0.0 where IPv6 is unavailable. */
async function listen(server: Server, host: string, port: number): Promise<string> {
  if (host === "::") return listenEverywhere(server, port);
  await listenOn(server, { host, port });
  return host;
}

/**
 * After a restart the port may still be held for a moment (by a lingering socket, say): retry for ~5 s. At the
 * first start a taken port is someone else's, so `patient` is false there and the start fails at once.
 */
async function listenPatiently(server: Server, host: string, port: number, patient: boolean): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await listen(server, host, port);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE" || !patient || attempt >= 25) throw e;
      await sleep(200);
    }
  }
}

function close(server: Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export class DeviceService {
  readonly card: Card;
  readonly state: DeviceState;
  readonly settings: SettingsStore;
  readonly hardware: Hardware;
  private api: Server | undefined;
  private setup: Server | undefined;
  /** The next attempt to open a setup page whose port was taken. */
  private setupRetry: NodeJS.Timeout | undefined;
  private readonly plugins: DevicePlugin[];
  private readonly pull: Puller | undefined;
  private running: DevicePlugin[] = [];
  private lifecycle: Promise<void> = Promise.resolve();
  private cardTimer: NodeJS.Timeout | undefined;
  /** Whether a boot has listened once: later boots (restarts) wait for their port to come free. */
  private booted = false;
  private readonly log: (message: string) => void;
  /**
   * The one owner of failed-login state, shared by FTP and web basic auth (a failure on either counts for both)
   * and kept across restarts, so a restart does not reset an attacker's wait.
   */
  private readonly loginThrottle: LoginThrottle;
  private readonly fatal: (error: Error) => void;
  private readonly hosts: HostPolicy;
  /** The web panel of the current boot. */
  private panel: Panel | undefined;
  readonly collections: Collections | undefined;
  /** --collections on the folder card: restored before the card opens. */
  private readonly folderCollections: FolderCollections | undefined;

  constructor(
    private readonly config: DeviceConfig,
    opts: DeviceServiceOptions = {},
  ) {
    this.log = opts.log ?? deviceLog();
    this.pull = opts.pull;
    this.fatal = opts.fatal ?? ((e) => this.log(`error: the device is down: ${e.message}`));
    this.hosts = hostPolicy(config.host, config.allowedHosts);
    this.loginThrottle = createLoginThrottle({ freeFailures: config.loginAttempts });
    this.hardware = opts.hardware ?? simulatedHardware(urlOf(config.host, config.port), urlOf(config.setupHost, config.setupPort));
    this.settings = new SettingsStore(
      config.state,
      () => defaultSettings(config),
      (m) => this.log(`warning: ${m}`),
    );
    this.card = new Card(config.card, {
      capacity: config.cardSize,
      rescanIntervalMs: config.rescanInterval * 1000,
      warn: (m) => this.log(`warning: ${m}`),
      onChange: () => this.cardChanged(),
      fatNames: config.fatNames,
      ...(this.hardware.usb.mounted ? { mounted: this.hardware.usb.mounted } : {}),
    });
    this.state = new DeviceState(this.hardware, this.card, this.settings, noFtpShare, this.log);
    if (!opts.collections && config.collections && !config.usbGadget) {
      this.folderCollections = new FolderCollections(config.collections, this.card, this.hardware.usb, join(config.state, "collection"), this.log);
    }
    const backend = opts.collections ?? this.folderCollections;
    this.collections = backend ? new Collections(backend, this.state) : undefined;
    const ctx: DeviceContext = {
      config,
      state: this.state,
      card: this.card,
      settings: () => this.settings.current(),
      restart: () => this.restart(),
      loginThrottle: this.loginThrottle,
      collections: this.collections,
      log: this.log,
    };
    if (opts.ftp) this.state.setFtpShare(opts.ftp(ctx));
    this.plugins = (opts.plugins ?? []).map((make) => make(ctx));
  }

  /** Powers on. Resolves once the API (or the setup page) answers. */
  async start(): Promise<void> {
    await this.folderCollections?.restore();
    await this.card.open();
    await this.settings.removeStaleTempFiles();
    const figures = await this.card.figures();
    this.log(
      `card ${this.card.root}: ${figures.fileCount} files, ${figures.usedSize} of ${figures.totalSize} bytes used${this.card.emulated ? " (emulated size)" : ""}`,
    );
    // Not through serialised(): the caller reports a failed start, once.
    const first = this.lifecycle.then(() => this.boot());
    this.lifecycle = first.catch(() => undefined);
    await first;
  }

  /** Reboots in-process: settings re-read, back to MSC mode. */
  restart(): Promise<void> {
    return this.transition("restart", async () => {
      this.log("restarting");
      await this.shutdown();
      await this.boot();
    });
  }

  /**
   * Clears the stored network and credentials, as the firmware's Wi-Fi reset does, and restarts into setup mode.
   * The web user and password stay (a difference from the firmware): the setup page is open to anyone nearby,
   * and changing them there needs the current password. When the settings cannot be written, the device
   * restarts on its current network and says why.
   */
  wifiReset(): Promise<void> {
    return this.transition("Wi-Fi reset", async () => {
      this.log("Wi-Fi reset: clearing the stored network and credentials");
      const { webUser, webPassword } = this.settings.current();
      const defaults = defaultSettings(this.config);
      const keepWeb = webUser !== defaults.webUser || webPassword !== defaults.webPassword;
      this.state.beginWifiReset();
      // Everyone watching the panel sees the reset screen before the device goes down.
      await this.panel?.shown();
      await this.shutdown();
      try {
        await this.settings.clear({ wifiSsid: "", wifiPassword: "", ...(keepWeb ? { webUser, webPassword } : {}) });
      } catch (e) {
        this.log(
          `error: Wi-Fi reset failed: cannot write the settings (${(e as Error).message}); restarting on the current network. Check the state folder ${this.config.state}.`,
        );
        await this.settings.load();
      }
      await this.boot();
    });
  }

  /** Powers off for good. */
  async stop(): Promise<void> {
    await this.serialised(() => this.shutdown());
    clearTimeout(this.cardTimer);
    this.card.close();
  }

  /**
   * A restart or reset that fails midway must not leave a device that answers nothing: it boots again; if even
   * that fails, `fatal` says why (the CLI exits non-zero, so a supervisor restarts it).
   */
  private transition(name: string, step: () => Promise<void>): Promise<void> {
    return this.serialised(async () => {
      try {
        await step();
      } catch (e) {
        this.log(`error: ${name} failed: ${(e as Error).message}; starting again`);
        try {
          await this.shutdown();
          await this.boot();
        } catch (again) {
          this.fatal(new Error(`${name} failed (${(e as Error).message}) and the device could not start again: ${(again as Error).message}`, { cause: again }));
        }
      }
    });
  }

  private serialised(step: () => Promise<void>): Promise<void> {
    const next = this.lifecycle.then(step);
    this.lifecycle = next.catch((e) => this.log(`error: ${(e as Error).message}`));
    return next;
  }

  private async boot(): Promise<void> {
    const settings = await this.settings.load();
    this.state.beginBoot();
    await sleep(this.config.bootDelay);
    if (settings.wifiSsid === "") {
      const ap = await this.hardware.wifi.startAccessPoint();
      const setupPage = createSetupHandler({
        apSsid: ap.ssid,
        settings: () => this.settings.current(),
        store: (values) => this.storeSetup(values),
        checkWebPassword: (password, address) => {
          const wait = this.loginThrottle.retryAfter(address);
          if (wait > 0) return { retryAfterMs: wait };
          if (!sameSecret(password, this.settings.current().webPassword)) {
            this.loginThrottle.failed(address, "web");
            return "wrong";
          }
          this.loginThrottle.succeeded(address, "web");
          return "ok";
        },
        restart: () => void this.restart(),
      });
      // The web panel stays reachable in setup mode, on the setup page's server (the API is down).
      const panel = servePanel(this.openPanel());
      this.setup = this.createHttpServer((req, res) => {
        if (refuseForeign(req, res, this.hosts)) return;
        if (!panel(req, res)) setupPage(req, res);
      });
      this.state.enterSetup(ap);
      await this.openSetupPage(this.setup, ap.ssid);
      this.booted = true;
      return;
    }
    const network = await this.hardware.wifi.connect(settings.wifiSsid);
    this.api = this.createApiServer();
    const host = await listenPatiently(this.api, this.config.host, this.config.port, this.booted);
    this.booted = true;
    this.api.on("error", (e) => this.log(`error: web API server: ${e.message}`));
    await this.state.finishBoot(network);
    // As the firmware: the web user switches authentication on; a password alone does not.
    const authOn = settings.webUser !== "";
    this.log(`web API listening on ${urlOf(host, this.config.port)}; mode USB MSC${authOn ? "; basic auth on" : ""}`);
    if (!authOn && settings.webPassword !== "") {
      this.log("warning: a web password is set but no web user, so the API is open to everyone (as on the firmware); set --web-user too");
    }
    if (!authOn && this.config.readonlyUser !== "") {
      this.log("warning: the read-only account has no effect while the web user is blank (the API is open to everyone); set --web-user");
    }
    for (const p of this.plugins) {
      try {
        await p.start();
        this.running.push(p);
      } catch (e) {
        this.log(`error: a plug-in failed to start: ${(e as Error).message}`);
      }
    }
  }

  /**
   * A setup page whose port is taken (by another program) must not take the device down with it: the device stays
   * in setup mode, says so once, and tries again every few seconds until the page opens or the device stops.
   */
  private async openSetupPage(server: Server, apSsid: string): Promise<void> {
    const { setupHost, setupPort } = this.config;
    const opened = (host: string): void => {
      if (this.setup !== server) {
        void close(server);
        return;
      }
      this.log(`setup mode: no Wi-Fi network stored; setup page on ${urlOf(host, setupPort)} (access point ${apSsid})`);
    };
    try {
      opened(await listenPatiently(server, setupHost, setupPort, this.booted));
      return;
    } catch (e) {
      this.log(
        `error: cannot open the setup page on ${urlOf(setupHost, setupPort)} (${(e as Error).message}); FrameFi stays in setup mode and tries again every ${SETUP_RETRY_MS / 1000} s: free the port, or start it with another --setup-port.`,
      );
    }
    const retry = (): void => {
      this.setupRetry = setTimeout(() => {
        if (this.setup === server) listen(server, setupHost, setupPort).then(opened, retry);
      }, SETUP_RETRY_MS);
    };
    retry();
  }

  private async shutdown(): Promise<void> {
    clearTimeout(this.setupRetry);
    for (const p of this.running.splice(0).reverse()) {
      await p.stop().catch((e: Error) => this.log(`error: a plug-in failed to stop: ${e.message}`));
    }
    await close(this.api);
    await close(this.setup);
    this.api = undefined;
    this.setup = undefined;
    await this.state.shutdown();
    await this.hardware.wifi.disconnect();
  }

  private async storeSetup(values: SetupValues): Promise<void> {
    await this.settings.commit(values);
    this.log(values.wifiSsid === undefined ? "setup saved: settings stored" : `setup saved: joining ${values.wifiSsid}`);
  }

  private createApiServer(): Server {
    const handler = createApi({
      state: this.state,
      card: this.card,
      settings: () => this.settings.current(),
      readonlyAccount: { user: this.config.readonlyUser, password: this.config.readonlyPassword },
      restart: () => void this.restart(),
      wifiReset: () => void this.wifiReset(),
      log: this.log,
      throttle: this.loginThrottle,
      hosts: this.hosts,
      collections: this.collections,
      extraRoutes: this.openPanel(),
    });
    // Beyond the firmware: every answer names the FTP port, so clients never guess which FTP server is this device's.
    const ftpPort = String(this.config.ftpPort);
    return this.createHttpServer((req, res) => {
      res.setHeader("X-FrameFi-FTP-Port", ftpPort);
      handler(req, res);
    });
  }

  /**
   * An HTTP server that bounds what a client can hold: the request head within --request-timeout, a body that
   * keeps bringing 4 KiB per --request-timeout, a limited number of connections.
   */
  private createHttpServer(handler: Handler): Server {
    const windowMs = this.config.requestTimeout * 1000;
    const server = createServer({ requestTimeout: 0, headersTimeout: windowMs, connectionsCheckingInterval: Math.min(1000, windowMs) });
    const refused = limitConnections(server, defaultConnectionLimits());
    const slow = (req: IncomingMessage): void =>
      this.log(`closed a request from ${req.socket.remoteAddress} whose body arrived too slowly: ${req.method} ${(req.url ?? "").split("?")[0]}`);
    const serve = (req: IncomingMessage, res: ServerResponse): void => {
      if (refused(req)) return;
      whenItsTurn(req, res, () => {
        watchBodyProgress(req, res, { windowMs, minBytes: MIN_BODY_BYTES, onSlow: slow });
        handler(req, res);
      });
    };
    server.on("request", serve);
    // Clients that wait for "100 Continue" get the same checks (auth, mode, space) before they send a body.
    server.on("checkContinue", serve);
    server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable || err.code === "ECONNRESET") {
        socket.destroy();
        return;
      }
      const { status, message } = toHttp(
        err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? new DeviceError("DEVICE_REQUEST_HEAD_LATE", {})
          : new DeviceError("DEVICE_MALFORMED_REQUEST", { reason: err.message }),
      );
      const body = JSON.stringify({ status: "error", message });
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    return server;
  }

  /** A fresh web panel (/panel/) for this boot: served by the API, and by the setup page's server in setup mode. */
  private openPanel(): PanelRoute[] {
    this.panel = createPanel({
      state: this.state,
      display: this.hardware.display,
      wifiReset: () => void this.wifiReset(),
      ports: { api: this.config.port, setup: this.config.setupPort },
      pull: this.pull,
    });
    return this.panel.routes;
  }

  /** Figures change in bursts (a folder copied in); tell the state at most every 100 ms. */
  private cardChanged(): void {
    if (this.cardTimer) return;
    this.cardTimer = setTimeout(() => {
      this.cardTimer = undefined;
      this.state.cardChanged();
    }, 100);
    this.cardTimer.unref();
  }
}
