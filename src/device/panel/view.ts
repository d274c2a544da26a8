// What the device looks like at a moment: the display (backlight, orientation, the screen it shows) and the LED.
// Derived from the state machine's snapshot and from what the state machine last drew on the display, plus the
// two screens the firmware draws while something is happening: "Entering FTP Mode..." and "Resetting Wi-Fi...".
import type { LedColor, Screen } from "../hardware.js";
import type { Snapshot } from "../state.js";
import type { PullRecord } from "../pull/puller.js";

/** The firmware's header colours (Catppuccin Mocha names). */
export type HeaderColor = "blue" | "peach" | "red" | "yellow" | "mauve" | "green";

/** drawInfoScreen(title, message, detail, header colour): boot, FTP transition and Wi-Fi reset. */
export interface InfoScreen {
  kind: "info";
  title: string;
  message: string;
  detail: string;
  header: HeaderColor;
}

/** A screen the panel can draw: an info screen, the setup (AP) screen, a mode screen, or the blank screen of a restart. */
export type PanelScreen = InfoScreen | Exclude<Screen, { kind: "boot" }> | { kind: "blank" };

export interface DisplayView {
  backlight: boolean;
  /** 0 portrait, 1 landscape, 2 portrait inverted, 3 landscape inverted. */
  orientation: number;
  screen: PanelScreen;
}

export interface LedView {
  /** undefined = dark. */
  color: LedColor | undefined;
  brightness: number;
  /** Blinking, as the firmware's LED does while FTP transfers run. */
  blinking: boolean;
}

/** Beyond the firmware: what FTP mode has written so far (files, bytes) and the file being written now. */
export interface ProgressView {
  files: number;
  bytes: number;
  current: string;
}

export interface DeviceView {
  phase: Snapshot["phase"];
  mode: Snapshot["mode"];
  display: DisplayView;
  led: LedView;
  /** Present while the device runs in FTP mode. */
  progress: ProgressView | undefined;
  /** With --pull: the last pull (undefined before the first ends). */
  pull?: PullRecord | undefined;
}

export const bootScreen = (version: string): InfoScreen => ({ kind: "info", title: "FrameFi", message: "Booting...", detail: version, header: "blue" });
export const ftpTransitionScreen: InfoScreen = { kind: "info", title: "FrameFi", message: "Entering FTP Mode...", detail: "", header: "peach" };
export const wifiResetScreen: InfoScreen = { kind: "info", title: "FrameFi", message: "Resetting Wi-Fi...", detail: "Restarting...", header: "red" };

function screenOf(snapshot: Snapshot, drawn: Screen | undefined): PanelScreen {
  if (snapshot.wifiReset) return wifiResetScreen;
  if (snapshot.phase === "stopped") return { kind: "blank" };
  // The firmware draws the transition screen before it hands the card to the FTP server.
  if (snapshot.phase === "running" && snapshot.switching && snapshot.mode === "ftp") return ftpTransitionScreen;
  if (!drawn) return { kind: "blank" };
  if (drawn.kind === "boot") return bootScreen(drawn.version);
  return drawn;
}

export function deviceView(snapshot: Snapshot, drawn: Screen | undefined): DeviceView {
  return {
    phase: snapshot.phase,
    mode: snapshot.mode,
    display: { backlight: snapshot.display.on, orientation: snapshot.display.orientation, screen: screenOf(snapshot, drawn) },
    led: {
      color: snapshot.led.on && snapshot.led.brightness > 0 ? snapshot.led.color : undefined,
      brightness: snapshot.led.brightness,
      blinking: snapshot.transfers > 0 && snapshot.led.on && snapshot.led.brightness > 0,
    },
    progress: snapshot.phase === "running" && snapshot.mode === "ftp" ? { ...snapshot.written } : undefined,
  };
}
