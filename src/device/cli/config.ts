// Start-up configuration of the device service: flags, FRAMEFI_* environment variables and a JSON config file.
// Precedence: flag > environment variable > config file > default.
import { readPasswordFile, type PullConfig } from "../pull/puller.js";
import { hideSourcePassword } from "../../client/sources/source.js";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { isIPv4 } from "node:net";
import { DeviceError, type ErrorCode } from "../errors.js";
import { parseArgs } from "node:util";

export interface MqttConfig {
  host: string;
  port: number;
  user: string;
  password: string;
  clientId: string;
  topicPrefix: string;
  /** Prefix of the Home Assistant discovery topics. */
  discoveryPrefix: string;
  /** Publish Home Assistant discovery configs (off: clear ours, for users of the firmware's YAML). */
  discovery: boolean;
  /** Whether the client is enabled until the user changes it (persisted settings win). */
  enabled: boolean;
}

export interface DeviceConfig {
  host: string;
  port: number;
  card: string;
  /** Emulated card capacity in bytes; undefined = the capacity of the folder's filesystem. */
  cardSize: number | undefined;
  state: string;
  webUser: string;
  webPassword: string;
  readonlyUser: string;
  readonlyPassword: string;
  ftpUser: string;
  ftpPassword: string;
  ftpPort: number;
  /** Inclusive range of ports for passive data connections; undefined = any free port. */
  ftpPassivePorts: [number, number] | undefined;
  /** IPv4 address announced in PASV replies (for clients behind NAT); undefined = the address the client reached. */
  ftpPublicAddress: string | undefined;
  /** Refuse FTP block mode (MODE B) as the firmware's FTP server does. */
  ftpStreamOnly: boolean;
  setupHost: string;
  setupPort: number;
  mqtt: MqttConfig;
  orientation: number;
  brightness: number;
  /** Seconds between background rescans of the card folder. */
  rescanInterval: number;
  /** Milliseconds the simulated boot takes (LED yellow, API down). */
  bootDelay: number;
  /** Refuse names and sizes a FAT32 card cannot hold (always on with a USB gadget). */
  fatNames: boolean;
  /** The real USB mass-storage gadget: the card is this FAT32 image (or block device); undefined = simulated USB. */
  usbGadget: { image: string; udc: string | undefined; sort: boolean } | undefined;
  /** The collections the frame can be switched between: card images NAME.img (--usb-gadget), else folders NAME. */
  collections: string | undefined;
  /** Host names the web API and setup page answer besides IP literals and localhost names ("*" = any). */
  allowedHosts: string[];
  /** Seconds a request head may take to arrive, and a body may go without bringing 4 KiB. */
  requestTimeout: number;
  /** Failed web logins from one address before each further attempt must wait. */
  loginAttempts: number;
  /** --pull: the device fetches its photos itself (src/device/pull/). */
  pull: PullConfig | undefined;
}

type Kind = "string" | "int" | "size" | "bool";

interface FlagSpec {
  name: string;
  kind: Kind;
  help: string;
  default?: string;
}

