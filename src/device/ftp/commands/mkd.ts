// MKD path: makes a folder, its name checked in the same turn of the event loop (two sessions cannot both pass
// with FAT case twins).
import { cardReply, quote, Reply } from "../replies.js";
import type { Command } from "./command.js";

export const mkd: Command = {
  verbs: ["MKD", "XMKD"],
  async handler(s, arg) {
    if (!arg) throw new Reply(501, "MKD needs a folder name.");
    const path = s.path(arg);
    const target = await s.entry(path);
    try {
      s.ctx.card.mkdir(target);
    } catch (e) {
      cardReply(e, "new-name");
    }
    s.reply(257, `${quote(path)} created.`);
  },
};
