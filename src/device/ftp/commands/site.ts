// SITE FREE, worded as the firmware's FTP server does (its parameter exactly "FREE"), with the card's figures.
import { freeSpaceText, Reply } from "../replies.js";
import type { Command } from "./command.js";
import { printable } from "../../card/errors.js";

export const site: Command = {
  verbs: ["SITE"],
  async handler(s, arg) {
    const what = arg.replace(/^ +/, "");
    if (what !== "FREE") throw new Reply(500, `Unknown SITE command ${printable(what.slice(0, 100))}`);
    const { freeSize, totalSize } = await s.ctx.card.figures();
    s.reply(200, freeSpaceText(freeSize, totalSize));
  },
};