export const FLAGS: readonly FlagSpec[] = [
  { name: "host", kind: "string", default: "::", help: "address the web API listens on (:: = every IPv4 and IPv6 address)" },
  { name: "port", kind: "int", default: "8080", help: "port of the web API" },
  { name: "card", kind: "string", default: "./sdcard", help: "folder that plays the SD card (created if missing)" },
  { name: "card-size", kind: "size", help: "emulate a card of this capacity, enforced (e.g. 8GiB, 500MB, 1000000); default: the folder's filesystem" },
  { name: "state", kind: "string", default: "./framefi-state", help: "folder for the persisted settings (settings.json)" },
  {
    name: "web-user",
    kind: "string",
    default: "",
    help: "web API user; blank = no authentication (as on the firmware: a password alone does not switch it on)",
  },
  { name: "web-password", kind: "string", default: "", help: "web API password" },
  { name: "read-only-user", kind: "string", default: "", help: "optional read-only account: every GET allowed, every POST answered 403" },
  { name: "read-only-password", kind: "string", default: "", help: "password of the read-only account" },
  { name: "ftp-user", kind: "string", default: "user", help: "FTP user (FTP mode)" },
  { name: "ftp-password", kind: "string", default: "password", help: "FTP password" },
  { name: "ftp-port", kind: "int", default: "2121", help: "FTP control port (the FTP server runs while the device is in FTP mode)" },
  { name: "ftp-passive-ports", kind: "string", help: "port range for passive FTP data connections, e.g. 50000-50100; default: any free port" },
  { name: "ftp-public-address", kind: "string", help: "IPv4 address announced in passive FTP replies when clients reach the device through NAT" },
  {
    name: "ftp-stream-only",
    kind: "bool",
    help: "refuse FTP block mode (MODE B) with the firmware's 504, as the dongle does; framefi sync then opens a data connection per file",
  },
  { name: "setup-host", kind: "string", help: "address of the Wi-Fi setup page after a Wi-Fi reset (default: --host)" },
  { name: "setup-port", kind: "int", default: "8081", help: "port of the Wi-Fi setup page (the device's own access point)" },
  { name: "mqtt-url", kind: "string", help: "MQTT broker, mqtt://[user:password@]host[:port]; enables the MQTT client" },
  { name: "mqtt-user", kind: "string", help: "MQTT user (overrides the one in --mqtt-url)" },
  { name: "mqtt-password", kind: "string", help: "MQTT password (overrides the one in --mqtt-url)" },
  { name: "mqtt-client-id", kind: "string", default: "FrameFi", help: "MQTT client id" },
  { name: "mqtt-topic-prefix", kind: "string", default: "frame-fi", help: "prefix of the MQTT topics (give each frame on one broker its own)" },
  { name: "mqtt-discovery-prefix", kind: "string", default: "homeassistant", help: "prefix of the Home Assistant MQTT discovery topics" },
  {
    name: "ha-discovery",
    kind: "bool",
    help: "announce the frame to Home Assistant (MQTT discovery); leave off with the firmware's YAML (both together show every entity twice)",
  },
  { name: "orientation", kind: "int", default: "1", help: "display orientation 0-3 (0 portrait, 1 landscape, 2 portrait inverted, 3 landscape inverted)" },
  { name: "brightness", kind: "int", default: "13", help: "LED brightness 0-255 until changed through the API" },
  { name: "rescan-interval", kind: "int", default: "300", help: "seconds between background rescans of the card folder" },
  { name: "boot-delay", kind: "int", default: "300", help: "milliseconds a simulated boot takes" },
  {
    name: "firmware-ports",
    kind: "bool",
    help: "the dongle's ports as defaults: web API and setup page 80, FTP 21, passive data port 50009 (ports below 1024 need root or CAP_NET_BIND_SERVICE)",
  },
  {
    name: "fat-names",
    kind: "bool",
    help: 'refuse what a FAT32 card cannot hold: names with " * : < > ? \\ |, names differing only in case, files of 4 GiB or more',
  },
  { name: "usb-gadget", kind: "bool", help: "be a real USB drive (Linux configfs gadget): the card is --card-image, mounted at --card in FTP mode" },
  { name: "card-image", kind: "string", help: "with --usb-gadget: the FAT32 card image (created with --card-size if missing) or a block device" },
  {
    name: "sort-card",
    kind: "bool",
    help: "with --usb-gadget: sort every folder of the card by name (fatsort) before the frame gets it back, for frames that play in directory order",
  },
  {
    name: "collections",
    kind: "string",
    help: "a folder of collections the frame can be switched between (web API, MQTT select): card images NAME.img with --usb-gadget, else folders NAME",
  },
  { name: "gadget-udc", kind: "string", help: "with --usb-gadget: the USB device controller to bind to (default: the first in /sys/class/udc)" },
  {
    name: "allowed-host",
    kind: "string",
    help: "host names (comma-separated) the web API and setup page answer besides IP addresses, localhost and this machine's name; * = any",
  },
  {
    name: "login-attempts",
    kind: "int",
    default: "5",
    help: "failed logins (web and FTP together) from one address before each further attempt must wait (1 s, doubling up to 60 s)",
  },
  {
    name: "pull",
    kind: "string",
    help: "fetch the photos from this folder or share (webdav[s]://, sftp://, smb://; password in FRAMEFI_SOURCE_PASSWORD) after start and --every",
  },
  { name: "every", kind: "string", help: "with --pull: time between pulls, e.g. 30m, 1h (default), 1d" },
  { name: "pull-delete", kind: "bool", help: "with --pull: also delete what the source no longer has (at most half the card's files a pull)" },
  { name: "pull-fit", kind: "string", help: "with --pull: convert photos for a frame of this size, e.g. 1024x600 (upright baseline JPEG)" },
  {
    name: "pull-password-file",
    kind: "string",
    help: "with --pull: the share's password is this file's first line (read at each pull; else FRAMEFI_SOURCE_PASSWORD)",
  },
  { name: "request-timeout", kind: "int", default: "20", help: "seconds a request's head may take to arrive, and its body may go without bringing 4 KiB" },
];

