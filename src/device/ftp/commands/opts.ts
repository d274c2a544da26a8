// OPTS UTF8 (always on) and OPTS MLST (the facts MLSD and MLST send).
import { ALL_FACTS } from "../listing.js";
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const opts: Command = {
  verbs: ["OPTS"],
  beforeLogin: true,
  handler(s, arg) {
    const [name = "", ...rest] = arg.trim().split(/\s+/);
    switch (name.toUpperCase()) {
      case "UTF8":
      case "UTF-8":
        s.reply(200, "Always in UTF8 mode.");
        return;
      case "MLST": {
        const wanted = (rest.join(" ") || "").toLowerCase().split(";").filter(Boolean);
        s.facts = new Set(ALL_FACTS.filter((f) => wanted.includes(f)));
        s.reply(200, `MLST OPTS ${[...s.facts].map((f) => f + ";").join("")}`);
        return;
      }
      default:
        throw new Reply(501, "Option not understood.");
    }
  },
};
