// The 160x80 ST7735 display as an SVG picture, drawn the way the firmware draws it with TFT_eSPI: the same
// coordinates, colours (Catppuccin Mocha), 6x8 text cells of the built-in font 1, text that wraps at the edge,
// and the same layouts for landscape (rotations 1, 3) and portrait (0, 2). The picture is always the physical
// 160x80 panel: portrait and inverted screens appear turned, as on the dongle.
import type { Screen } from "../hardware.js";
import type { DisplayView, HeaderColor, InfoScreen, PanelScreen } from "./view.js";

export const PANEL_WIDTH = 160;
export const PANEL_HEIGHT = 80;

export const MOCHA = {
  base: "#1e1e2e",
  crust: "#11111b",
  text: "#cdd6f4",
  lavender: "#b4befe",
  blue: "#89b4fa",
  mauve: "#cba6f7",
  peach: "#fab387",
  yellow: "#f9e2af",
  green: "#a6e3a1",
  red: "#f38ba8",
} as const;

const HEADER: Record<HeaderColor, string> = {
  blue: MOCHA.blue,
  peach: MOCHA.peach,
  red: MOCHA.red,
  yellow: MOCHA.yellow,
  mauve: MOCHA.mauve,
  green: MOCHA.green,
};

/** Font 1 of TFT_eSPI: 5x7 glyphs in 6x8 cells. */
const CELL_W = 6;
const CELL_H = 8;
/** Monospace at this size has 5x7-pixel capitals; each text's textLength pins its glyphs to 6-pixel cells. */
const FONT1 = `font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="9.5"`;
const FONT2 = "DejaVu Sans, Verdana, sans-serif";

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A little TFT_eSPI: a cursor, a text colour, print(), rectangles, circles and centred strings, recorded as SVG. */
class Tft {
  private readonly parts: string[] = [];
  private x = 0;
  private y = 0;
  private color: string = MOCHA.text;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {}

  fillScreen(color: string): void {
    this.fillRect(0, 0, this.width, this.height, color);
  }

  fillRect(x: number, y: number, w: number, h: number, color: string): void {
    if (w <= 0 || h <= 0) return;
    this.parts.push(`<rect x="${x}" y="${y}" width="${w}" height="${h}" fill="${color}"/>`);
  }

  fillCircle(cx: number, cy: number, r: number, color: string): void {
    this.parts.push(`<circle cx="${cx}" cy="${cy}" r="${r + 0.5}" fill="${color}"/>`);
  }

  setCursor(x: number, y: number): void {
    this.x = x;
    this.y = y;
  }

  get cursorX(): number {
    return this.x;
  }

  setTextColor(color: string): void {
    this.color = color;
  }

  /** Prints at the cursor in font 1 and moves it on; wraps to the next line at the right edge, as TFT_eSPI does. */
  print(text: string): void {
    for (const piece of this.wrap(text)) {
      const visible = piece.text.trim();
      if (visible !== "") {
        const lead = piece.text.length - piece.text.trimStart().length;
        this.glyphs(visible, piece.x + lead * CELL_W, piece.y, "start");
      }
    }
  }

  /** drawCentreString(text, x, y, font): font 1 is the 6x8 font, font 2 the 16-pixel proportional one. */
  drawCentreString(text: string, x: number, y: number, font: 1 | 2): void {
    if (text === "") return;
    if (font === 1) {
      this.glyphs(text, x, y, "middle");
      return;
    }
    this.parts.push(
      `<text x="${x}" y="${y + 12}" text-anchor="middle" font-family="${FONT2}" font-size="12" fill="${this.color}">${escapeXml(text)}</text>`,
    );
  }

  svgBody(): string {
    return this.parts.join("");
  }

  private glyphs(text: string, x: number, y: number, anchor: "start" | "middle"): void {
    const length = text.length * CELL_W - 1;
    this.parts.push(
      `<text x="${x}" y="${y + 7}"${anchor === "middle" ? ' text-anchor="middle"' : ""} textLength="${length}" lengthAdjust="spacingAndGlyphs" fill="${this.color}">${escapeXml(text)}</text>`,
    );
  }

  private wrap(text: string): Array<{ text: string; x: number; y: number }> {
    const pieces: Array<{ text: string; x: number; y: number }> = [];
    let current = { text: "", x: this.x, y: this.y };
    for (const ch of text) {
      if (this.x + CELL_W > this.width) {
        if (current.text !== "") pieces.push(current);
        this.x = 0;
        this.y += CELL_H;
        current = { text: "", x: 0, y: this.y };
      }
      current.text += ch;
      this.x += CELL_W;
    }
    if (current.text !== "") pieces.push(current);
    return pieces;
  }
}

