// REST offset: the next STOR or RETR starts there (stream mode).
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const rest: Command = {
  verbs: ["REST"],
  keepsRest: true,
  keepsAllo: true,
  handler(s, arg) {
    if (!/^\d+$/.test(arg.trim())) throw new Reply(501, "REST needs a byte offset.");
    // Block mode's REST takes a restart marker, which this server never sends.
    if (s.data.blockMode) throw new Reply(504, "REST is supported in stream mode only; send MODE S first.");
    s.restOffset = Number(arg.trim());
    s.reply(350, `Restarting at ${s.restOffset}. Send STOR or RETR to start the transfer.`);
  },
};
