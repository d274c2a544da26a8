// Persisted settings, as the firmware keeps them in its Preferences store: what the API or the setup page
// changed overrides the start-up configuration. Written atomically: temp file, fsync, rename, fsync of the folder.
import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { DeviceConfig } from "./cli/config.js";

export interface Settings {
  /** The Wi-Fi network the device joins; blank after a Wi-Fi reset (the device then starts its setup page). */
  wifiSsid: string;
  wifiPassword: string;
  webUser: string;
  webPassword: string;
  ftpUser: string;
  ftpPassword: string;
  mqttEnabled: boolean;
  mqttHost: string;
  mqttPort: number;
  mqttUser: string;
  mqttPassword: string;
  mqttClientId: string;
  ledBrightness: number;
  orientation: number;
}

/** The simulated network the device is joined to until a Wi-Fi reset. */
export const SIMULATED_SSID = "FrameFi-Simulated";

export function defaultSettings(config: DeviceConfig): Settings {
  return {
    wifiSsid: SIMULATED_SSID,
    wifiPassword: "",
    webUser: config.webUser,
    webPassword: config.webPassword,
    ftpUser: config.ftpUser,
    ftpPassword: config.ftpPassword,
    mqttEnabled: config.mqtt.enabled,
    mqttHost: config.mqtt.host,
    mqttPort: config.mqtt.port,
    mqttUser: config.mqtt.user,
    mqttPassword: config.mqtt.password,
    mqttClientId: config.mqtt.clientId,
    ledBrightness: config.brightness,
    orientation: config.orientation,
  };
}

type Checker = (v: unknown) => boolean;
const isString: Checker = (v) => typeof v === "string";
const isBool: Checker = (v) => typeof v === "boolean";
const intIn =
  (lo: number, hi: number): Checker =>
  (v) =>
    Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;

const CHECKS: Record<keyof Settings, Checker> = {
  wifiSsid: isString,
  wifiPassword: isString,
  webUser: isString,
  webPassword: isString,
  ftpUser: isString,
  ftpPassword: isString,
  mqttEnabled: isBool,
  mqttHost: isString,
  mqttPort: intIn(1, 65535),
  mqttUser: isString,
  mqttPassword: isString,
  mqttClientId: isString,
  ledBrightness: intIn(0, 255),
  orientation: intIn(0, 3),
};

export type Warn = (message: string) => void;

/** The temp files of writeFile: `.settings.json.<12 hex>.tmp`. */
const TEMP_FILE = /^\.settings\.json\.[0-9a-f]{12}\.tmp$/;

/**
 * The one owner of the settings values (the device state, the API, FTP and MQTT ask it): loads overrides on top of
 * the defaults and saves changes, one write at a time.
 */
export class SettingsStore {
  readonly file: string;
  private overrides: Partial<Settings> = {};
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(
    private readonly dir: string,
    private readonly defaults: () => Settings,
    private readonly warn: Warn,
  ) {
    this.file = join(dir, "settings.json");
  }

  /** Re-reads the file. A missing file means defaults; an unreadable or corrupt one means defaults and a warning. */
  async load(): Promise<Settings> {
    this.overrides = {};
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
        this.warn(`cannot read settings file ${this.file} (${(e as Error).message}); using defaults`);
      }
      return this.current();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.warn(`settings file ${this.file} is corrupt (not JSON); using defaults. It is rewritten on the next change.`);
      return this.current();
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      this.warn(`settings file ${this.file} is corrupt (not a JSON object); using defaults`);
      return this.current();
    }
    for (const [key, value] of Object.entries(parsed)) {
      const check = CHECKS[key as keyof Settings];
      if (check && check(value)) (this.overrides as Record<string, unknown>)[key] = value;
      else this.warn(`settings file ${this.file}: ignoring invalid or unknown entry "${key}"`);
    }
    return this.current();
  }

  /** Removes temp files a killed process left behind; call once at start-up, before any write. */
  async removeStaleTempFiles(): Promise<void> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const stale = names.filter((n) => TEMP_FILE.test(n));
    await Promise.all(
      stale.map((n) => rm(join(this.dir, n), { force: true }).catch((e: Error) => this.warn(`cannot remove the stale temp file ${n}: ${e.message}`))),
    );
  }

  current(): Settings {
    return { ...this.defaults(), ...this.overrides };
  }

  /** Changes values at once, then stores them; resolves once they are on disk (they stay in effect if that fails). */
  async update(changes: Partial<Settings>): Promise<void> {
    Object.assign(this.overrides, changes);
    return this.persist();
  }

  /** Changes values and stores them; when the write fails, they are put back as they were (all or nothing). */
  async commit(changes: Partial<Settings>): Promise<void> {
    const before = { ...this.overrides };
    Object.assign(this.overrides, changes);
    try {
      await this.persist();
    } catch (e) {
      const undo = this.overrides as Record<string, unknown>;
      for (const [key, value] of Object.entries(changes)) {
        // A later change of the same key stands.
        if (undo[key] !== value) continue;
        if (key in before) undo[key] = (before as Record<string, unknown>)[key];
        else delete undo[key];
      }
      throw e;
    }
  }

  /** Forgets every stored value, then stores `keep` (the firmware's Wi-Fi reset clears its whole store). */
  async clear(keep: Partial<Settings>): Promise<void> {
    this.overrides = { ...keep };
    return this.persist();
  }

  /**
   * One write at a time; changes that arrive while a write runs share the next write, which serialises the
   * overrides as they are when it starts. So the file always ends as the last change left it, and a burst of
   * changes costs two writes, not one per change.
   */
  private persist(): Promise<void> {
    if (this.queued) return this.queued;
    const queued = (async () => {
      await this.running?.catch(() => undefined);
      this.queued = undefined;
      const write = this.writeFile(JSON.stringify(this.overrides, null, 2) + "\n");
      this.running = write;
      try {
        await write;
      } finally {
        if (this.running === write) this.running = undefined;
      }
    })();
    this.queued = queued;
    return queued;
  }

  private async writeFile(text: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const tmp = join(this.dir, `.settings.json.${randomBytes(6).toString("hex")}.tmp`);
    try {
      const fh = await open(tmp, "w", 0o600);
      try {
        await fh.writeFile(text, "utf8");
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.file);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    const dirHandle = await open(this.dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  }
}
