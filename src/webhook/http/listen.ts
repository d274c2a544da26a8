// Listening: on -ip/-port or -socket as Go does, or on the socket systemd activation hands over
// (sd_listen_fds): when LISTEN_PID names this process, the listening socket systemd opened is fd 3 and the server takes it instead of binding -ip/-port or -socket.
// As go-systemd does for the reference, the variables are removed in any case, so commands the
// hooks run never inherit them.
import { existsSync, readFileSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";
import { listenEverywhere, listenOn } from "../../shared/listen.js";
import { errnoText } from "../go/errno.js";
import type { AddressInfo, Server } from "node:net";
import { type ErrorArgs, messageOf, WebhookError } from "../errors.js";

/** The first file descriptor systemd passes (SD_LISTEN_FDS_START). */
const LISTEN_FDS_START = 3;

export class ActivationError extends WebhookError {
  override readonly name = "ActivationError";
  constructor(...args: ErrorArgs<"WEBHOOK_SYSTEMD_SOCKETS" | "WEBHOOK_SYSTEMD_FD" | "WEBHOOK_SOCKET_SETUID">) {
    super(...args);
  }
}

/**
 * The fd systemd handed to this process, or undefined when there is none; throws ActivationError
 * when there is more than one (the reference serves one socket only).
 */
export function takeSystemdSocket(env: NodeJS.ProcessEnv = process.env, pid: number = process.pid): number | undefined {
  const listenPid = env["LISTEN_PID"];
  const listenFds = env["LISTEN_FDS"];
  delete env["LISTEN_PID"];
  delete env["LISTEN_FDS"];
  delete env["LISTEN_FDNAMES"];
  if (listenPid === undefined || !/^\d+$/.test(listenPid) || Number(listenPid) !== pid) return undefined;
  const count = listenFds !== undefined && /^\d+$/.test(listenFds) ? Number(listenFds) : 0;
  if (count === 0) return undefined;
  if (count > 1) throw new ActivationError("WEBHOOK_SYSTEMD_SOCKETS", { count });
  return LISTEN_FDS_START;
}

/** Serves on an inherited listening socket (TCP or Unix). */
export function listenOnFd(server: Server, fd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error): void => reject(new ActivationError("WEBHOOK_SYSTEMD_FD", { fd, reason: e.message }, { cause: e }));
    server.once("error", onError);
    try {
      server.listen({ fd }, () => {
        server.off("error", onError);
        resolve();
      });
    } catch (e) {
      onError(e as Error);
    }
  });
}

/** The path of the Unix socket behind an fd, from Linux's /proc (Node does not report it for an inherited one). */
function unixSocketPath(fd: number): string {
  try {
    const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
    // /proc/net/unix: "Num RefCount Protocol Flags Type St Inode Path"
    for (const line of readFileSync("/proc/net/unix", "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[6] === inode) return cols.slice(7).join(" ");
    }
  } catch {
    // Not Linux: the address is only printed, so an empty path will do.
  }
  return "";
}

/** The listening address as the reference prints it: "[::]:9000", "127.0.0.1:9000" or "{unix:/run/webhook.sock}". */
export function describeListener(server: Server, fd: number): string {
  const a = server.address();
  if (typeof a === "string") return `{unix:${a}}`;
  if (a === null) return `{unix:${unixSocketPath(fd)}}`;
  const { address, family, port } = a as AddressInfo;
  return family === "IPv6" ? `[${address}]:${port}` : `${address}:${port}`;
}

export type ListenAddress = { ip: string; port: number } | { socket: string };

/** Listens as Go does for the address: 0.0.0.0 (or "") also accepts IPv6 when the host has it. */
export async function listenAt(server: Server, address: ListenAddress): Promise<void> {
  if ("socket" in address) return listenOn(server, { path: address.socket });
  const { ip, port } = address;
  if (ip === "0.0.0.0" || ip === "") await listenEverywhere(server, port);
  else await listenOn(server, { host: ip, port });
}

/** The reference's message for a failed listen: "error listening on port: listen tcp 1.2.3.4:80: bind: …". */
export function listenError(address: ListenAddress, err: NodeJS.ErrnoException): string {
  if (err.code === "ERR_SOCKET_BAD_PORT" && "port" in address) return messageOf("WEBHOOK_BAD_PORT", { port: address.port });
  // Node reports a Unix socket in a missing folder as EACCES; the real reason is the folder.
  const code = "socket" in address && !existsSync(dirname(address.socket)) ? "ENOENT" : err.code;
  const known = errnoText(code);
  const reason = known ? `bind: ${known}` : err.message;
  const where = "socket" in address ? `unix ${address.socket}` : `tcp ${address.ip}:${address.port}`;
  return messageOf("WEBHOOK_LISTEN", { where, reason });
}

/** -ip as Go's net.Listen takes it: an IPv6 address in brackets ("[::1]"); ours takes it bare too. */
export function unbracket(ip: string): string {
  return /^\[.*\]$/.test(ip) ? ip.slice(1, -1) : ip;
}
