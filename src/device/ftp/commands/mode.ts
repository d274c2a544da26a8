// MODE S or B; a data connection kept for block mode does not carry over to the other mode.
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const mode: Command = {
  verbs: ["MODE"],
  handler(s, arg) {
    const mode = arg.trim().toUpperCase();
    const { blockMode } = s.ctx.options;
    if (mode !== "S" && (mode !== "B" || !blockMode)) {
      throw new Reply(504, blockMode ? "Only stream (S) and block (B) modes are supported." : "Only S(tream) is supported");
    }
    if (s.data.blockMode !== (mode === "B")) {
      s.data.close();
      s.ctx.log(`ftp ${s.label}: ${mode === "B" ? "block" : "stream"} mode`);
    }
    s.data.blockMode = mode === "B";
    s.reply(200, `Mode set to ${mode}.`);
  },
};
