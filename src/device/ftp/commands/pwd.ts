// PWD: the session's current folder.
import { quote } from "../replies.js";
import type { Command } from "./command.js";

export const pwd: Command = {
  verbs: ["PWD", "XPWD"],
  handler: (s) => s.reply(257, `${quote(s.cwd)} is the current folder.`),
};
