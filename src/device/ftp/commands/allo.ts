// ALLO size: the size of the file the next STOR/APPE sends (lftp sends it). A shorter upload is not kept.
import type { Command } from "./command.js";

export const allo: Command = {
  verbs: ["ALLO"],
  keepsAllo: true,
  handler(s, arg) {
    const size = arg.trim().split(/\s+/)[0] ?? "";
    s.announced = /^\d{1,15}$/.test(size) ? Number(size) : undefined;
    s.reply(202, "No storage allocation necessary.");
  },
};