/** Arduino's print(float, 2). */
const fixed2 = (n: number): string => n.toFixed(2);

function drawHeader(tft: Tft, title: string, color: string): void {
  tft.fillRect(0, 0, tft.width, 12, color);
  tft.setTextColor(MOCHA.crust);
  tft.drawCentreString(title, tft.width / 2, 2, 1);
}

function drawInfoScreen(tft: Tft, s: InfoScreen): void {
  tft.fillScreen(MOCHA.base);
  drawHeader(tft, s.title, HEADER[s.header]);
  tft.setTextColor(MOCHA.text);
  tft.drawCentreString(s.message, tft.width / 2, 30, 2);
  tft.setTextColor(MOCHA.lavender);
  tft.drawCentreString(s.detail, tft.width / 2, 55, 1);
}

/** The host of an address such as "http://192.168.1.20:8080" (the screen shows an IP, not a URL). */
export function hostOf(address: string): string {
  try {
    return new URL(address).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return address;
  }
}

/** label then value on one line (landscape), or on two lines (portrait); returns the y of the next line. */
function field(tft: Tft, landscape: boolean, y: number, label: string, value: string, valueColor: string): number {
  tft.setCursor(5, y);
  tft.setTextColor(MOCHA.mauve);
  if (landscape) {
    tft.print(label.padEnd(7));
  } else {
    tft.print(label.trimEnd());
    y += 12;
    tft.setCursor(5, y);
  }
  tft.setTextColor(valueColor);
  tft.print(value);
  return y + 12;
}

function drawApModeScreen(tft: Tft, landscape: boolean, s: Extract<Screen, { kind: "setup" }>): void {
  tft.fillScreen(MOCHA.base);
  drawHeader(tft, "FrameFi Setup", MOCHA.yellow);
  let y = field(tft, landscape, 17, "Mode:", "AP", MOCHA.green);
  y = field(tft, landscape, y, "AP IP:", hostOf(s.address), MOCHA.yellow);
  tft.setCursor(5, y);
  tft.setTextColor(MOCHA.mauve);
  tft.print(landscape ? "SSID:  " : "SSID:");
  // The SSID goes on its own line when it does not fit after the label.
  if (!landscape || s.ssid.length * CELL_W > tft.width - tft.cursorX) {
    y += 12;
    tft.setCursor(5, y);
  }
  tft.setTextColor(MOCHA.yellow);
  tft.print(s.ssid);
}

function drawStorageInfo(tft: Tft, landscape: boolean, files: number, totalBytes: number, freeBytes: number): void {
  // The firmware's arithmetic: whole MB of capacity, fractional MB free, GB with two decimals, a whole percentage.
  const totalMB = Math.floor(totalBytes / (1024 * 1024));
  const freeMB = freeBytes / (1024 * 1024);
  const usedMB = Math.max(0, totalMB - freeMB);
  const usedPercent = totalMB > 0 ? (usedMB / totalMB) * 100 : 0;
  const usedLabel = `${fixed2(usedMB / 1024)}GB (${Math.trunc(usedPercent)} %)`;
  const sizeLabel = `${fixed2(totalMB / 1024)}GB`;
  if (landscape) {
    tft.setCursor(5, 53);
    tft.setTextColor(MOCHA.mauve);
    tft.print("Size:  ");
    tft.setTextColor(MOCHA.peach);
    tft.print(sizeLabel);
    tft.setTextColor(MOCHA.mauve);
    tft.print(" Files: ");
    tft.setTextColor(MOCHA.peach);
    tft.print(String(files));
    tft.setCursor(5, 65);
    tft.setTextColor(MOCHA.mauve);
    tft.print("Used:  ");
    tft.setTextColor(MOCHA.peach);
    tft.print(usedLabel);
    // The capacity bar along the bottom edge.
    const barWidth = PANEL_WIDTH - 10;
    tft.fillRect(5, tft.height - 3, Math.floor((barWidth * usedPercent) / 100), 3, MOCHA.green);
    return;
  }
  let y = field(tft, false, 90, "Files:", String(files), MOCHA.peach);
  y = field(tft, false, y, "Size:", sizeLabel, MOCHA.peach);
  field(tft, false, y, "Used:", usedLabel, MOCHA.peach);
  // The capacity bar up the left edge, filling from the bottom.
  const barHeight = tft.height - 12;
  const filled = Math.floor((barHeight * usedPercent) / 100);
  tft.fillRect(0, tft.height - filled, 3, filled, MOCHA.green);
}

