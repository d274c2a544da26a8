// STOR and APPE: receive a file into a card write, which lands it whole or not at all. APPE and REST keep the
// existing bytes at the start.
import type { CardWrite } from "../../card/card.js";
import { cardReply, Reply } from "../replies.js";
import { receiveFile } from "../transfer.js";
import type { Command, CommandSession } from "./command.js";

export const stor: Command = {
  verbs: ["STOR", "APPE"],
  keepsRest: true,
  keepsAllo: true,
  async handler(s, arg, verb) {
    const announced = s.announced;
    s.announced = undefined;
    // In block mode a refused upload drops its data connection: blocks the client sent ahead on it (as framefi sync
    // does) belong to the refused file and must not become the next one's. Stream mode keeps it, as vsftpd does.
    const { path, write, replaces } = await prepareUpload(s, verb, arg).catch((e: unknown) => {
      if (s.data.blockMode) s.data.close();
      throw e;
    });
    let received = 0;
    try {
      await s.data.run(
        async (socket) => {
          received = await receiveFile(write, socket, { announced, replaces, blocks: s.data.blockMode });
          return received;
        },
        { direction: "upload", path },
      );
    } finally {
      await write.abort();
    }
    s.ctx.log(`ftp ${s.label}: stored ${path} (${received} bytes)`);
  },
};

/** Checks an upload's target and opens its card write; a Reply when it is refused. */
async function prepareUpload(s: CommandSession, verb: string, arg: string): Promise<{ path: string; write: CardWrite; replaces: boolean }> {
  const offset = s.takeRest();
  if (!arg) throw new Reply(501, `${verb} needs a file name.`);
  const { card } = s.ctx;
  const path = s.path(arg);
  const target = await s.entry(path);
  try {
    card.allowNew(target);
  } catch (e) {
    cardReply(e, "new-name");
  }
  // Existing content is kept for APPE and REST; through a symlink only when it stays inside the card.
  const here = card.entryStats(target);
  const source = here?.isSymbolicLink() ? await card.existing(path).catch(cardReply) : target.absolute;
  const existing = here?.isSymbolicLink() ? await card.stat(source).catch(() => undefined) : here;
  if (existing?.isDirectory()) throw new Reply(550, "That name is a folder.");
  const size = existing?.size ?? 0;
  if (offset > size) throw new Reply(554, "Restart offset is beyond the end of the file.");
  const keep = verb === "APPE" ? size : offset;
  if (!s.data.prepared) throw new Reply(425, "Use PASV, EPSV or PORT first.");
  // Exclusive: two uploads to one file would each start from its old content, and the later would drop the other's.
  // The card taken back (the write aborted) stops the transfer.
  const write = await card
    .beginWrite(target, { exclusive: source, onAbort: () => s.data.abortTransfer(), ...(keep > 0 ? { keep: { from: source, bytes: keep } } : {}) })
    .catch(cardReply);
  return { path, write, replaces: existing !== undefined };
}