/** The real dongle's ports (its WebServer, WiFiManager portal and SimpleFTPServer), for --firmware-ports on. */
const FIRMWARE_PORTS: Readonly<Record<string, string>> = {
  port: "80",
  "setup-port": "80",
  "ftp-port": "21",
  "ftp-passive-ports": "50009-50009",
};

/** A wrong start-up option (a flag, a FRAMEFI_* variable or the config file); its row's exit code is 2. */
export class OptionError extends DeviceError<OptionErrorCode> {
  override name = "OptionError";
}
type OptionErrorCode = Extract<ErrorCode, `DEVICE_OPTION_${string}` | `DEVICE_CONFIG_FILE_${string}`>;

export function envName(flag: string): string {
  return `FRAMEFI_${flag.toUpperCase().replace(/-/g, "_")}`;
}

export function helpText(): string {
  const lines = [
    "Usage: framefi-device [options]",
    "",
    "The FrameFi picture-frame firmware's web API as a Node service. The card is a folder;",
    "display, LED, USB mass storage and Wi-Fi are simulated.",
    "",
    "Options (each also as the environment variable shown, and as a key of the --config file):",
  ];
  for (const f of FLAGS) {
    const arg = f.kind === "int" ? " N" : f.kind === "size" ? " SIZE" : f.kind === "bool" ? "" : " VALUE";
    const def = f.default !== undefined && f.default !== "" ? ` (default ${f.default})` : "";
    lines.push(`  --${f.name}${arg}`, `      ${f.help}${def}  [${envName(f.name)}]`);
  }
  lines.push(
    "  --config FILE",
    '      JSON file whose keys are the option names above, e.g. {"port": 8080, "card-size": "8GiB"}  [FRAMEFI_CONFIG]',
    "  -h, --help",
    "      print this help and exit",
    "  --version",
    "      print the version and exit",
  );
  return lines.join("\n") + "\n";
}

const UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4,
};

export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new OptionError("DEVICE_OPTION_BAD_SIZE", { text });
  const bytes = Math.floor(Number(m[1]) * unit);
  if (bytes <= 0) throw new OptionError("DEVICE_OPTION_SIZE_NOT_POSITIVE", { text });
  return bytes;
}

function bool(name: string, text: string | undefined): boolean {
  if (text === undefined || /^(false|0|no|off|)$/i.test(text.trim())) return false;
  if (/^(true|1|yes|on)$/i.test(text.trim())) return true;
  throw new OptionError("DEVICE_OPTION_NOT_BOOLEAN", { name, text });
}

function parseIntValue(name: string, text: string): number {
  if (!/^\s*-?\d+\s*$/.test(text)) throw new OptionError("DEVICE_OPTION_NOT_INTEGER", { name, text });
  return Number(text);
}

function inRange(name: string, v: number, lo: number, hi: number): number {
  if (v < lo || v > hi) throw new OptionError("DEVICE_OPTION_OUT_OF_RANGE", { name, low: lo, high: hi, value: v });
  return v;
}

function parsePortRange(text: string): [number, number] {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  const low = Number(m?.[1]);
  const high = Number(m?.[2]);
  if (!m || low < 1 || high > 65535 || low > high) {
    throw new OptionError("DEVICE_OPTION_BAD_PASSIVE_PORTS", { text });
  }
  return [low, high];
}

/** MQTT topic prefixes: non-empty, no wildcards (they would make every topic a filter). */
/** --every: "30m", "1h", "1d" (s, m, h, d), from a minute to 30 days. */
function parseEvery(text: string): number {
  const m = /^(\d{1,6})([smhd])$/.exec(text.trim());
  const ms = m ? Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"] : NaN;
  if (!(ms >= 60_000 && ms <= 30 * 86_400_000)) throw new OptionError("DEVICE_OPTION_BAD_EVERY", { text });
  return ms;
}

