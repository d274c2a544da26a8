// MDTM (RFC 3659): a file's modification time.
import { timeVal } from "../../../shared/ftp-time.js";
import type { Command } from "./command.js";

export const mdtm: Command = {
  verbs: ["MDTM"],
  async handler(s, arg) {
    const { real } = await s.existing(arg);
    s.reply(213, timeVal((await s.ctx.card.stat(real)).mtime));
  },
};
