// -pidfile: the reference's internal/pidfile. A file holding a live process's id blocks the start;
// a stale one (no such process, or not a number) is replaced. The file is removed on exit.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { processExists } from "../../shared/process.js";
import { type ErrorArgs, WebhookError } from "../errors.js";

export class PidFileError extends WebhookError {
  override readonly name = "PidFileError";
  constructor(...args: ErrorArgs<"WEBHOOK_PIDFILE_HELD" | "WEBHOOK_PIDFILE_UNWRITABLE">) {
    super(...args);
  }
}

/** Writes this process's id to `path`; throws PidFileError when a live process already holds it. */
export function createPidFile(path: string): void {
  let held: string | undefined;
  try {
    held = readFileSync(path, "utf8").trim();
  } catch {
    held = undefined;
  }
  if (held !== undefined && /^\d+$/.test(held) && Number(held) !== process.pid && processExists(Number(held))) {
    throw new PidFileError("WEBHOOK_PIDFILE_HELD", { path });
  }
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
    writeFileSync(path, String(process.pid), { mode: 0o600 });
  } catch (e) {
    throw new PidFileError("WEBHOOK_PIDFILE_UNWRITABLE", { reason: (e as Error).message }, { cause: e });
  }
}

/** Removes the pid file if it still holds this process's id. */
export function removePidFile(path: string): void {
  try {
    if (readFileSync(path, "utf8").trim() === String(process.pid)) rmSync(path);
  } catch {
    // Already gone: nothing to clean up.
  }
}
