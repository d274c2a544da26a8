// MLSD (RFC 3659): a folder's entries with their facts.
import { factsLine } from "../listing.js";
import { Reply } from "../replies.js";
import { sendText } from "../transfer.js";
import type { Command } from "./command.js";

export const mlsd: Command = {
  verbs: ["MLSD"],
  keepsRest: true,
  async handler(s, arg) {
    const { real } = await s.existing(arg || ".");
    const { card } = s.ctx;
    if (!(await card.stat(real)).isDirectory()) throw new Reply(501, "Not a folder; use MLST for files.");
    const text = (await card.list(real)).map((e) => factsLine(e, s.facts) + "\r\n").join("");
    await s.data.run((socket) => sendText(text, socket, s.data.blockMode));
  },
};
