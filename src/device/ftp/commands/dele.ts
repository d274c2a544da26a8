// DELE path: removes a file (a link itself, not its target).
import { cardReply, Reply } from "../replies.js";
import type { Command } from "./command.js";

export const dele: Command = {
  verbs: ["DELE"],
  async handler(s, arg) {
    if (!arg) throw new Reply(501, "DELE needs a file name.");
    const { path, real } = await s.existing(arg);
    if ((await s.ctx.card.stat(real)).isDirectory()) throw new Reply(550, "That is a folder; use RMD.");
    await s.ctx.card.remove(await s.entry(path), "file").catch(cardReply);
    s.reply(250, "File deleted.");
  },
};
