// PASS password: checks the login against the settings, through the device's login throttle.
import { setTimeout as sleep } from "node:timers/promises";
import { sameSecret } from "../../../shared/secret.js";
import { ThrottledError } from "../../auth/throttle.js";
import { Reply } from "../replies.js";
import type { Command } from "./command.js";

const MAX_LOGIN_FAILURES = 3;

export const pass: Command = {
  verbs: ["PASS"],
  beforeLogin: true,
  async handler(s, arg) {
    if (s.user === undefined) throw new Reply(503, "Login with USER first.");
    if (s.loggedIn) return s.reply(230, "Already logged in.");
    const { throttle, user, password } = s.ctx.options;
    try {
      const wait = throttle.admit(s.peer);
      if (wait > 0) await sleep(wait, undefined, { signal: s.ending });
    } catch (e) {
      if (s.closing) return;
      if (!(e instanceof ThrottledError)) throw e;
      s.ctx.log(`ftp ${s.label}: login refused: too many failed logins from ${s.peer}`);
      await s.close(`${e.row.ftp} ${e.message}`);
      return;
    }
    const userOk = sameSecret(s.user, user);
    const passOk = sameSecret(arg, password);
    if (userOk && passOk) {
      s.loginSucceeded();
      throttle.succeeded(s.peer, "ftp");
      s.ctx.log(`ftp ${s.label}: logged in`);
      return s.reply(230, "Login successful.");
    }
    const attempts = s.loginFailed();
    const { failures, delayMs } = throttle.failed(s.peer, "ftp");
    const next = delayMs > 0 ? `; the next attempt from this address waits ${Math.ceil(delayMs / 1000)} s` : "";
    s.ctx.log(`ftp ${s.label}: login failed (${failures} in a row from ${s.peer}${next})`);
    s.user = undefined;
    if (attempts >= MAX_LOGIN_FAILURES) {
      await s.close("530 Login incorrect. Too many failures; closing the connection.");
      return;
    }
    throw new Reply(530, "Login incorrect.");
  },
};
