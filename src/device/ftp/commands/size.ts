// SIZE (RFC 3659): a file's size in bytes.
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const size: Command = {
  verbs: ["SIZE"],
  async handler(s, arg) {
    const { real } = await s.existing(arg);
    const st = await s.ctx.card.stat(real);
    if (!st.isFile()) throw new Reply(550, "Not a regular file.");
    s.reply(213, String(st.size));
  },
};
