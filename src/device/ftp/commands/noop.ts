// NOOP: keeps the connection alive.
import type { Command } from "./command.js";

export const noop: Command = {
  verbs: ["NOOP"],
  beforeLogin: true,
  handler: (s) => s.reply(200, "OK."),
};
