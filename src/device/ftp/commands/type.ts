// TYPE: both types move bytes unchanged (photos are binary, and clients rarely ask for ASCII).
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const type: Command = {
  verbs: ["TYPE"],
  keepsRest: true,
  keepsAllo: true,
  handler(s, arg) {
    const t = arg.trim().toUpperCase();
    if (t === "I" || t === "L 8") return s.reply(200, "Switching to Binary mode.");
    if (t === "A" || t === "A N") return s.reply(200, "Switching to ASCII mode (bytes are transferred unchanged).");
    throw new Reply(504, "Only types A and I are supported.");
  },
};