function pullConfig(raw: (name: string) => string | undefined, cwd: string): PullConfig | undefined {
  const source = raw("pull");
  if (!source) {
    for (const name of ["every", "pull-delete", "pull-fit", "pull-password-file"])
      if (raw(name) !== undefined) throw new OptionError("DEVICE_OPTION_PULL_NEEDS_SOURCE", { name });
    return undefined;
  }
  // A password in the URL would sit in the process list and in shell histories: refused before anything starts.
  // The user part may hold an @ ("u@x:pw@h"): everything before the last @ of the authority is the login.
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(source)?.[1];
  if (scheme !== undefined && /^[a-z][a-z0-9+.-]*:\/\/[^/]*:[^/]*@/i.test(source)) {
    throw new OptionError("DEVICE_OPTION_PULL_PASSWORD_IN_URL", { source: hideSourcePassword(source) });
  }
  // A URL that does not parse may hold a password with a / in it: refused without showing it.
  if (scheme !== undefined && !URL.canParse(source)) throw new OptionError("DEVICE_OPTION_PULL_BAD_URL", { scheme });
  const passwordFile = raw("pull-password-file");
  if (passwordFile !== undefined) checkPasswordFile(resolve(cwd, passwordFile));
  return {
    source: /^[a-z]+:\/\//i.test(source) ? source : resolve(cwd, source),
    everyMs: parseEvery(raw("every") ?? "1h"),
    delete: bool("pull-delete", raw("pull-delete")),
    fit: raw("pull-fit"),
    passwordFile: passwordFile === undefined ? undefined : resolve(cwd, passwordFile),
  };
}

/** --pull-password-file must be readable at start; what it holds is never shown. */
function checkPasswordFile(path: string): void {
  try {
    readPasswordFile(path);
  } catch (e) {
    throw new OptionError("DEVICE_OPTION_PULL_PASSWORD_FILE", { path, reason: (e as Error).message }, { cause: e });
  }
}

