// The FrameFi firmware's contract (nicholaswilde/frame-fi, src/main.cpp): mode names, MQTT state codes, the
// bodies of its web API and of its MQTT state topic. The device service answers with these, the client reads
// them; where the firmware's docs/api.md and its code disagree, the code wins (it is what clients talk to).

export type Mode = "msc" | "ftp";
export type OnOff = "on" | "off";

export const MODE_MSC = "USB MSC";
export const MODE_FTP = "Application (FTP Server)";
export type ModeName = typeof MODE_MSC | typeof MODE_FTP;

/** The mode names the firmware reports (`GET /`, `GET /mode/…`, the MQTT state topic). */
export const MODE_NAMES: Readonly<Record<Mode, ModeName>> = { msc: MODE_MSC, ftp: MODE_FTP };

export function modeOf(name: ModeName): Mode {
  return name === MODE_FTP ? "ftp" : "msc";
}

/** How the firmware's messages name each mode ("Attempting to switch to MSC mode."). */
export const MODE_LABELS: Readonly<Record<Mode, string>> = { msc: "MSC", ftp: "Application (FTP)" };

/** PubSubClient's state codes, as `GET /` and `GET /mqtt/status` report them. */
export const MqttState = {
  CONNECTION_TIMEOUT: -4,
  CONNECTION_LOST: -3,
  CONNECT_FAILED: -2,
  DISCONNECTED: -1,
  CONNECTED: 0,
  CONNECT_BAD_PROTOCOL: 1,
  CONNECT_BAD_CLIENT_ID: 2,
  CONNECT_UNAVAILABLE: 3,
  CONNECT_BAD_CREDENTIALS: 4,
  CONNECT_UNAUTHORIZED: 5,
} as const;

/** Each state code's PubSubClient name ("MQTT_DISCONNECTED"). */
export const MQTT_STATES: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(MqttState).map(([name, code]) => [code, `MQTT_${name}`]));

// --- the bodies --------------------------------------------------------------------------------------------------

/** GET / */
export interface DeviceStatus {
  mode: ModeName;
  display: { status: OnOff; orientation: number };
  sd_card: { total_size: number; used_size: number; free_size: number; file_count: number };
  mqtt: { enabled: boolean; state: number; connected: boolean };
  led: { color: string; state: OnOff; brightness: number };
}

/** The answer of every POST: `success`, or `no_change` when a mode switch found the device already there. */
export interface ActionResult {
  status: "success" | "no_change";
  message: string;
}

/** GET /collections (beyond the firmware: a device started with --collections). */
export interface CollectionsStatus {
  status: "success";
  collections: string[];
  /** The collection the frame has; null when its card is not one of them. */
  current: string | null;
}

/** POST /collections/use (beyond the firmware). */
export interface CollectionUsed extends ActionResult {
  current: string;
}

/** Every error body: the firmware's `sendJsonResponse("error", …)`. */
export interface ErrorBody {
  status: "error";
  message: string;
}

/** GET /mode/msc and GET /mode/ftp (both report the current mode). */
export interface ModeStatus {
  status: "success";
  mode: ModeName;
}

/** GET /display/status */
export interface DisplayStatus {
  status: "success";
  display_status: OnOff;
}

/** GET /mqtt/status */
export interface MqttStatus {
  status: "success";
  mqtt_enabled: boolean;
  mqtt_connected: boolean;
  mqtt_state: number;
}

/** GET /led/status */
export interface LedStatus {
  status: "success";
  color: string;
  state: OnOff;
  brightness: number;
}

/** GET /led/brightness */
export interface Brightness {
  status: "success";
  brightness: number;
}

/** What the status body is made of: the device's state and its card's figures. */
export interface StatusFacts {
  mode: Mode;
  display: { on: boolean; orientation: number };
  mqtt: { enabled: boolean; state: number; connected: boolean };
  led: { on: boolean; color: string; brightness: number };
  card: { totalSize: number; usedSize: number; freeSize: number; fileCount: number };
}

const onOff = (on: boolean): OnOff => (on ? "on" : "off");

/** The body of `GET /`, fields in the firmware's order. */
export function statusBody(f: StatusFacts): DeviceStatus {
  return {
    mode: MODE_NAMES[f.mode],
    display: { status: onOff(f.display.on), orientation: f.display.orientation },
    sd_card: { total_size: f.card.totalSize, used_size: f.card.usedSize, free_size: f.card.freeSize, file_count: f.card.fileCount },
    mqtt: { enabled: f.mqtt.enabled, state: f.mqtt.state, connected: f.mqtt.connected },
    led: ledFields(f.led),
  };
}

/** The `frame-fi/state` payload: the status body's mode, display and sd_card, compact JSON. */
export function stateTopicPayload(s: Pick<DeviceStatus, "mode" | "display" | "sd_card">): string {
  return JSON.stringify({
    mode: s.mode,
    display: { status: s.display.status, orientation: s.display.orientation },
    sd_card: { total_size: s.sd_card.total_size, used_size: s.sd_card.used_size, free_size: s.sd_card.free_size, file_count: s.sd_card.file_count },
  });
}

/** The `frame-fi/display/status` payload. */
export const displayTopicPayload = (status: OnOff): "ON" | "OFF" => (status === "on" ? "ON" : "OFF");

function ledFields(led: StatusFacts["led"]): DeviceStatus["led"] {
  return { color: led.on ? led.color : "off", state: onOff(led.on), brightness: led.brightness };
}

const success = (message: string): ActionResult => ({ status: "success", message });

/** The bodies of the other endpoints, by what they say. */
export const bodies = {
  mode: (mode: Mode): ModeStatus => ({ status: "success", mode: MODE_NAMES[mode] }),
  switching: (mode: Mode): ActionResult => success(`Attempting to switch to ${MODE_LABELS[mode]} mode.`),
  alreadyIn: (mode: Mode): ActionResult => ({ status: "no_change", message: `Already in ${MODE_LABELS[mode]} mode.` }),
  restarting: success("Restarting device..."),
  wifiReset: success("Resetting WiFi and restarting..."),
  displayStatus: (on: boolean): DisplayStatus => ({ status: "success", display_status: onOff(on) }),
  displayTurned: (on: boolean): ActionResult => success(`Display turned ${onOff(on)}.`),
  displayToggled: (on: boolean): ActionResult => success(`Display toggled ${onOff(on)}.`),
  mqttStatus: (m: StatusFacts["mqtt"]): MqttStatus => ({ status: "success", mqtt_enabled: m.enabled, mqtt_connected: m.connected, mqtt_state: m.state }),
  /** "MQTT enabled.", "MQTT disabled.", "MQTT toggled.": the firmware appends "d." to the action's name. */
  mqttDone: (action: "enable" | "disable" | "toggle"): ActionResult => success(`MQTT ${action}d.`),
  ledStatus: (led: StatusFacts["led"]): LedStatus => ({ status: "success", ...ledFields(led) }),
  ledTurned: (on: boolean): ActionResult => success(`LED turned ${onOff(on)}.`),
  ledToggled: success("LED toggled."),
  brightness: (value: number): Brightness => ({ status: "success", brightness: value }),
  brightnessSet: (value: number): ActionResult => success(`LED brightness set to ${value}.`),
  uploaded: success("File uploaded successfully."),
} as const;

/** The firmware's error messages. */
export const errors = {
  brightnessInvalid: "Invalid brightness value. Body must be a plain text integer between 0 and 255.",
  uploadInMsc: "Cannot upload in MSC mode.",
} as const;
