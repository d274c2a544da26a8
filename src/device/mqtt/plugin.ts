// Plugs the MQTT link into the device service: one link per boot (settings re-read, as the firmware does
// on reboot), enabled and disabled with the state's MQTT flag, its status reported back into the state.
// The context is typed structurally, so this file depends only on what it uses of the device service.
import { statusBody, type Mode, type StatusFacts } from "../../shared/firmware.js";
import { createMqttLink, type Collections, type DeviceSide, type MqttLink, type MqttLinkOptions } from "./link.js";

/** What the plug-in uses of the device service's DeviceContext. */
export interface MqttPluginContext {
  config: { mqtt: { topicPrefix: string; discoveryPrefix: string; discovery: boolean } };
  state: {
    snapshot(): Omit<StatusFacts, "card">;
    on(event: "change", listener: (what: string) => void): unknown;
    off(event: "change", listener: (what: string) => void): unknown;
    setDisplay(on: boolean): unknown;
    setMode(mode: Mode): unknown;
    setMqttStatus(state: number, connected: boolean): void;
  };
  card: { figures(): Promise<StatusFacts["card"]> };
  settings: () => { mqttHost: string; mqttPort: number; mqttUser: string; mqttPassword: string; mqttClientId: string };
  /** With --collections: a select switches between them; their "change" brings the collection topic up to date. */
  collections?:
    | (Collections & {
        on(event: "change", listener: () => void): unknown;
        off(event: "change", listener: () => void): unknown;
      })
    | undefined;
  log: (message: string) => void;
}

/** What the plug-in uses of the Puller (--pull). */
export interface PullSide {
  readonly last: object | undefined;
  now(): void;
  on(event: "change", listener: () => void): unknown;
  off(event: "change", listener: () => void): unknown;
}

export interface MqttPlugin {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The running link (undefined while the device is down), for tests and diagnostics. */
  readonly link: MqttLink | undefined;
}

/** The changes the state topic carries. */
const PUBLISHED = new Set(["mode", "display", "card"]);

/** What the device has beyond the firmware's: a Puller (--pull). */
export interface MqttExtras {
  puller?: PullSide | undefined;
}

/**
 * The MQTT client as a device plug-in. `restart` reboots the device (the service's restart()).
 * `extra` overrides link options (tests use it for short retry periods).
 */
export function mqttPlugin(ctx: MqttPluginContext, restart: () => unknown, extra: Partial<MqttLinkOptions> = {}, extras: MqttExtras = {}): MqttPlugin {
  const { puller } = extras;
  const { collections } = ctx;
  let link: MqttLink | undefined;
  let onFlag: ((what: string) => void) | undefined;

  const device: DeviceSide = {
    status: async () => statusBody({ ...ctx.state.snapshot(), card: await ctx.card.figures() }),
    onChange(listener) {
      const l = (what: string): void => {
        if (PUBLISHED.has(what)) listener();
      };
      ctx.state.on("change", l);
      puller?.on("change", listener);
      collections?.on("change", listener);
      return () => {
        ctx.state.off("change", l);
        puller?.off("change", listener);
        collections?.off("change", listener);
      };
    },
    setDisplay: (on) => ctx.state.setDisplay(on),
    setMode: (mode) => ctx.state.setMode(mode),
    restart,
    ...(puller ? { pull: { last: () => puller.last, now: () => puller.now() } } : {}),
    collections,
  };

  return {
    get link() {
      return link;
    },
    async start() {
      const s = ctx.settings();
      const current = createMqttLink(
        {
          host: s.mqttHost,
          port: s.mqttPort,
          username: s.mqttUser,
          password: s.mqttPassword,
          clientId: s.mqttClientId,
          topicPrefix: ctx.config.mqtt.topicPrefix,
          discoveryPrefix: ctx.config.mqtt.discoveryPrefix,
          discovery: ctx.config.mqtt.discovery,
          log: { info: (m) => ctx.log(m), warn: (m) => ctx.log(`warning: ${m}`) },
          ...extra,
        },
        device,
      );
      link = current;
      current.on("state", ({ state, connected }) => ctx.state.setMqttStatus(state, connected));
      onFlag = (what) => {
        if (what !== "mqtt-enabled") return;
        if (ctx.state.snapshot().mqtt.enabled) current.enable();
        else void current.disable();
      };
      ctx.state.on("change", onFlag);
      if (ctx.state.snapshot().mqtt.enabled) current.enable();
    },
    async stop() {
      if (onFlag) ctx.state.off("change", onFlag);
      onFlag = undefined;
      const current = link;
      link = undefined;
      await current?.disable("MQTT: disconnected from the broker while the device stops or restarts.");
    },
  };
}
