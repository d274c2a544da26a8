// MLST (RFC 3659): one entry's facts, on the control connection.
import { factsLine } from "../listing.js";
import type { Command } from "./command.js";

export const mlst: Command = {
  verbs: ["MLST"],
  async handler(s, arg) {
    const { path, real } = await s.existing(arg || ".");
    const entry = await s.ctx.card.entry(real, path);
    s.reply(250, `Listing ${path}`, [factsLine(entry, s.facts)]);
  },
};
