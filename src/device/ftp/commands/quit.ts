// QUIT: says goodbye and closes the session.
import type { Command } from "./command.js";

export const quit: Command = {
  verbs: ["QUIT"],
  beforeLogin: true,
  async handler(s) {
    await s.close("221 Goodbye.");
  },
};
