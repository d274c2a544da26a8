// AUTH (RFC 4217): TLS is not offered.
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

export const auth: Command = {
  verbs: ["AUTH"],
  beforeLogin: true,
  handler() {
    throw new Reply(502, "TLS is not supported; use plain FTP on a trusted network.");
  },
};
