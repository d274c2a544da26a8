// STRU: only file structure.
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const stru: Command = {
  verbs: ["STRU"],
  handler(s, arg) {
    if (arg.toUpperCase() !== "F") throw new Reply(504, "Only file structure is supported.");
    s.reply(200, "Structure set to F.");
  },
};
