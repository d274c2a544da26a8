// LIST (`ls -l` lines) and NLST (names) of a folder, or of one file.
import { cardReply } from "../replies.js";
import { listLine } from "../listing.js";
import { sendText } from "../transfer.js";
import type { Command } from "./command.js";

export const list: Command = {
  verbs: ["LIST", "NLST"],
  keepsRest: true,
  async handler(s, arg, verb) {
    // Clients send ls options such as "-la"; we always list the same way.
    const target = arg
      .split(" ")
      .filter((w) => !w.startsWith("-"))
      .join(" ");
    const { path, real } = await s.existing(target || ".");
    const { card } = s.ctx;
    const st = await card.stat(real).catch(cardReply);
    const entries = st.isDirectory() ? await card.list(real) : [await card.entry(real, path.split("/").pop()!)];
    const now = Date.now();
    const text = entries.map((e) => (verb === "LIST" ? listLine(e, now) : e.name) + "\r\n").join("");
    await s.data.run((socket) => sendText(text, socket, s.data.blockMode));
  },
};