function drawModeScreen(tft: Tft, landscape: boolean, s: Extract<Screen, { kind: "mode" }>): void {
  tft.fillScreen(MOCHA.base);
  drawHeader(tft, "FrameFi", s.mode === "FTP" ? MOCHA.green : MOCHA.mauve);
  tft.setCursor(5, 17);
  tft.setTextColor(MOCHA.mauve);
  let y = 17;
  if (landscape) {
    tft.print("Mode:  ");
  } else {
    tft.print("Mode:");
    y += 12;
    tft.setCursor(5, y);
  }
  tft.setTextColor(MOCHA.green);
  tft.print(s.mode);
  // The MQTT dot: green when connected, red when not, absent when MQTT is disabled.
  if (s.mqttConnected !== undefined) tft.fillCircle(tft.cursorX + 8, y + 3, 3, s.mqttConnected ? MOCHA.green : MOCHA.red);
  y += 12;
  const ip = hostOf(s.address);
  // In portrait the firmware drops the dots and colons so the values fit the 80-pixel width.
  y = field(tft, landscape, y, "IP:", landscape ? ip : ip.replace(/\./g, ""), MOCHA.yellow);
  field(tft, landscape, y, "MAC:", landscape ? s.mac : s.mac.replace(/:/g, ""), MOCHA.yellow);
  drawStorageInfo(tft, landscape, s.files, s.totalBytes, s.freeBytes);
}

function drawScreen(tft: Tft, landscape: boolean, screen: PanelScreen): void {
  switch (screen.kind) {
    case "info":
      drawInfoScreen(tft, screen);
      return;
    case "setup":
      drawApModeScreen(tft, landscape, screen);
      return;
    case "mode":
      drawModeScreen(tft, landscape, screen);
      return;
    case "blank":
      tft.fillScreen(MOCHA.base);
      return;
  }
}

/** Maps the logical screen of a rotation onto the physical 160x80 panel. */
const ROTATION: Record<number, string> = {
  0: `translate(0 ${PANEL_HEIGHT}) rotate(-90)`,
  1: "",
  2: `translate(${PANEL_WIDTH} 0) rotate(90)`,
  3: `rotate(180 ${PANEL_WIDTH / 2} ${PANEL_HEIGHT / 2})`,
};

/** A one-line description of the screen, for screen readers and the picture's title. */
export function describeScreen(view: DisplayView): string {
  if (!view.backlight) return "FrameFi display: off";
  const s = view.screen;
  switch (s.kind) {
    case "info":
      return `FrameFi display: ${s.message}`;
    case "setup":
      return `FrameFi display: setup, access point ${s.ssid}`;
    case "mode":
      return `FrameFi display: mode ${s.mode}, ${s.files} files`;
    case "blank":
      return "FrameFi display: blank";
  }
}

/** The display as an SVG document of 160x80 pixels (scaled by `scale` for its width and height attributes). */
export function renderDisplaySvg(view: DisplayView, scale = 1): string {
  const orientation = view.orientation in ROTATION ? view.orientation : 1;
  const landscape = orientation === 1 || orientation === 3;
  const title = escapeXml(describeScreen(view));
  const open =
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${PANEL_WIDTH} ${PANEL_HEIGHT}" width="${PANEL_WIDTH * scale}" height="${PANEL_HEIGHT * scale}"` +
    ` role="img" aria-label="${title}" data-backlight="${view.backlight ? "on" : "off"}" data-orientation="${orientation}" data-screen="${view.screen.kind === "mode" ? view.screen.mode : view.screen.kind}">` +
    `<title>${title}</title>`;
  // Backlight off: the panel is dark; nothing of the picture shows.
  if (!view.backlight) return `${open}<rect width="${PANEL_WIDTH}" height="${PANEL_HEIGHT}" fill="#050507"/></svg>`;
  const tft = landscape ? new Tft(PANEL_WIDTH, PANEL_HEIGHT) : new Tft(PANEL_HEIGHT, PANEL_WIDTH);
  drawScreen(tft, landscape, view.screen);
  const transform = ROTATION[orientation]!;
  const body = transform ? `<g transform="${transform}">${tft.svgBody()}</g>` : tft.svgBody();
  return `${open}<g shape-rendering="crispEdges" ${FONT1}>${body}</g></svg>`;
}
