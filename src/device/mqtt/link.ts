// The device's MQTT client: keeps a connection to the broker while enabled, publishes the firmware's
// retained state topics, takes commands, announces availability and Home Assistant discovery configs.
// It reads the device through the small DeviceSide interface and never changes device state itself:
// commands go to the device, and the device's change events bring the new state back here.
import { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import { createConnection } from "node:net";
import type { Duplex } from "node:stream";
import type { MqttClient } from "mqtt";
import { displayTopicPayload, MqttState, stateTopicPayload, type DeviceStatus, type Mode } from "../../shared/firmware.js";
import { discoveryMessages, topicsFor, type MqttTopics } from "./discovery.js";
import { limitIncoming } from "./packet-limit.js";
import { UNPRINTABLE } from "../../shared/unprintable.js";

export { topicsFor, type MqttTopics } from "./discovery.js";

/**
 * mqtt.js, loaded when a link is first enabled: it is a fifth of the device's start-up (about 100 ms here, seconds
 * on a Pi Zero), which a device without a broker never needs.
 */
let mqtt: typeof import("mqtt") | undefined;
async function loadMqtt(): Promise<void> {
  mqtt ??= await import("mqtt");
}

/** The part of the status body (`GET /`) the MQTT state topic carries. */
export type StatusView = Pick<DeviceStatus, "mode" | "display" | "sd_card">;

/** What the link needs from the device. */
export interface DeviceSide {
  /** The status object as `GET /` returns it (only mode, display and sd_card are read). */
  status(): StatusView | Promise<StatusView>;
  /** Calls `listener` after any state change; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  setDisplay(on: boolean): unknown;
  setMode(mode: Mode): unknown;
  restart(): unknown;
  /** With --pull: the last pull (published on the pull topic; onChange tells of a new one) and "sync now". */
  pull?: { last(): object | undefined; now(): unknown };
  /** The collections a frame can be switched between (--collections): a Home Assistant select. */
  collections?: Collections | undefined;
}

export interface Collections {
  names(): Promise<string[]>;
  /** Published on the collection topic; onChange tells when it changed. */
  active(): string | undefined;
  use(name: string): Promise<unknown>;
}

export interface MqttLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface MqttLinkOptions {
  /** Broker URL (`mqtt://host:port`); wins over host/port. */
  url?: string;
  host?: string;
  /** Default 1883. */
  port?: number;
  /** Default `FrameFi`, as the firmware. Every frame on one broker needs its own. */
  clientId?: string;
  username?: string;
  password?: string;
  /** Default `frame-fi`. Give each frame on one broker its own. */
  topicPrefix?: string;
  /** Default `homeassistant`. */
  discoveryPrefix?: string;
  /** Publish the Home Assistant discovery configs (default); false clears ours instead. */
  discovery?: boolean;
  /** Name of the device in Home Assistant; default `FrameFi`. */
  deviceName?: string;
  /** Wait between connection attempts; default 5000 ms. */
  retryMs?: number;
  /** Period of the state republish; default 300 000 ms (5 minutes). */
  statePeriodMs?: number;
  /** Time allowed for the broker's CONNACK; default 15 000 ms (PubSubClient's socket timeout). */
  connectTimeoutMs?: number;
  /** MQTT keepalive; default 15 s (PubSubClient's). */
  keepaliveSeconds?: number;
  log?: MqttLog;
}

export interface MqttStatus {
  state: number;
  connected: boolean;
}

const swVersion = (
  JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as {
    version: string;
  }
).version;

const silent: MqttLog = { info: () => {}, warn: () => {} };

/**
 * The largest packet taken in: commands are a few bytes (the firmware's PubSubClient keeps 256); anything larger
 * is dropped as it arrives, never held in memory.
 */
const MAX_INCOMING_PACKET_BYTES = 4096;

/** How long disable() waits for the broker to take the `offline` message before closing anyway. */
const OFFLINE_GRACE_MS = 2_000;

export class MqttLink extends EventEmitter<{ state: [MqttStatus] }> {
  readonly topics: MqttTopics;
  readonly #device: DeviceSide;
  readonly #url: string;
  readonly #o: Required<Omit<MqttLinkOptions, "url" | "host" | "port" | "username" | "password">> & {
    username?: string;
    password?: string;
  };
  #enabled = false;
  #state: number = MqttState.DISCONNECTED;
  #connected = false;
  /** The client of the current attempt or connection; undefined between attempts. */
  #client: MqttClient | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #periodTimer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  /** Resolves when the last disable() has closed its connection; enable() waits for it. */
  #closing: Promise<void> = Promise.resolve();
  /** Publishes run one after another, so an older state never lands after a newer one. */
  #publishing: Promise<void> = Promise.resolve();
  #changeQueued = false;
  #lastPublished = "";

  constructor(options: MqttLinkOptions, device: DeviceSide) {
    super();
    this.#device = device;
    this.#url = options.url ?? `mqtt://${options.host ?? "127.0.0.1"}:${options.port ?? 1883}`;
    this.#o = {
      clientId: options.clientId || "FrameFi",
      username: options.username || undefined,
      password: options.password || undefined,
      topicPrefix: (options.topicPrefix ?? "frame-fi").replace(/\/+$/, ""),
      discoveryPrefix: options.discoveryPrefix ?? "homeassistant",
      discovery: options.discovery ?? true,
      deviceName: options.deviceName ?? "FrameFi",
      retryMs: options.retryMs ?? 5_000,
      statePeriodMs: options.statePeriodMs ?? 300_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 15_000,
      keepaliveSeconds: options.keepaliveSeconds ?? 15,
      log: options.log ?? silent,
    };
    if (!this.#o.topicPrefix || /[#+]/.test(this.#o.topicPrefix)) {
      throw new Error(`MQTT topic prefix ${JSON.stringify(options.topicPrefix)} is not usable: give a non-empty prefix without # or +.`);
    }
    this.topics = topicsFor(this.#o.topicPrefix);
  }

  get enabled(): boolean {
    return this.#enabled;
  }
  /** PubSubClient state code (see MqttState). */
  get state(): number {
    return this.#state;
  }
  /** True only while connected to the broker. */
  get connected(): boolean {
    return this.#connected;
  }

  /** Starts connecting, and keeps retrying every retryMs until connected or disabled. */
  enable(): void {
    if (this.#enabled) return;
    this.#enabled = true;
    this.#unsubscribe = this.#device.onChange(() => this.#changed());
    this.#periodTimer = setInterval(() => this.#publishStatus(true), this.#o.statePeriodMs).unref();
    // The first attempt waits for mqtt.js; every later one comes after it.
    void Promise.all([loadMqtt(), this.#closing]).then(() => {
      if (this.#enabled && !this.#client) this.#connect();
    });
  }

  /** Publishes `offline`, closes the connection and stops retrying; `why` is logged when a connection closes. */
  disable(why = "MQTT disabled: disconnected from the broker."): Promise<void> {
    if (!this.#enabled) return this.#closing;
    this.#enabled = false;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#periodTimer);
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    const client = this.#client;
    const wasConnected = this.#connected;
    this.#client = undefined;
    this.#setState(MqttState.DISCONNECTED, false);
    this.#closing = client ? closeClient(client, wasConnected ? this.topics.availability : undefined) : Promise.resolve();
    if (client) this.#o.log.info(why);
    return this.#closing;
  }

  #connect(): void {
    let client: MqttClient;
    try {
      client = this.#open();
    } catch (err) {
      // A URL mqtt.js cannot use (no host, unknown protocol): report it like an unreachable broker.
      if (this.#state !== MqttState.CONNECT_FAILED) {
        this.#o.log.warn(`The MQTT broker address is not usable (${(err as Error).message}); set it with --mqtt-url, e.g. mqtt://host:1883.`);
      }
      this.#setState(MqttState.CONNECT_FAILED, false);
      this.#scheduleRetry();
      return;
    }
    this.#watch(client);
  }

  #scheduleRetry(): void {
    this.#retryTimer = setTimeout(() => {
      if (this.#enabled && !this.#client) this.#connect();
    }, this.#o.retryMs);
  }

  #open(): MqttClient {
    const { host, port } = brokerAddress(this.#url);
    const connection = (): Duplex =>
      limitIncoming(createConnection({ host, port }), MAX_INCOMING_PACKET_BYTES, ({ topic, bytes }) =>
        this.#o.log.warn(`MQTT ${printable(topic)}: ignored a ${bytes}-byte message (the limit is ${MAX_INCOMING_PACKET_BYTES} bytes).`),
      );
    return new mqtt!.MqttClient(connection, {
      protocolId: "MQTT",
      clientId: this.#o.clientId,
      username: this.#o.username,
      password: this.#o.password,
      protocolVersion: 4,
      clean: true,
      keepalive: this.#o.keepaliveSeconds,
      connectTimeout: this.#o.connectTimeoutMs,
      reconnectPeriod: 0,
      queueQoSZero: false,
      will: { topic: this.topics.availability, payload: Buffer.from("offline"), qos: 1, retain: true },
    });
  }

  /** Follows one connection attempt (and the connection it may become) until it closes. */
  #watch(client: MqttClient): void {
    this.#client = client;
    let connectedHere = false;
    let failure: number | undefined;
    let reason = "";

    client.on("connect", () => {
      if (client !== this.#client) return;
      connectedHere = true;
      this.#setState(MqttState.CONNECTED, true);
      this.#o.log.info(`MQTT connected to ${redact(this.#url)} as ${this.#o.clientId}.`);
      void this.#announce(client);
    });
    client.on("message", (topic, payload, packet) => {
      if (client === this.#client) this.#command(topic, payload.toString("utf8"), packet.retain);
    });
    client.on("error", (err) => {
      if (failure !== undefined) return;
      failure = classify(err, connectedHere);
      reason = err.message;
    });
    client.on("close", () => {
      if (client !== this.#client) return;
      this.#client = undefined;
      client.end(true);
      const code = connectedHere ? (failure === MqttState.CONNECTION_TIMEOUT ? failure : MqttState.CONNECTION_LOST) : (failure ?? MqttState.CONNECT_FAILED);
      if (code !== this.#state) {
        const what = connectedHere ? "MQTT connection lost" : `MQTT connection to ${redact(this.#url)} failed`;
        this.#o.log.warn(`${what} (state ${code}${reason ? `: ${reason}` : ""}); retrying every ${this.#o.retryMs / 1000} s.`);
      }
      this.#setState(code, false);
      this.#scheduleRetry();
    });
  }

  /** On every connect: subscribe, publish discovery configs, availability and state. */
  async #announce(client: MqttClient): Promise<void> {
    const t = this.topics;
    try {
      const pull = this.#device.pull !== undefined;
      const collections = await this.#device.collections?.names();
      const granted = await client.subscribeAsync(
        [t.displaySet, t.modeSet, t.restart, ...(pull ? [t.pullSet] : []), ...(collections ? [t.collectionSet] : [])],
        { qos: 1 },
      );
      for (const g of granted) {
        if (g.qos === 128) this.#o.log.warn(`The broker refused the subscription to ${g.topic}; check its ACL.`);
      }
      const configs = discoveryMessages({
        topics: t,
        topicPrefix: this.#o.topicPrefix,
        discoveryPrefix: this.#o.discoveryPrefix,
        deviceName: this.#o.deviceName,
        swVersion,
        pull,
        collections,
      });
      // Off, the configs an earlier run retained are cleared (an empty retained message deletes them), so
      // Home Assistant does not keep a second set of entities beside a user's own YAML.
      const on = this.#o.discovery;
      await Promise.all(configs.map((m) => client.publishAsync(m.topic, on ? JSON.stringify(m.config) : "", { qos: 1, retain: true })));
      await client.publishAsync(t.availability, "online", { qos: 1, retain: true });
    } catch (err) {
      // The connection went away mid-way; the close handler records the state and retries.
      if (client === this.#client) this.#o.log.warn(`MQTT announce failed: ${(err as Error).message}`);
      return;
    }
    this.#publishStatus(true);
  }

  #changed(): void {
    if (this.#changeQueued) return;
    this.#changeQueued = true;
    setImmediate(() => {
      this.#changeQueued = false;
      this.#publishStatus(false);
    });
  }

  /** Publishes state and display status; unless forced, only when they differ from the last publish. */
  #publishStatus(force: boolean): void {
    this.#publishing = this.#publishing.then(async () => {
      const client = this.#client;
      if (!client || !this.#connected) return;
      try {
        const status = await this.#device.status();
        const state = stateTopicPayload(status);
        const display = displayTopicPayload(status.display.status);
        const last = this.#device.pull?.last();
        const pull = last === undefined ? "" : JSON.stringify(last);
        // The collection the frame has, whoever switched it (the select, the web API).
        const collections = this.#device.collections;
        const collection = collections ? (collections.active() ?? "") : undefined;
        const published = JSON.stringify([state, display, pull, collection]);
        if (!force && published === this.#lastPublished) return;
        this.#lastPublished = published;
        await client.publishAsync(this.topics.state, state, { qos: 1, retain: true });
        await client.publishAsync(this.topics.displayStatus, display, { qos: 1, retain: true });
        if (pull !== "") await client.publishAsync(this.topics.pull, pull, { qos: 1, retain: true });
        if (collection !== undefined) await client.publishAsync(this.topics.collection, collection, { qos: 1, retain: true });
      } catch (err) {
        if (client === this.#client) this.#o.log.warn(`MQTT state publish failed: ${(err as Error).message}`);
      }
    });
  }

  #command(topic: string, text: string, retained: boolean): void {
    const t = this.topics;
    const shown = JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
    const run = (what: string, action: () => unknown): void => {
      this.#o.log.info(`MQTT ${topic}: ${what}.`);
      Promise.resolve()
        .then(action)
        .catch((err: unknown) => this.#o.log.warn(`MQTT ${topic}: ${what} failed: ${(err as Error).message}`));
    };
    if (topic === t.displaySet) {
      // As the firmware: exactly ON or OFF, and a retained command applies on every connect.
      if (text === "ON") run("display on", () => this.#device.setDisplay(true));
      else if (text === "OFF") run("display off", () => this.#device.setDisplay(false));
      else this.#o.log.warn(`MQTT ${topic}: ignored ${shown}; send ON or OFF.`);
    } else if (retained) {
      // A retained mode or restart command would act again on every reconnect.
      this.#o.log.warn(`MQTT ${topic}: ignored a retained ${shown}; publish commands without the retain flag.`);
    } else if (topic === t.modeSet) {
      const mode = text.trim().toLowerCase();
      if (mode === "ftp" || mode === "msc") run(`mode ${mode}`, () => this.#device.setMode(mode));
      else this.#o.log.warn(`MQTT ${topic}: ignored ${shown}; send ftp or msc.`);
    } else if (topic === t.collectionSet && this.#device.collections) {
      const collections = this.#device.collections;
      // Only a name the folder holds, exactly: the payload never becomes a path by itself.
      void collections.names().then(
        (names) => {
          if (!names.includes(text)) return this.#o.log.warn(`MQTT ${topic}: ignored ${shown}; send one of ${names.join(", ") || "(none)"}.`);
          run(`collection ${text}`, () => collections.use(text));
        },
        (err: unknown) => this.#o.log.warn(`MQTT ${topic}: cannot list the collections: ${(err as Error).message}`),
      );
    } else if (topic === t.restart) {
      if (text === "RESTART") run("restart", () => this.#device.restart());
      else this.#o.log.warn(`MQTT ${topic}: ignored ${shown}; send RESTART.`);
    } else if (topic === t.pullSet && this.#device.pull) {
      const pull = this.#device.pull;
      if (text === "PRESS") run("sync now", () => pull.now());
      else this.#o.log.warn(`MQTT ${topic}: ignored ${shown}; send PRESS.`);
    }
  }

  #setState(state: number, connected: boolean): void {
    if (state === this.#state && connected === this.#connected) return;
    this.#state = state;
    this.#connected = connected;
    if (!connected) this.#lastPublished = "";
    this.emit("state", { state, connected });
  }
}

export function createMqttLink(options: MqttLinkOptions, device: DeviceSide): MqttLink {
  return new MqttLink(options, device);
}

/** Maps an mqtt.js error to a PubSubClient state code. */
function classify(err: Error, connected: boolean): number {
  const code = (err as { code?: unknown }).code;
  if (!connected && typeof code === "number" && code >= 1 && code <= 5) return code;
  if (err.message === "connack timeout" || err.message === "Keepalive timeout") return MqttState.CONNECTION_TIMEOUT;
  return connected ? MqttState.CONNECTION_LOST : MqttState.CONNECT_FAILED;
}

/** Publishes `offline` (when connected) and disconnects cleanly, so the broker drops the last will. */
async function closeClient(client: MqttClient, availability: string | undefined): Promise<void> {
  if (availability) {
    const grace = new Promise<void>((res) => setTimeout(res, OFFLINE_GRACE_MS).unref());
    await Promise.race([client.publishAsync(availability, "offline", { qos: 1, retain: true }).catch(() => {}), grace]);
  }
  await new Promise<void>((res) => {
    const timer = setTimeout(() => client.end(true, () => res()), OFFLINE_GRACE_MS).unref();
    client.end(false, () => {
      clearTimeout(timer);
      res();
    });
  });
}

/** Host and port of an mqtt:// (or tcp://) broker URL; throws when there is no usable host. */
function brokerAddress(url: string): { host: string; port: number } {
  const u = new URL(url);
  if (!/^(mqtt|tcp):$/.test(u.protocol) || !u.hostname) throw new Error("no broker host given");
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: u.port ? Number(u.port) : 1883 };
}

/** A broker-chosen topic for a log line: control characters blanked, at most 128 characters. */
const printable = (text: string): string => {
  const shown = text.replace(UNPRINTABLE, " ");
  return shown.length > 128 ? `${shown.slice(0, 128)}…` : shown;
};

/** The URL without credentials, for logs. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return "the broker";
  }
}
