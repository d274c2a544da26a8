// The device state machine: mode, display, LED, MQTT flags, boot phase. The one place that changes state.
// Every change is a synchronous step on the single JavaScript thread, so concurrent requests are serialised by
// construction: each answer describes the state right after its own step. Hardware follows the state
// asynchronously (a mode switch answers at once and completes just after), one transition at a time.
import { EventEmitter } from "node:events";
import { MODE_NAMES, MqttState, type Mode } from "../shared/firmware.js";
import type { Card } from "./card/card.js";
import { DeviceError } from "./errors.js";
import type { Hardware, LedColor, Screen } from "./hardware.js";
import type { Settings, SettingsStore } from "./settings.js";

export type Phase = "booting" | "running" | "setup" | "stopped";

/** The FTP server of FTP mode: started on entering FTP mode, stopped on leaving it. */
export interface FtpShare {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Until the FTP server plugs in, FTP mode shares the card with nobody. */
export const noFtpShare: FtpShare = { start: async () => undefined, stop: async () => undefined };

export type Change = "phase" | "mode" | "display" | "led" | "brightness" | "mqtt-enabled" | "mqtt-status" | "card" | "transfer" | "wifi-reset";

/** One FTP file transfer, as the FTP server reports it when it starts and ends. */
export interface FtpTransfer {
  direction: "upload" | "download";
  /** Card path ("/2024/a.jpg"). */
  path: string;
  /** Bytes moved (known at the end). */
  bytes: number;
  /** Whether it completed (known at the end). */
  ok: boolean;
}

/** What FTP mode has written since it began: the panel's progress line. */
export interface FtpWritten {
  files: number;
  bytes: number;
  /** The upload in progress (the latest to start), or "" when none runs. */
  current: string;
}

export interface Snapshot {
  phase: Phase;
  mode: Mode;
  /** True while the hardware has not yet caught up with `mode`. */
  switching: boolean;
  display: { on: boolean; orientation: number };
  led: { on: boolean; color: LedColor; brightness: number };
  mqtt: { enabled: boolean; state: number; connected: boolean };
  /** FTP file transfers running now; the firmware blinks its LED while there are any. */
  transfers: number;
  written: FtpWritten;
  /** A Wi-Fi reset is under way: the firmware shows "Resetting Wi-Fi..." from then until it boots again. */
  wifiReset: boolean;
}

export interface DeviceStateEvents {
  change: [what: Change, snapshot: Snapshot];
}

export class DeviceState extends EventEmitter<DeviceStateEvents> {
  private phase: Phase = "stopped";
  private mode: Mode = "msc";
  private applied: Mode | undefined;
  private reconciling: Promise<void> | undefined;
  /** Why the last attempt to enter each mode failed; cleared when entering it succeeds. */
  private readonly switchFailures = new Map<Mode, string>();
  private displayOn = true;
  private ledOn = true;
  private mqttState: number = MqttState.DISCONNECTED;
  private mqttConnected = false;
  private network: { address: string; mac: string } = { address: "", mac: "" };
  private transfers = 0;
  private written: FtpWritten = { files: 0, bytes: 0, current: "" };
  private wifiReset = false;

  constructor(
    private readonly hardware: Hardware,
    private readonly card: Card,
    private readonly settings: SettingsStore,
    private ftp: FtpShare,
    private readonly log: (message: string) => void,
  ) {
    super();
  }

  /** Plugs in the FTP server (issue 5). Takes effect on the next entry into FTP mode. */
  setFtpShare(ftp: FtpShare): void {
    this.ftp = ftp;
  }

  snapshot(): Snapshot {
    // Brightness, orientation and the MQTT flag are settings: the store owns them.
    const s = this.settings.current();
    return {
      phase: this.phase,
      mode: this.mode,
      switching: this.applied !== this.mode,
      display: { on: this.displayOn, orientation: s.orientation },
      led: { on: this.ledOn, color: this.ledColor(), brightness: s.ledBrightness },
      mqtt: { enabled: s.mqttEnabled, state: this.mqttState, connected: this.mqttConnected },
      transfers: this.transfers,
      written: { ...this.written },
      wifiReset: this.wifiReset,
    };
  }

  // --- boot, setup, shutdown (driven by the service) ---------------------------------------------------------

