// CWD path and CDUP: change the session's current folder.
import { Reply } from "../replies.js";
import type { Command, CommandSession } from "./command.js";

async function changeFolder(s: CommandSession, arg: string): Promise<void> {
  const { path, real } = await s.existing(arg);
  if (!(await s.ctx.card.stat(real)).isDirectory()) throw new Reply(550, "Not a folder.");
  s.cwd = path;
  s.reply(250, `Folder changed to ${path}.`);
}

export const cwd: Command = {
  verbs: ["CWD", "XCWD"],
  handler: (s, arg) => changeFolder(s, arg || "/"),
};

export const cdup: Command = {
  verbs: ["CDUP", "XCUP"],
  handler: (s) => changeFolder(s, ".."),
};
