// RMD path: removes an empty folder.
import { cardReply, Reply } from "../replies.js";
import type { Command } from "./command.js";

export const rmd: Command = {
  verbs: ["RMD", "XRMD"],
  async handler(s, arg) {
    if (!arg) throw new Reply(501, "RMD needs a folder name.");
    const { path, real } = await s.existing(arg);
    if (path === "/") throw new Reply(550, "The card's root cannot be removed.");
    if (!(await s.ctx.card.stat(real)).isDirectory()) throw new Reply(550, "Not a folder; use DELE for files.");
    await s.ctx.card.remove(await s.entry(path), "folder").catch(cardReply);
    s.reply(250, "Folder removed.");
  },
};
