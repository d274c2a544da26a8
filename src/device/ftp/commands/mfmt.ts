// MFMT time path (draft-somers-ftp-mfxx): sets a file's modification time, so syncs can compare times.
import { parseTimeVal, timeVal } from "../../../shared/ftp-time.js";
import { cardReply, Reply } from "../replies.js";
import type { Command } from "./command.js";

export const mfmt: Command = {
  verbs: ["MFMT"],
  async handler(s, arg) {
    const space = arg.indexOf(" ");
    const when = parseTimeVal(space < 0 ? arg : arg.slice(0, space));
    if (!when || space < 0) throw new Reply(501, "Usage: MFMT YYYYMMDDHHMMSS path.");
    const { path, real } = await s.existing(arg.slice(space + 1));
    try {
      s.ctx.card.setTime(real, when);
    } catch (e) {
      cardReply(e);
    }
    s.reply(213, `Modify=${timeVal(when)}; ${path}`);
  },
};