function topicPrefix(name: string, text: string): string {
  const prefix = text.replace(/\/+$/, "");
  if (prefix === "" || /[#+\0]/.test(prefix)) throw new OptionError("DEVICE_OPTION_BAD_TOPIC", { name, text });
  return prefix;
}

function parseIpv4(text: string): string {
  if (isIPv4(text)) return text;
  throw new OptionError("DEVICE_OPTION_BAD_PUBLIC_ADDRESS", { text });
}

export type ParsedCli = { action: "help" } | { action: "version" } | { action: "run"; config: DeviceConfig };

/** Parses argv (without node and script) and env into a configuration. Throws OptionError on bad input. */
export function parseCli(argv: string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): ParsedCli {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
    version: { type: "boolean" },
  };
  for (const f of FLAGS) options[f.name] = { type: f.kind === "bool" ? "boolean" : "string" };
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new OptionError("DEVICE_OPTION_UNKNOWN", { problem: (e as Error).message }, { cause: e });
  }
  if (values.help) return { action: "help" };
  if (values.version) return { action: "version" };

  const fileValues: Record<string, unknown> = {};
  const configPath = (values.config as string | undefined) ?? env.FRAMEFI_CONFIG;
  if (configPath) {
    let text: string;
    try {
      text = readFileSync(resolve(cwd, configPath), "utf8");
    } catch (e) {
      throw new OptionError("DEVICE_CONFIG_FILE_UNREADABLE", { file: configPath, reason: (e as Error).message }, { cause: e });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      // JSON.parse quotes the text around the error, which may hold a password: give only the place.
      const at = /position (\d+)/.exec((e as Error).message);
      const where = at ? ` at line ${text.slice(0, Number(at[1])).split("\n").length}` : "";
      throw new OptionError("DEVICE_CONFIG_FILE_NOT_JSON", { file: configPath, where });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new OptionError("DEVICE_CONFIG_FILE_NOT_OBJECT", { file: configPath });
    }
    for (const [k, v] of Object.entries(parsed)) {
      if (!FLAGS.some((f) => f.name === k)) throw new OptionError("DEVICE_CONFIG_FILE_UNKNOWN_KEY", { file: configPath, key: k });
      if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") {
        throw new OptionError("DEVICE_CONFIG_FILE_BAD_VALUE", { file: configPath, key: k });
      }
      fileValues[k] = String(v);
    }
  }

  /** The value the user gave: flag, then environment, then config file. */
  const given = (name: string): string | undefined => {
    const flag = values[name];
    if (typeof flag === "string") return flag;
    if (flag === true) return "true";
    return env[envName(name)] ?? (fileValues[name] as string | undefined);
  };
  const firmwarePorts = bool("firmware-ports", given("firmware-ports"));
  const raw = (name: string): string | undefined =>
    given(name) ?? (firmwarePorts ? FIRMWARE_PORTS[name] : undefined) ?? FLAGS.find((f) => f.name === name)?.default;
  const str = (name: string): string => raw(name) ?? "";
  const int = (name: string): number => parseIntValue(name, str(name));

  const host = str("host");
  if (/^[a-z]+:\/\/|^[^:]*:\d+$/i.test(host)) {
    const from = typeof values.host === "string" ? "--host" : env.FRAMEFI_HOST !== undefined ? "FRAMEFI_HOST" : "host (config file)";
    throw new OptionError("DEVICE_OPTION_HOST_HAS_PORT", { from, host });
  }
  const mqttUrl = raw("mqtt-url");
  let mqttHost = "";
  let mqttPort = 1883;
  let mqttUser = "";
  let mqttPassword = "";
  if (mqttUrl) {
    let u: URL;
    try {
      u = new URL(mqttUrl);
    } catch {
      throw new OptionError("DEVICE_OPTION_BAD_MQTT_URL", {});
    }
    if (u.protocol !== "mqtt:" && u.protocol !== "tcp:") throw new OptionError("DEVICE_OPTION_BAD_MQTT_SCHEME", { protocol: u.protocol });
    mqttHost = u.hostname.replace(/^\[|\]$/g, "");
    mqttPort = u.port ? Number(u.port) : 1883;
    mqttUser = decodeURIComponent(u.username);
    mqttPassword = decodeURIComponent(u.password);
  }
  const cardSizeText = raw("card-size");
  const passivePorts = raw("ftp-passive-ports");
  const publicAddress = raw("ftp-public-address");
  const usbGadget = bool("usb-gadget", raw("usb-gadget"));
  const cardImage = raw("card-image");
  if (usbGadget && !cardImage) throw new OptionError("DEVICE_OPTION_GADGET_NEEDS_IMAGE", {});
  const sortCard = bool("sort-card", raw("sort-card"));
  if (sortCard && !usbGadget) throw new OptionError("DEVICE_OPTION_NEEDS_GADGET", { option: "--sort-card" });
  const collections = raw("collections");

  const config: DeviceConfig = {
    host,
    port: inRange("port", int("port"), 0, 65535),
    card: resolve(cwd, str("card")),
    cardSize: cardSizeText ? parseSize(cardSizeText) : undefined,
    state: resolve(cwd, str("state")),
    webUser: str("web-user"),
    webPassword: str("web-password"),
    readonlyUser: str("read-only-user"),
    readonlyPassword: str("read-only-password"),
    ftpUser: str("ftp-user"),
    ftpPassword: str("ftp-password"),
    ftpPort: inRange("ftp-port", int("ftp-port"), 0, 65535),
    ftpPassivePorts: passivePorts ? parsePortRange(passivePorts) : undefined,
    ftpStreamOnly: bool("ftp-stream-only", raw("ftp-stream-only")),
    ftpPublicAddress: publicAddress ? parseIpv4(publicAddress) : undefined,
    setupHost: raw("setup-host") ?? host,
    setupPort: inRange("setup-port", int("setup-port"), 0, 65535),
    mqtt: {
      host: mqttHost,
      port: mqttPort,
      user: raw("mqtt-user") ?? mqttUser,
      password: raw("mqtt-password") ?? mqttPassword,
      clientId: str("mqtt-client-id"),
      topicPrefix: topicPrefix("mqtt-topic-prefix", str("mqtt-topic-prefix")),
      discoveryPrefix: topicPrefix("mqtt-discovery-prefix", str("mqtt-discovery-prefix")),
      discovery: bool("ha-discovery", raw("ha-discovery")),
      enabled: mqttHost !== "",
    },
    orientation: inRange("orientation", int("orientation"), 0, 3),
    brightness: inRange("brightness", int("brightness"), 0, 255),
    rescanInterval: inRange("rescan-interval", int("rescan-interval"), 1, 86_400),
    bootDelay: inRange("boot-delay", int("boot-delay"), 0, 60_000),
    fatNames: usbGadget || bool("fat-names", raw("fat-names")),
    usbGadget: usbGadget ? { image: resolve(cwd, cardImage!), udc: raw("gadget-udc"), sort: sortCard } : undefined,
    collections: collections ? resolve(cwd, collections) : undefined,
    allowedHosts: (raw("allowed-host") ?? "")
      .split(",")
      .map((h) => h.trim())
      .filter((h) => h !== ""),
    loginAttempts: inRange("login-attempts", int("login-attempts"), 1, 1_000_000),
    requestTimeout: inRange("request-timeout", int("request-timeout"), 1, 3_600),
    pull: pullConfig(raw, cwd),
  };
  return { action: "run", config };
}
