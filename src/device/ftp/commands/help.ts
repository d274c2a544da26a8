// HELP: the commands this server knows.
import type { Command } from "./command.js";

export const help: Command = {
  verbs: ["HELP"],
  beforeLogin: true,
  handler: (s) =>
    s.reply(
      214,
      "Commands: USER PASS PWD CWD CDUP TYPE MODE PASV EPSV PORT EPRT LIST NLST MLSD MLST SIZE MDTM MFMT STOR APPE RETR REST ABOR DELE MKD RMD RNFR RNTO ALLO SITE FREE FEAT OPTS SYST NOOP QUIT.",
    ),
};
