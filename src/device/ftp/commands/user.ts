// USER name: starts a login (ending the one before); PASS follows.
import type { Command } from "./command.js";

export const user: Command = {
  verbs: ["USER"],
  beforeLogin: true,
  handler(s, arg) {
    s.user = arg;
    s.loggedIn = false;
    s.reply(331, "Please specify the password.");
  },
};
