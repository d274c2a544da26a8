// FEAT (RFC 2389): the extensions this server offers.
import type { Command } from "./command.js";

const FEATURES = ["EPSV", "MDTM", "MFMT", "MLST type*;size*;modify*;perm*;", "PASV", "REST STREAM", "SITE FREE", "SIZE", "TVFS", "UTF8"];

export const feat: Command = {
  verbs: ["FEAT"],
  beforeLogin: true,
  handler: (s) => s.reply(211, "Features:", FEATURES),
};
