// RETR path: sends a file, from the REST offset.
import { Reply } from "../replies.js";
import { sendFile } from "../transfer.js";
import type { Command } from "./command.js";

export const retr: Command = {
  verbs: ["RETR"],
  keepsRest: true,
  async handler(s, arg) {
    const offset = s.takeRest();
    const { path, real } = await s.existing(arg);
    const { card } = s.ctx;
    const st = await card.stat(real);
    if (!st.isFile()) throw new Reply(550, "Not a regular file.");
    if (offset > st.size) throw new Reply(554, "Restart offset is beyond the end of the file.");
    await s.data.run((socket) => sendFile(card, real, st.size, offset, socket, s.data.blockMode), { direction: "download", path });
    s.ctx.log(`ftp ${s.label}: sent ${path}`);
  },
};
