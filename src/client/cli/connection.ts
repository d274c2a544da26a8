// Where the device is and how to log in, from (first wins) the command line, FRAMEFI_* environment variables,
// the firmware scripts' variables in the environment, and the firmware scripts' `.env` file in the current folder.
// For one of several frames (`framefi sync kitchen`), its `[frame kitchen]` section comes right after the command
// line: it wins over the environment, which would otherwise make every frame the same.
import { join } from "node:path";
import { baseUrl, FrameFiError } from "../api/index.js";
import { hidePassword } from "../api/text.js";
import { FRAME_SECTION_KEYS, readEnvFile, type EnvValues } from "./env-file.js";
import { LAYOUT_KEYS } from "../sync/layout.js";
import type { SourceSecrets } from "../sources/source.js";
import { messageOf } from "../errors.js";
import { UsageError } from "./usage.js";

export interface ConnectionFlags {
  host?: string | undefined;
  /** -u user[:password] */
  user?: string | undefined;
  /** --ftp-user user[:password] */
  ftpUser?: string | undefined;
  ftpPort?: string | undefined;
}

export interface Credentials {
  user: string;
  /** Undefined: given without a password (`-u admin`); the CLI asks for it on a terminal. */
  password: string | undefined;
}

export interface Connection {
  host: string;
  /** Where `host` came from, for error messages. */
  hostFrom: "--host" | "FRAMEFI_DEVICE" | "FTP_HOST" | `HOST in [frame ${string}]`;
  /** Web credentials; undefined when none are configured (an open API). */
  web: Credentials | undefined;
  /** The FTP login and port; undefined: the library's default (the firmware's login, the port the device announces). */
  ftp: { user: string | undefined; password: string | undefined; host: string; port: number | undefined };
  /** The .env's LOCAL_DIR (sync's default folder) and REMOTE_DIR (default "/"). */
  localDir: string | undefined;
  remoteDir: string;
  /** The .env's photo profile, by key (FIT, QUALITY, …): [frame], then the frame's [profile NAME], then its own keys. */
  frame: Record<string, string>;
  /** ORDER and MAX_PER_FOLDER, from the same sections. */
  layout: Record<string, string>;
  /** A share's secrets (sync SOURCE): the frame's SOURCE_* keys, else FRAMEFI_SOURCE_* of the environment, else of the .env. */
  source: SourceSecrets;
}

/**
 * A hint for an answer that is not the device's: an address without a port means port 80, as on the firmware, but
 * our device service listens on 8080 by default; the API is at the device's root (`mentionPath`: say so when the
 * address has a path); else where the address came from, when not from --host.
 */
