// -record-requests DIR (ours, off by default): every request to a hook is saved in DIR in the JSON
// form -test-request reads (request-file.ts), so a delivery that did not fire can be replayed
// offline. The file is the request itself, secrets and all (a replay needs the signature): each is
// mode 0600 in a folder the user names, written whole or not at all (a temporary name, then rename).
// Bounded: a body over MAX_RECORDED_BODY is not recorded (the log says so), and only the newest
// MAX_RECORDINGS files are kept.
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RequestHead } from "../http/contract.js";
import type { Log, LogFields } from "../log/log.js";
import { WebhookError } from "../errors.js";
import { jsonForm } from "./request-file.js";

export const MAX_RECORDED_BODY = 1 << 20;
export const MAX_RECORDINGS = 100;
const NAME = /^\d{13}-\d{6}-[A-Za-z0-9_.-]{0,64}\.json$/;

export class Recorder {
  /** The files kept, oldest first. */
  private kept: string[] = [];
  private seq = 0;

  constructor(
    private readonly dir: string,
    private readonly log: Log,
  ) {}

  /** Opens (or makes, mode 0700) the folder, as the user the server runs as; throws WebhookError when it cannot be written. */
  open(): void {
    const dir = this.dir;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.kept = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isFile() && NAME.test(e.name))
        .map((e) => e.name)
        .sort();
      const probe = join(dir, `.probe-${process.pid}`);
      writeFileSync(probe, "", { mode: 0o600 });
      rmSync(probe);
    } catch (e) {
      throw new WebhookError("WEBHOOK_RECORD_DIR", { path: dir, reason: (e as Error).message }, { cause: e });
    }
  }

  /** Saves one request to hook `hookId`; a failure is logged, never thrown into the request. */
  save(hookId: string, head: RequestHead, body: Buffer, fields: LogFields): void {
    if (body.length > MAX_RECORDED_BODY) {
      this.log.print(`request to ${hookId} not recorded: its body of ${body.length} bytes is over ${MAX_RECORDED_BODY}`, fields);
      return;
    }
    const safeId = hookId.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64);
    const name = `${String(Date.now()).padStart(13, "0")}-${String(this.seq++ % 1e6).padStart(6, "0")}-${safeId}.json`;
    const path = join(this.dir, name);
    const temp = join(this.dir, `.${name}.tmp`);
    try {
      writeFileSync(temp, jsonForm(head, body), { mode: 0o600, flag: "wx" });
      renameSync(temp, path);
    } catch (e) {
      rmSync(temp, { force: true });
      this.log.print(`request to ${hookId} not recorded in ${this.dir}: ${(e as Error).message}`, fields);
      return;
    }
    this.kept.push(name);
    while (this.kept.length > MAX_RECORDINGS) {
      const old = join(this.dir, this.kept.shift()!);
      try {
        rmSync(old, { force: true });
      } catch (e) {
        this.log.print(`old recording ${old} not removed: ${(e as Error).message}`, fields);
      }
    }
    this.log.print(`request to ${hookId} recorded as ${path}`, fields);
  }
}
