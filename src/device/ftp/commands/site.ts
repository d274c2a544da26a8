// SITE FREE, worded as the firmware's FTP server does (its parameter exactly "FREE"), with the card's figures.
import { freeSpaceText, Reply } from "../replies.js";
import type { Command } from "./command.js";

export const site: Command = {
  verbs: ["SITE"],
  async handler(s, arg) {
    const what = arg.replace(/^ +/, "");
    if (what !== "FREE") throw new Reply(500, `Unknown SITE command ${what.slice(0, 100).replace(/[\x00-\x1f\x7f]/g, "?")}`);
    const { freeSize, totalSize } = await s.ctx.card.figures();
    s.reply(200, freeSpaceText(freeSize, totalSize));
  },
};
