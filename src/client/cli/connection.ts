// Where the device is and how to log in, from (first wins) the command line, FRAMEFI_* environment variables,
// the firmware scripts' variables in the environment, and the firmware scripts' `.env` file in the current folder.
import { join } from "node:path";
import { baseUrl, FrameFiError } from "../api/index.js";
import { hidePassword } from "../api/text.js";
import { readEnvFile, type EnvValues } from "./env-file.js";
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
  hostFrom: "--host" | "FRAMEFI_DEVICE" | "FTP_HOST";
  /** Web credentials; undefined when none are configured (an open API). */
  web: Credentials | undefined;
  /** The FTP login and port; undefined: the library's default (the firmware's login, the port the device announces). */
  ftp: { user: string | undefined; password: string | undefined; host: string; port: number | undefined };
  /** The .env's LOCAL_DIR (sync's default folder) and REMOTE_DIR (default "/"). */
  localDir: string | undefined;
  remoteDir: string;
  /** The .env's [frame] section, by key (FIT, QUALITY, …). */
  frame: Record<string, string>;
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

export async function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv, cwd: string): Promise<Connection> {
  const file: EnvValues = await readEnvFile(join(cwd, ".env"));
  // The firmware's docs: variables passed in the environment override the .env file.
  const fw = (key: string): string | undefined => pick(env[key], file[key]);

  // FRAMEFI_HOST is the device service's listen address (framefi-device --host), never the client's.
  const host = pick(flags.host, env.FRAMEFI_DEVICE, fw("FTP_HOST"));
  const hostFrom = pick(flags.host) !== undefined ? "--host" : pick(env.FRAMEFI_DEVICE) !== undefined ? "FRAMEFI_DEVICE" : "FTP_HOST";
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
  if (flags.user !== undefined || pick(env.FRAMEFI_USER) !== undefined) {
    web = splitUser(flags.user ?? env.FRAMEFI_USER!);
    // A user given without a password takes FRAMEFI_PASSWORD, as --ftp-user takes FRAMEFI_FTP_PASSWORD, unless
    // FRAMEFI_USER names another user: that password is not this one's.
    const envUser = pick(env.FRAMEFI_USER) === undefined ? undefined : splitUser(env.FRAMEFI_USER!).user;
    if (env.FRAMEFI_PASSWORD !== undefined && web.password === undefined && (envUser === undefined || envUser === web.user))
      web.password = env.FRAMEFI_PASSWORD;
  } else if (pick(fw("WEB_SERVER_USER"), fw("WEB_SERVER_PASSWORD")) !== undefined) {
    web = { user: fw("WEB_SERVER_USER") ?? "", password: fw("WEB_SERVER_PASSWORD") ?? "" };
  }

  const ftpGiven = flags.ftpUser !== undefined ? splitUser(flags.ftpUser) : undefined;
  const ftpUser = pick(ftpGiven?.user, env.FRAMEFI_FTP_USER, fw("FTP_USER"));
  const ftpPassword = ftpGiven?.password ?? pick(env.FRAMEFI_FTP_PASSWORD, fw("FTP_PASSWORD"));
  const portText = pick(flags.ftpPort, env.FRAMEFI_FTP_PORT);
  const ftpPort = portText === undefined ? undefined : parsePort(portText, flags.ftpPort !== undefined ? "--ftp-port" : "FRAMEFI_FTP_PORT");

  return {
    host,
    hostFrom,
    web,
    ftp: { user: ftpUser, password: ftpPassword, host: ftpHost, port: ftpPort },
    localDir: fw("LOCAL_DIR"),
    remoteDir: fw("REMOTE_DIR") ?? "/",
    frame: Object.fromEntries(Object.entries(file).flatMap(([k, v]) => (k.startsWith("frame.") && v !== undefined ? [[k.slice(6), v]] : []))),
  };
}
