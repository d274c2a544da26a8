// The flags of the run console and replay (-console, -console-insecure, -jobs-replay,
// -jobs-request-max, -jobs-redact-header): what they need, and what they give the server.
import { isIP } from "node:net";
import { type ErrorArgs, WebhookError } from "../errors.js";
import type { KeepOptions } from "../jobs/kept-request.js";
import type { Options } from "./flags.js";

/** Throws when the console or replay is asked for without -jobs, or open to anyone (not -console-insecure on loopback). */
export function checkConsoleFlags(opts: Options): void {
  const fail = (...args: ErrorArgs): never => {
    throw new WebhookError(...args);
  };
  if (opts.console && !opts.jobs) fail("WEBHOOK_CONSOLE_WITHOUT_JOBS", {});
  if (opts.jobsReplay && !opts.jobs) fail("WEBHOOK_REPLAY_WITHOUT_JOBS", {});
  const open = opts.jobsToken === "" && opts.jobsAuth === "";
  if (!open || (!opts.console && !opts.jobsReplay)) return;
  // A socket handed over by systemd (LISTEN_FDS) wins over -ip: where it listens is not known here.
  if (opts.consoleInsecure && opts.socket === "" && process.env.LISTEN_FDS === undefined && loopback(opts.ip)) return;
  fail("WEBHOOK_CONSOLE_OPEN", { flag: opts.console ? "-console" : "-jobs-replay" });
}

function loopback(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, "");
  if (isIP(bare) === 4) return bare.startsWith("127.");
  return bare === "::1";
}

/** Bytes (base64) of kept request bodies the in-process job history holds at most: the oldest go first. */
export const REQUEST_BODY_BUDGET = 64 * 1024 * 1024;

export function keepOptions(opts: Options): KeepOptions {
  const names = opts.jobsRedactHeader.split(",").map((n) => n.trim().toLowerCase());
  return { maxBody: opts.jobsRequestMax, redact: new Set(names.filter((n) => n !== "")) };
}
