// The registry: every FTP command this server answers, by verb. A verb not here is answered 502.
import { abor } from "./abor.js";
import { allo } from "./allo.js";
import { auth } from "./auth.js";
import type { Command } from "./command.js";
import { cdup, cwd } from "./cwd.js";
import { dele } from "./dele.js";
import { feat } from "./feat.js";
import { help } from "./help.js";
import { list } from "./list.js";
import { mdtm } from "./mdtm.js";
import { mfmt } from "./mfmt.js";
import { mkd } from "./mkd.js";
import { mlsd } from "./mlsd.js";
import { mlst } from "./mlst.js";
import { mode } from "./mode.js";
import { noop } from "./noop.js";
import { opts } from "./opts.js";
import { pass } from "./pass.js";
import { epsv, pasv } from "./pasv.js";
import { eprt, port } from "./port.js";
import { pwd } from "./pwd.js";
import { quit } from "./quit.js";
import { rnfr, rnto } from "./rename.js";
import { rest } from "./rest.js";
import { retr } from "./retr.js";
import { rmd } from "./rmd.js";
import { site } from "./site.js";
import { size } from "./size.js";
import { stor } from "./stor.js";
import { stru } from "./stru.js";
import { syst } from "./syst.js";
import { type } from "./type.js";
import { user } from "./user.js";

export type { Command, CommandSession } from "./command.js";

const ALL: Command[] = [
  user,
  pass,
  quit,
  noop,
  syst,
  feat,
  help,
  opts,
  auth,
  pwd,
  cwd,
  cdup,
  type,
  mode,
  stru,
  pasv,
  epsv,
  port,
  eprt,
  rest,
  abor,
  list,
  mlsd,
  mlst,
  size,
  mdtm,
  mfmt,
  retr,
  stor,
  dele,
  mkd,
  rmd,
  rnfr,
  rnto,
  allo,
  site,
];

export const COMMANDS: ReadonlyMap<string, Command> = new Map(ALL.flatMap((c) => c.verbs.map((v) => [v, c] as const)));