  /** Power-on: yellow LED, boot screen, the orientation the settings hold; the mode is MSC until told otherwise. */
  beginBoot(): void {
    this.phase = "booting";
    this.wifiReset = false;
    this.mode = "msc";
    this.displayOn = true;
    this.ledOn = true;
    this.mqttState = MqttState.DISCONNECTED;
    this.mqttConnected = false;
    this.hardware.display.setBacklight(true);
    this.hardware.display.setOrientation(this.settings.current().orientation);
    this.hardware.display.draw({ kind: "boot", version: "framefi-device" });
    this.showLed();
    this.emitChange("phase");
  }

  /** Joined the network: MSC mode, the card attached to the USB host. */
  async finishBoot(network: { address: string; mac: string }): Promise<void> {
    this.network = network;
    this.phase = "running";
    this.showLed();
    this.emitChange("phase");
    this.kick();
    await this.settled();
  }

  /** No network stored: the device's access point and setup page, blue LED. */
  enterSetup(ap: { ssid: string; address: string }): void {
    this.phase = "setup";
    this.showLed();
    this.hardware.display.draw({ kind: "setup", ssid: ap.ssid, address: ap.address });
    this.emitChange("phase");
  }

  /** A Wi-Fi reset begins (whoever asked: the API, the button): the reset screen stays up until the next boot. */
  beginWifiReset(): void {
    this.wifiReset = true;
    this.emitChange("wifi-reset");
  }

  /** Power-off for a restart: stops the FTP server, takes the card back, detaches USB. */
  async shutdown(): Promise<void> {
    await this.settled();
    this.phase = "stopped";
    if (this.applied === "ftp") await this.stopFtp();
    await this.card.setWritable(false);
    await this.hardware.usb.detach();
    this.applied = undefined;
    this.emitChange("phase");
  }

  // --- the transitions of the seed's table --------------------------------------------------------------------

  /** Returns false when the device is already in (or switching to) `mode`. */
  setMode(mode: Mode): boolean {
    if (this.mode === mode) return false;
    this.mode = mode;
    // The firmware lights the LED in the new mode's colour, even if it was switched off.
    this.ledOn = true;
    this.showLed();
    this.emitChange("mode");
    this.kick();
    return true;
  }

  /** `on` or "toggle"; returns the new display state. */
  setDisplay(on: boolean | "toggle"): boolean {
    const next = on === "toggle" ? !this.displayOn : on;
    if (next !== this.displayOn) {
      this.displayOn = next;
      this.hardware.display.setBacklight(next);
      this.emitChange("display");
    }
    return next;
  }

  /** `on` or "toggle"; returns the new LED state. */
  setLed(on: boolean | "toggle"): boolean {
    const next = on === "toggle" ? !this.ledOn : on;
    if (next !== this.ledOn) {
      this.ledOn = next;
      this.showLed();
      this.emitChange("led");
    }
    return next;
  }

  /** Sets and persists the brightness; resolves once it is on disk (or the write failed and was logged). */
  setBrightness(value: number): Promise<void> {
    const saved = this.save({ ledBrightness: value });
    this.showLed();
    this.emitChange("brightness");
    return saved;
  }

  /** Enables, disables or toggles the MQTT client and persists the choice; returns the new state. */
  setMqttEnabled(enabled: boolean | "toggle"): { enabled: boolean; saved: Promise<void> } {
    const was = this.settings.current().mqttEnabled;
    const next = enabled === "toggle" ? !was : enabled;
    const changed = next !== was;
    const saved = this.save({ mqttEnabled: next });
    if (!next) {
      this.mqttState = MqttState.DISCONNECTED;
      this.mqttConnected = false;
    }
    if (changed) {
      this.emitChange("mqtt-enabled");
      // The firmware redraws the mode screen: the MQTT dot appears or goes.
      this.redraw();
    }
    return { enabled: next, saved };
  }

  /**
   * The change is in effect at once, either way (the answer says so); a settings file that cannot be written only
   * costs persistence, and the log says what to fix.
   */
  private save(changes: Partial<Settings>): Promise<void> {
    return this.settings.update(changes).catch((e: Error) => {
      this.log(`warning: could not save the settings (${e.message}); the change is in effect but will not survive a restart. Check the state folder.`);
    });
  }

  /** For the MQTT client: its PubSubClient-style state code and whether it is connected. */
  setMqttStatus(state: number, connected: boolean): void {
    if (state === this.mqttState && connected === this.mqttConnected) return;
    this.mqttState = state;
    this.mqttConnected = connected;
    this.emitChange("mqtt-status");
    this.redraw();
  }

  /** For the card: its figures changed (uploads, FTP writes, other programs). */
  cardChanged(): void {
    this.emitChange("card");
    this.redraw();
  }

