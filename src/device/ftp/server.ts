// The device's FTP server: listens while the device is in FTP mode, serving the card folder.
import { createServer, type Server } from "node:net";
import { listenEverywhere, listenOn } from "../../shared/listen.js";
import { DeviceError } from "../errors.js";
import { DATA_READ_BUFFER, plainAddress } from "./data.js";
import { Session } from "./session.js";
import type { FtpServer, FtpServerOptions } from "./types.js";

export type { FtpServer, FtpServerOptions } from "./types.js";

/** Connections in all; of those, at most so many waiting for their login, and at most so many from one address. */
const MAX_SESSIONS = 32;
const MAX_WAITING_LOGIN = 24;
const MAX_PER_ADDRESS = 16;

export function createFtpServer(options: FtpServerOptions): FtpServer {
  const log = options.log ?? ((): void => undefined);
  const sessions = new Set<Session>();
  let server: Server | undefined;
  let bound: { host: string; port: number } | undefined;

  const start = async (): Promise<void> => {
    if (server) throw new Error("The FTP server is already running.");
    const st = await options.card.stat(options.root).catch(() => undefined);
    if (!st?.isDirectory()) throw new Error(`The card folder ${options.root} does not exist or is not a folder.`);
    const ctx = { options, card: options.card, log, readBuffer: Buffer.allocUnsafeSlow(DATA_READ_BUFFER) };
    const srv = createServer((socket) => {
      const refusal = admission([...sessions], plainAddress(socket.remoteAddress));
      if (refusal) {
        log(`ftp ${plainAddress(socket.remoteAddress)}:${socket.remotePort}: refused: ${refusal}`);
        socket.on("error", () => undefined);
        socket.end(`421 ${refusal}; try again later.\r\n`);
        return;
      }
      const session = new Session(socket, ctx);
      sessions.add(session);
      void session.closed.then(() => sessions.delete(session));
    });
    // "::" falls back to every IPv4 address where the host has no IPv6, as the web API does.
    let host = options.host;
    try {
      if (host === "::") host = await listenEverywhere(srv, options.port);
      else await listenOn(srv, { host, port: options.port });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new DeviceError("DEVICE_FTP_PORT_UNAVAILABLE", { host: options.host, port: options.port, reason: err.code ?? err.message }, { cause: err });
    }
    const addr = srv.address();
    bound = { host, port: typeof addr === "object" && addr ? addr.port : options.port };
    server = srv;
    log(`ftp: listening on ${bound.host}:${bound.port}`);
  };

  const stop = async (): Promise<void> => {
    const srv = server;
    if (!srv) return;
    server = undefined;
    bound = undefined;
    const listenerClosed = new Promise<void>((resolve) => srv.close(() => resolve()));
    await Promise.all([...sessions].map((s) => s.close("421 FTP mode is ending; closing the connection.")));
    await listenerClosed;
    log("ftp: stopped");
  };

  return { start, stop, address: () => bound };
}

/** Why a new connection from `peer` is refused, or undefined when it may come in. */
function admission(sessions: Session[], peer: string): string | undefined {
  if (sessions.length >= MAX_SESSIONS) return "Too many connections";
  if (sessions.filter((s) => !s.authenticated).length >= MAX_WAITING_LOGIN) return "Too many connections waiting to log in";
  if (sessions.filter((s) => s.peer === peer).length >= MAX_PER_ADDRESS) return "Too many connections from your address";
  return undefined;
}
