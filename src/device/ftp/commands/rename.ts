// RNFR from, then RNTO to: renames or moves an entry (a link itself, not its target), the new name checked in the
// same turn of the event loop as the rename.
import { cardReply, Reply } from "../replies.js";
import type { Command } from "./command.js";

export const rnfr: Command = {
  verbs: ["RNFR"],
  async handler(s, arg) {
    if (!arg) throw new Reply(501, "RNFR needs a name.");
    const { path } = await s.existing(arg);
    if (path === "/") throw new Reply(550, "The card's root cannot be renamed.");
    s.renameFrom = path;
    s.reply(350, "Ready for RNTO.");
  },
};

export const rnto: Command = {
  verbs: ["RNTO"],
  keepsRename: true,
  async handler(s, arg) {
    const from = s.renameFrom;
    s.renameFrom = undefined;
    if (from === undefined) throw new Reply(503, "Send RNFR first.");
    if (!arg) throw new Reply(501, "RNTO needs a name.");
    const path = s.path(arg);
    const target = await s.entry(path);
    const source = await s.entry(from);
    try {
      s.ctx.card.rename(source, target);
    } catch (e) {
      cardReply(e, "new-name");
    }
    s.reply(250, "Rename successful.");
  },
};
