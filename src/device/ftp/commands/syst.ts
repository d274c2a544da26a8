// SYST: the system type clients expect for `ls -l` listings.
import type { Command } from "./command.js";

export const syst: Command = {
  verbs: ["SYST"],
  beforeLogin: true,
  handler: (s) => s.reply(215, "UNIX Type: L8"),
};