  /**
   * Waits for the transitions under way, then says why entering `mode` failed (undefined when it did not,
   * or another request changed the mode since). For answering a switch request with its outcome.
   */
  async switchOutcome(mode: Mode): Promise<string | undefined> {
    await this.settled();
    return this.mode === mode ? undefined : this.switchFailures.get(mode);
  }

  /**
   * For the FTP server: a file transfer started or ended. The firmware blinks the LED while data flows and
   * leaves it on afterwards, even if it was switched off.
   */
  ftpTransfer(phase: "start" | "end", t: FtpTransfer): void {
    if (phase === "start") {
      this.transfers++;
      if (t.direction === "upload") this.written.current = t.path;
    } else {
      this.transfers = Math.max(0, this.transfers - 1);
      if (t.direction === "upload" && t.ok) {
        this.written.files++;
        this.written.bytes += t.bytes;
      }
      if (this.written.current === t.path) this.written.current = "";
      if (!this.ledOn) {
        this.ledOn = true;
        this.showLed();
        this.emitChange("led");
      }
    }
    this.emitChange("transfer");
  }

  /**
   * Runs `swap` (a collection's switch) in USB MSC mode: after the transitions under way, and with a mode switch
   * asked for meanwhile waiting until it is done. In FTP mode (or switching to it) DEVICE_COLLECTION_NEEDS_MSC.
   */
  async inMsc<T>(swap: () => Promise<T>): Promise<T> {
    while (this.reconciling) await this.reconciling;
    if (this.phase !== "running" || this.mode !== "msc" || this.applied !== "msc") throw new DeviceError("DEVICE_COLLECTION_NEEDS_MSC", {});
    const run = swap();
    this.reconciling = run
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.reconciling = undefined;
        this.kick();
      });
    return run;
  }

  /** Resolves once the hardware has caught up with the mode. */
  async settled(): Promise<void> {
    while (this.reconciling) await this.reconciling;
  }

  // --- hardware -------------------------------------------------------------------------------------------------

  private kick(): void {
    if (this.reconciling || this.phase !== "running") return;
    this.reconciling = this.reconcile().finally(() => {
      this.reconciling = undefined;
    });
  }

  private async reconcile(): Promise<void> {
    while (this.phase === "running" && this.applied !== this.mode) {
      const target = this.mode;
      try {
        if (target === "ftp") await this.enterFtp();
        else await this.enterMsc();
        this.applied = target;
        this.switchFailures.delete(target);
      } catch (e) {
        this.switchFailures.set(target, (e as Error).message);
        this.log(`could not switch to ${MODE_NAMES[target]} mode: ${(e as Error).message}; staying in USB MSC mode`);
        await this.enterMsc().catch(() => undefined);
        this.applied = "msc";
        if (this.mode !== "msc") {
          this.mode = "msc";
          this.ledOn = true;
          this.showLed();
          this.emitChange("mode");
        }
        break;
      }
    }
    this.redraw();
  }

  private async enterFtp(): Promise<void> {
    this.written = { files: 0, bytes: 0, current: "" };
    this.transfers = 0;
    await this.hardware.usb.detach();
    await this.card.setWritable(true);
    await this.ftp.start();
  }

  private async enterMsc(): Promise<void> {
    if (this.applied === "ftp") await this.stopFtp();
    await this.card.setWritable(false);
    await this.hardware.usb.attach(this.card.root);
  }

  private async stopFtp(): Promise<void> {
    try {
      await this.ftp.stop();
    } catch (e) {
      this.log(`stopping the FTP server failed: ${(e as Error).message}`);
    }
  }

  private ledColor(): LedColor {
    if (this.phase === "booting" || this.phase === "stopped") return "yellow";
    if (this.phase === "setup") return "blue";
    return this.mode === "ftp" ? "purple" : "green";
  }

  private showLed(): void {
    this.hardware.led.show(this.ledOn ? this.ledColor() : undefined, this.settings.current().ledBrightness);
  }

  private redraw(): void {
    if (this.phase !== "running") return;
    void this.card.figures().then(
      (f) => {
        const screen: Screen = {
          kind: "mode",
          mode: this.mode === "ftp" ? "FTP" : "USB MSC",
          address: this.network.address,
          mac: this.network.mac,
          files: f.fileCount,
          totalBytes: f.totalSize,
          freeBytes: f.freeSize,
          mqttConnected: this.settings.current().mqttEnabled ? this.mqttConnected : undefined,
        };
        this.hardware.display.draw(screen);
      },
      () => undefined,
    );
  }

  private emitChange(what: Change): void {
    this.emit("change", what, this.snapshot());
  }
}
