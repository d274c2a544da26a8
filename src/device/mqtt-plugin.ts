// Plugs the MQTT link into the device service: one link per boot (settings re-read, as the firmware does
// on reboot), enabled and disabled with the state's MQTT flag, its status reported back into the state.
// The context is typed structurally, so this file depends only on what it uses of the device service.
import { createMqttLink, type DeviceSide, type MqttLink, type MqttLinkOptions, type StatusView } from "./mqtt.js";

type Mode = "msc" | "ftp";

/** What the plug-in uses of the device service's DeviceContext. */
export interface MqttPluginContext {
  config: { mqtt: { topicPrefix: string; discoveryPrefix: string; discovery: boolean } };
  state: {
    snapshot(): { mode: Mode; display: { on: boolean; orientation: number }; mqtt: { enabled: boolean } };
    on(event: "change", listener: (what: string) => void): unknown;
    off(event: "change", listener: (what: string) => void): unknown;
    setDisplay(on: boolean): unknown;
    setMode(mode: Mode): unknown;
    setMqttStatus(state: number, connected: boolean): void;
  };
  card: { figures(): Promise<{ totalSize: number; usedSize: number; freeSize: number; fileCount: number }> };
  settings: () => { mqttHost: string; mqttPort: number; mqttUser: string; mqttPassword: string; mqttClientId: string };
  log: (message: string) => void;
}

export interface MqttPlugin {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The running link (undefined while the device is down), for tests and diagnostics. */
  readonly link: MqttLink | undefined;
}

const MODE_NAMES: Record<Mode, string> = { msc: "USB MSC", ftp: "Application (FTP Server)" };
/** The changes the state topic carries. */
const PUBLISHED = new Set(["mode", "display", "card"]);

/**
 * The MQTT client as a device plug-in. `restart` reboots the device (the service's restart()).
 * `extra` overrides link options (tests use it for short retry periods).
 */
export function mqttPlugin(ctx: MqttPluginContext, restart: () => unknown, extra: Partial<MqttLinkOptions> = {}): MqttPlugin {
  let link: MqttLink | undefined;
  let onFlag: ((what: string) => void) | undefined;

  const device: DeviceSide = {
    status: async (): Promise<StatusView> => {
      const s = ctx.state.snapshot();
      const f = await ctx.card.figures();
      return {
        mode: MODE_NAMES[s.mode],
        display: { status: s.display.on ? "on" : "off", orientation: s.display.orientation },
        sd_card: { total_size: f.totalSize, used_size: f.usedSize, free_size: f.freeSize, file_count: f.fileCount },
      };
    },
    onChange(listener) {
      const l = (what: string): void => {
        if (PUBLISHED.has(what)) listener();
      };
      ctx.state.on("change", l);
      return () => void ctx.state.off("change", l);
    },
    setDisplay: (on) => ctx.state.setDisplay(on),
    setMode: (mode) => ctx.state.setMode(mode),
    restart,
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
