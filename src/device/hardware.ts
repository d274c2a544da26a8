// The device's hardware behind small interfaces. The simulated implementations (the default) keep what the real
// parts would show, so a panel or a test can read it; a real backend (a Linux USB gadget, say) plugs in here.
import { EventEmitter } from "node:events";

export type LedColor = "yellow" | "blue" | "green" | "purple";

/** What the 160x80 ST7735 screen shows; the firmware draws these fields for each mode. */
export type Screen =
  | { kind: "boot"; version: string }
  | { kind: "setup"; ssid: string; address: string }
  | {
      kind: "mode";
      mode: "USB MSC" | "FTP";
      address: string;
      mac: string;
      files: number;
      totalBytes: number;
      freeBytes: number;
      /** undefined = MQTT disabled (no icon); true = green dot; false = red dot. */
      mqttConnected: boolean | undefined;
    };

export interface Display {
  setBacklight(on: boolean): void;
  setOrientation(orientation: number): void;
  draw(screen: Screen): void;
}

export interface Led {
  /** `undefined` = dark. */
  show(color: LedColor | undefined, brightness: number): void;
}

/** The USB mass-storage function: while attached, the card belongs to the USB host (the picture frame). */
export interface UsbMassStorage {
  attach(cardRoot: string): Promise<void>;
  detach(): Promise<void>;
  /**
   * For a backend whose card is a filesystem image mounted only while detached (the Linux USB gadget,
   * gadget/usb.ts): whether it is mounted at the card folder now. Absent = the card folder is always there.
   */
  mounted?: () => boolean;
}

export interface Wifi {
  /** Joins the stored network; resolves with the address and MAC the screen shows. */
  connect(ssid: string): Promise<{ address: string; mac: string }>;
  /** Starts the device's own access point for the setup page. */
  startAccessPoint(): Promise<{ ssid: string; address: string }>;
  disconnect(): Promise<void>;
}

export interface Hardware {
  display: Display;
  led: Led;
  usb: UsbMassStorage;
  wifi: Wifi;
}

/** Emits "change" after every call, so the web panel can show what the screen shows. */
export class SimulatedDisplay extends EventEmitter<{ change: [] }> implements Display {
  backlight = true;
  orientation = 1;
  screen: Screen | undefined;
  setBacklight(on: boolean): void {
    this.backlight = on;
    this.emit("change");
  }
  setOrientation(orientation: number): void {
    this.orientation = orientation;
    this.emit("change");
  }
  draw(screen: Screen): void {
    this.screen = screen;
    this.emit("change");
  }
}

export class SimulatedLed implements Led {
  color: LedColor | undefined;
  brightness = 0;
  show(color: LedColor | undefined, brightness: number): void {
    this.color = color;
    this.brightness = brightness;
  }
}

export class SimulatedUsb implements UsbMassStorage {
  attachedTo: string | undefined;
  async attach(cardRoot: string): Promise<void> {
    this.attachedTo = cardRoot;
  }
  async detach(): Promise<void> {
    this.attachedTo = undefined;
  }
}

export class SimulatedWifi implements Wifi {
  constructor(
    private readonly address: string,
    private readonly setupAddress: string,
  ) {}
  readonly mac = "02:46:52:41:4D:45";
  async connect(): Promise<{ address: string; mac: string }> {
    return { address: this.address, mac: this.mac };
  }
  async startAccessPoint(): Promise<{ ssid: string; address: string }> {
    return { ssid: `FrameFi-${this.mac.replace(/:/g, "").slice(-6)}`, address: this.setupAddress };
  }
  async disconnect(): Promise<void> {}
}

export function simulatedHardware(apiAddress: string, setupAddress: string): Hardware {
  return {
    display: new SimulatedDisplay(),
    led: new SimulatedLed(),
    usb: new SimulatedUsb(),
    wifi: new SimulatedWifi(apiAddress, setupAddress),
  };
}
