// PORT and EPRT (RFC 2428): the server connects to the client for the next data connection.
import { isIP } from "node:net";
import { parseEprt, parsePort, plainAddress } from "../data.js";
import { Reply } from "../replies.js";
import type { Command, CommandSession } from "./command.js";

function connectTo(s: CommandSession, target: { host: string; port: number } | undefined): void {
  if (!target || !isIP(target.host)) throw new Reply(501, "Malformed address.");
  // Connecting anywhere but the client itself would let us be used to reach third parties (FTP bounce).
  if (plainAddress(target.host) !== s.peer || target.port < 1024) throw new Reply(504, "Data connections go only to your own address, port 1024 or above.");
  s.data.active(target.host, target.port);
  s.reply(200, "PORT command successful.");
}

export const port: Command = {
  verbs: ["PORT"],
  keepsRest: true,
  keepsAllo: true,
  handler: (s, arg) => connectTo(s, parsePort(arg)),
};

export const eprt: Command = {
  verbs: ["EPRT"],
  keepsRest: true,
  keepsAllo: true,
  handler: (s, arg) => connectTo(s, parseEprt(arg)),
};
