// `framefi-device --pull SOURCE --every 1h`: the device fetches its photos itself, after start and on a schedule,
// with the client's sync (src/client/api/sync.ts) against its own web API and FTP server on the loopback address:
// FTP mode as any client would have it (on the USB gadget, leaving MSC mode ejects, checks and mounts the card
// image; going back inserts it, so the frame reads the new files), every write through the card owner, then back
// to the mode it was in. A source that cannot be read leaves the card as it is. The Puller owns the last pull's
// record, which MQTT and the panel show; MQTT's "sync now" button calls now().
import { EventEmitter } from "node:events";
import { readSmallFile } from "../../shared/small-file.js";
import { blankControls } from "../../client/api/text.js";

/** The longest delay a Node timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface PullConfig {
  source: string;
  everyMs: number;
  delete: boolean;
  /** A frame size ("1024x600") to convert photos to; undefined: files as they are. */
  fit: string | undefined;
  /** --pull-password-file: the share's password is its first line, read at each pull (a rotated one is used). */
  passwordFile?: string | undefined;
}

/** The longest password file read: a password, not a log someone pointed at by mistake. */
const MAX_PASSWORD_FILE = 4096;

/** The first line of a password file; the errors name the file, never what it holds. */
export function readPasswordFile(path: string): string {
  const password = readSmallFile(path, MAX_PASSWORD_FILE).toString("utf8").split(/\r?\n/)[0]!;
  if (password === "") throw new Error("its first line is empty");
  return password;
}

/** What the panel and MQTT show of the last pull. */
export interface PullRecord {
  /** When it ended (ISO 8601). */
  time: string;
  ok: boolean;
  uploaded: number;
  deleted: number;
  unchanged: number;
  failed: number;
  /** Why it stopped, or the first file that failed; one line, no secret. */
  error: string;
}

export interface PullTarget {
  /** The device's web API and FTP server, as this process reaches them. */
  url: string;
  ftp: { host: string; port: number; user: string; password: string };
  web: { user: string; password: string };
}

export class Puller extends EventEmitter<{ change: [] }> {
  #last: PullRecord | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #abort: AbortController | undefined;
  #target: (() => PullTarget) | undefined;

  constructor(
    readonly config: PullConfig,
    private readonly log: (message: string) => void,
  ) {
    super();
  }

  get last(): PullRecord | undefined {
    return this.#last;
  }

  /** After the device is up: a pull now, then one every `everyMs`; `target` says where the device answers. */
  start(target: () => PullTarget): void {
    this.#target = target;
    this.#abort = new AbortController();
    this.now();
    this.#wait(this.config.everyMs);
  }

  /** Pulls after `ms`. A timer takes at most 2^31-1 ms (--every goes to 30 days; a longer one fires at once, every
   * millisecond), so a longer wait is a chain of shorter ones. */
  #wait(ms: number): void {
    this.#timer = setTimeout(
      () => {
        if (ms > MAX_TIMER_MS) return this.#wait(ms - MAX_TIMER_MS);
        this.now();
        this.#wait(this.config.everyMs);
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#again = false;
    this.#abort?.abort(new Error("the device is stopping"));
    await this.#running;
  }

  /** Pulls now; while a pull runs, one more follows it (presses in the meantime are one). */
  now(): void {
    if (!this.#abort || this.#abort.signal.aborted) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#pull().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.now();
      }
    });
  }

  async #pull(): Promise<void> {
    const signal = this.#abort!.signal;
    const [{ FrameFiClient }, { sync, framePhotos, sourceSecretsFromEnv }] = await Promise.all([
      import("../../client/api/index.js"),
      import("../../client/api/sync.js"),
    ]);
    const t = this.#target!();
    const client = new FrameFiClient({ host: t.url, user: t.web.user || undefined, password: t.web.password || undefined });
    let record: PullRecord;
    try {
      const file = this.config.passwordFile;
      let password: string | undefined;
      try {
        password = file === undefined ? undefined : readPasswordFile(file);
      } catch (e) {
        throw new Error(`Cannot read --pull-password-file ${file} (${(e as Error).message}); the card was left as it is.`, { cause: e });
      }
      const result = await sync(client, {
        localDir: this.config.source,
        ...(password === undefined ? {} : { sourceSecrets: { ...sourceSecretsFromEnv(process.env), password } }),
        ftp: t.ftp,
        delete: this.config.delete,
        signal,
        photos: this.config.fit ? await framePhotos({ fit: this.config.fit }) : undefined,
      });
      const first = result.failed[0];
      record = {
        time: new Date().toISOString(),
        ok: result.failed.length === 0,
        uploaded: result.uploaded,
        deleted: result.deleted,
        unchanged: result.plan.unchanged,
        failed: result.failed.length,
        error: first ? oneLine(`${first.rel}: ${first.reason}`) : "",
      };
    } catch (e) {
      if (signal.aborted) return;
      record = { time: new Date().toISOString(), ok: false, uploaded: 0, deleted: 0, unchanged: 0, failed: 0, error: oneLine((e as Error).message) };
    }
    this.#last = record;
    this.log(
      record.ok && record.error === ""
        ? `pull: ${record.uploaded} uploaded, ${record.deleted} deleted, ${record.unchanged} unchanged`
        : `pull failed: ${record.error}`,
    );
    this.emit("change");
  }
}

/** The Puller as a device plug-in: pulls while the device is up. */
export function pullPlugin(puller: Puller, target: () => PullTarget): { start(): Promise<void>; stop(): Promise<void> } {
  return {
    start: async () => puller.start(target),
    stop: () => puller.stop(),
  };
}

/** The device's own web API and FTP server on the loopback address, and its logins. */
export function pullTarget(
  config: { host: string; port: number; ftpPort: number },
  settings: { webUser: string; webPassword: string; ftpUser: string; ftpPassword: string },
): PullTarget {
  // A wildcard listen address is reached on the loopback address; a given one as it is.
  const host = ["", "::", "0.0.0.0"].includes(config.host) ? "127.0.0.1" : config.host;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${config.port}`,
    ftp: { host, port: config.ftpPort, user: settings.ftpUser, password: settings.ftpPassword },
    web: { user: settings.webUser, password: settings.webPassword },
  };
}

function oneLine(text: string): string {
  const line = blankControls(text).trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