export function hostHint(conn: Connection, mentionPath = true): string {
  const host = hidePassword(conn.host);
  const given = conn.hostFrom === "FTP_HOST" ? `FTP_HOST="${host}" from the .env` : `${conn.hostFrom} ${host}`;
  let url: URL;
  try {
    url = new URL(baseUrl(conn.host));
  } catch {
    return "";
  }
  const path = mentionPath && url.pathname.length > 1 ? `; the device's API is at its root, without the path ${url.pathname}` : "";
  // Read from the text as given: URL drops an explicit default port (":80"), which is a port all the same.
  const hasPort = /:\d+(\/|$)/.test(conn.host.replace(/^[a-z]+:\/\//i, "").replace(/^\[[^\]]*\]/, ""));
  if (!hasPort && url.protocol === "http:") {
    return ` (${given} has no port, so the web API is taken at port 80, as on the firmware; for framefi-device add its port, e.g. ${url.host}:8080${path})`;
  }
  if (path) return ` (${given}${path}: e.g. ${url.origin})`;
  return conn.hostFrom === "--host" ? "" : ` (the address came from ${conn.hostFrom})`;
}

/** Splits "user:password" at the first colon; "user" alone has no password. */
export function splitUser(text: string): Credentials {
  const i = text.indexOf(":");
  return i < 0 ? { user: text, password: undefined } : { user: text.slice(0, i), password: text.slice(i + 1) };
}

function pick(...values: (string | undefined)[]): string | undefined {
  return values.find((v) => v !== undefined && v !== "");
}

function parsePort(text: string, from: string): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new UsageError("FRAMEFI_BAD_PORT", { from, value: text });
  return n;
}

/** A frame's profile keys: the [frame] section's, then its [profile NAME]'s, then its own. */
function profileOf(file: EnvValues, frame: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const take = (section: string, only?: readonly string[]): void => {
    for (const [k, v] of Object.entries(file)) {
      const key = k.startsWith(`${section}.`) ? k.slice(section.length + 1) : undefined;
      if (key !== undefined && v !== undefined && (!only || only.includes(key))) out[key] = v;
    }
  };
  take("frame");
  if (frame !== undefined) {
    const profile = file[`frame ${frame}.PROFILE`];
    if (profile !== undefined) {
      if (!Object.keys(file).some((k) => k.startsWith(`profile ${profile}.`))) throw new UsageError("FRAMEFI_NO_SUCH_PROFILE", { frame, profile });
      take(`profile ${profile}`);
    }
    take(`frame ${frame}`, FRAME_SECTION_KEYS.slice(FRAME_SECTION_KEYS.indexOf("PROFILE") + 1));
  }
  return out;
}

/** `frame`: the name of a [frame NAME] section of the .env, which must exist. */
export async function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv, cwd: string, frame?: string): Promise<Connection> {
  const file: EnvValues = await readEnvFile(join(cwd, ".env"));
  const sec = (key: string): string | undefined => (frame === undefined ? undefined : pick(file[`frame ${frame}.${key}`]));
  // The firmware's docs: variables passed in the environment override the .env file.
  const fw = (key: string): string | undefined => pick(sec(key), env[key], file[key]);

  // FRAMEFI_HOST is the device service's listen address (framefi-device --host), never the client's.
  const host = pick(flags.host, sec("HOST"), env.FRAMEFI_DEVICE, fw("FTP_HOST"));
  const hostFrom: Connection["hostFrom"] =
    pick(flags.host) !== undefined
      ? "--host"
      : sec("HOST") !== undefined
        ? `HOST in [frame ${frame}]`
        : pick(env.FRAMEFI_DEVICE) !== undefined
          ? "FRAMEFI_DEVICE"
          : "FTP_HOST";
  if (!host) {
    const old = pick(env.FRAMEFI_HOST) !== undefined ? " (FRAMEFI_HOST is the device service's listen address; the client reads FRAMEFI_DEVICE)" : "";
    throw new UsageError("FRAMEFI_NO_DEVICE_ADDRESS", { old });
  }

  let ftpHost: string;
  try {
    ftpHost = new URL(baseUrl(host)).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch (e) {
    const problem = e instanceof FrameFiError ? e.message : messageOf("FRAMEFI_BAD_ADDRESS", { host: hidePassword(host) });
    throw new UsageError("FRAMEFI_BAD_HOST", { from: hostFrom, problem });
  }

  let web: Credentials | undefined;
  if (flags.user === undefined && pick(sec("WEB_SERVER_USER"), sec("WEB_SERVER_PASSWORD")) !== undefined) {
    web = { user: sec("WEB_SERVER_USER") ?? "", password: sec("WEB_SERVER_PASSWORD") ?? "" };
  } else if (flags.user !== undefined || pick(env.FRAMEFI_USER) !== undefined) {
    web = splitUser(flags.user ?? env.FRAMEFI_USER!);
    // A user given without a password takes FRAMEFI_PASSWORD, as --ftp-user takes FRAMEFI_FTP_PASSWORD, unless
    // FRAMEFI_USER names another user: that password is not this one's.
    const envUser = pick(env.FRAMEFI_USER) === undefined ? undefined : splitUser(env.FRAMEFI_USER!).user;
    if (env.FRAMEFI_PASSWORD !== undefined && web.password === undefined && (envUser === undefined || envUser === web.user))
      web.password = env.FRAMEFI_PASSWORD;
  } else if (pick(fw("WEB_SERVER_USER"), fw("WEB_SERVER_PASSWORD")) !== undefined) {
    web = { user: fw("WEB_SERVER_USER") ?? "", password: fw("WEB_SERVER_PASSWORD") ?? "" };
  }

  const profile = profileOf(file, frame);
  const ftpGiven = flags.ftpUser !== undefined ? splitUser(flags.ftpUser) : undefined;
  const ftpUser = pick(ftpGiven?.user, sec("FTP_USER"), env.FRAMEFI_FTP_USER, fw("FTP_USER"));
  const ftpPassword = ftpGiven?.password ?? pick(sec("FTP_PASSWORD"), env.FRAMEFI_FTP_PASSWORD, fw("FTP_PASSWORD"));
  const portText = pick(flags.ftpPort, sec("FTP_PORT"), env.FRAMEFI_FTP_PORT);
  const portFrom = flags.ftpPort !== undefined ? "--ftp-port" : sec("FTP_PORT") !== undefined ? `FTP_PORT in [frame ${frame}]` : "FRAMEFI_FTP_PORT";
  const ftpPort = portText === undefined ? undefined : parsePort(portText, portFrom);

  return {
    host,
    hostFrom,
    web,
    ftp: { user: ftpUser, password: ftpPassword, host: ftpHost, port: ftpPort },
    localDir: pick(sec("SOURCE"), fw("LOCAL_DIR")),
    remoteDir: fw("REMOTE_DIR") ?? "/",
    frame: Object.fromEntries(Object.entries(profile).filter(([k]) => !LAYOUT_KEYS.includes(k))),
    layout: Object.fromEntries(Object.entries(profile).filter(([k]) => LAYOUT_KEYS.includes(k))),
    source: {
      password: pick(sec("SOURCE_PASSWORD"), env.FRAMEFI_SOURCE_PASSWORD, file.FRAMEFI_SOURCE_PASSWORD),
      keyFile: pick(sec("SOURCE_KEY_FILE"), env.FRAMEFI_SOURCE_KEY_FILE, file.FRAMEFI_SOURCE_KEY_FILE),
      knownHosts: pick(sec("SOURCE_KNOWN_HOSTS"), env.FRAMEFI_SOURCE_KNOWN_HOSTS, file.FRAMEFI_SOURCE_KNOWN_HOSTS),
    },
  };
}
