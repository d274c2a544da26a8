// ABOR: a running transfer was stopped when the line arrived (see Session); this answers for it.
import type { Command } from "./command.js";

export const abor: Command = {
  verbs: ["ABOR"],
  handler(s) {
    if (s.data.takeClientAbort()) return s.reply(226, "Abort successful.");
    s.data.close();
    s.reply(225, "No transfer to abort.");
  },
};
