// PASV and EPSV (RFC 2428): the server listens for the next data connection.
import { pasvAddress, plainAddress } from "../data.js";
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const pasv: Command = {
  verbs: ["PASV"],
  keepsRest: true,
  keepsAllo: true,
  async handler(s) {
    const host = s.ctx.options.publicAddress ?? plainAddress(s.localAddress);
    const channel = await s.data.passive(s.label);
    const address = pasvAddress(host, channel.port);
    if (!address) {
      s.data.close();
      throw new Reply(425, "PASV needs IPv4; use EPSV.");
    }
    s.reply(227, `Entering Passive Mode (${address}).`);
  },
};

export const epsv: Command = {
  verbs: ["EPSV"],
  keepsRest: true,
  keepsAllo: true,
  async handler(s, arg) {
    if (arg.trim().toUpperCase() === "ALL") return s.reply(200, "EPSV ALL ok.");
    const channel = await s.data.passive(s.label);
    s.reply(229, `Entering Extended Passive Mode (|||${channel.port}|).`);
  },
};
