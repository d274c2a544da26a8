// The 160x80 ST7735 display as an SVG picture, drawn the way the firmware draws it with TFT_eSPI: the same
// coordinates, colours (Catppuccin Mocha), the glyphs of the built-in font 1 in 6x8 cells, text that wraps at the
// edge, and the same layouts for landscape (rotations 1, 3) and portrait (0, 2). The picture is always the physical
// 160x80 panel: portrait and inverted screens appear turned, as on the dongle. The same drawing gives an SVG (text
// as paths of glyph pixels) and a PNG.
import type { Screen } from "../hardware.js";
import { encodePng } from "./png.js";
import { glyphPixels } from "./font.js";
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

/** A panel with its backlight off. */
const DARK = "#050507";

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

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * What was drawn, in order. Text is font 1's glyphs; `tall` text stands in for font 2 (TFT_eSPI's 16-pixel font,
 * whose data is not part of the GFX font): the same glyphs at twice the height.
 */
type Op =
  | { kind: "rect"; x: number; y: number; w: number; h: number; color: string }
  | { kind: "circle"; cx: number; cy: number; r: number; color: string }
  | { kind: "text"; x: number; y: number; text: string; color: string; tall: boolean };

/** A little TFT_eSPI: a cursor, a text colour, print(), rectangles, circles and centred strings, recorded as drawing steps. */
class Tft {
  readonly ops: Op[] = [];
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
    this.ops.push({ kind: "rect", x, y, w, h, color });
  }

  fillCircle(cx: number, cy: number, r: number, color: string): void {
    this.ops.push({ kind: "circle", cx, cy, r, color });
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
      const visible = piece.text.trimEnd();
      const lead = visible.length - visible.trimStart().length;
      if (visible.trim() !== "")
        this.ops.push({ kind: "text", x: piece.x + lead * CELL_W, y: piece.y, text: visible.trimStart(), color: this.color, tall: false });
    }
  }

  /** drawCentreString(text, x, y, font): font 1 is the 6x8 font, font 2 the 16-pixel one. */
  drawCentreString(text: string, x: number, y: number, font: 1 | 2): void {
    if (text === "") return;
    const left = x - Math.floor((text.length * CELL_W) / 2);
    this.ops.push({ kind: "text", x: left, y, text, color: this.color, tall: font === 2 });
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

/** Calls `lit(x, y, height)` for each lit pixel of `text`'s glyphs (height 2 for tall text). */
function eachGlyphPixel(op: Extract<Op, { kind: "text" }>, lit: (x: number, y: number, h: number) => void): void {
  const h = op.tall ? 2 : 1;
  [...op.text].forEach((ch, i) => {
    for (const [gx, gy] of glyphPixels(ch)) lit(op.x + i * CELL_W + gx, op.y + gy * h, h);
  });
}

/** A text's glyphs as one SVG path: a rectangle for each run of lit pixels in a row. */
function textPath(op: Extract<Op, { kind: "text" }>): string {
  const rows = new Map<number, number[]>();
  const h = op.tall ? 2 : 1;
  eachGlyphPixel(op, (x, y) => {
    const row = rows.get(y);
    if (row) row.push(x);
    else rows.set(y, [x]);
  });
  let d = "";
  for (const [y, xs] of rows) {
    xs.sort((a, b) => a - b);
    for (let i = 0; i < xs.length; ) {
      let j = i;
      while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
      d += `M${xs[i]} ${y}h${j - i + 1}v${h}h${-(j - i + 1)}z`;
      i = j + 1;
    }
  }
  return `<path data-text="${escapeXml(op.text)}" fill="${op.color}" d="${d}"/>`;
}

function svgOf(ops: Op[]): string {
  return ops
    .map((op) => {
      if (op.kind === "rect") return `<rect x="${op.x}" y="${op.y}" width="${op.w}" height="${op.h}" fill="${op.color}"/>`;
      if (op.kind === "circle") return `<circle cx="${op.cx}" cy="${op.cy}" r="${op.r + 0.5}" fill="${op.color}"/>`;
      return textPath(op);
    })
    .join("");
}

/** Draws the steps into an RGB framebuffer of width x height. */
function rasterize(ops: Op[], width: number, height: number): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  let [r, g, b] = [0, 0, 0];
  const set = (x: number, y: number): void => {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    const at = (y * width + x) * 3;
    rgb[at] = r;
    rgb[at + 1] = g;
    rgb[at + 2] = b;
  };
  for (const op of ops) {
    const n = parseInt(op.color.slice(1), 16);
    [r, g, b] = [n >> 16, (n >> 8) & 0xff, n & 0xff];
    if (op.kind === "rect") {
      for (let y = op.y; y < op.y + op.h; y++) for (let x = op.x; x < op.x + op.w; x++) set(x, y);
    } else if (op.kind === "circle") {
      for (let dy = -op.r; dy <= op.r; dy++) for (let dx = -op.r; dx <= op.r; dx++) if (dx * dx + dy * dy <= op.r * (op.r + 1)) set(op.cx + dx, op.cy + dy);
    } else {
      eachGlyphPixel(op, (x, y, h) => {
        for (let k = 0; k < h; k++) set(x, y + k);
      });
    }
  }
  return rgb;
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
  const title = escapeXml(describeScreen(view));
  const open =
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${PANEL_WIDTH} ${PANEL_HEIGHT}" width="${PANEL_WIDTH * scale}" height="${PANEL_HEIGHT * scale}"` +
    ` role="img" aria-label="${title}" data-backlight="${view.backlight ? "on" : "off"}" data-orientation="${orientation}" data-screen="${view.screen.kind === "mode" ? view.screen.mode : view.screen.kind}">` +
    `<title>${title}</title>`;
  // Backlight off: the panel is dark; nothing of the picture shows.
  if (!view.backlight) return `${open}<rect width="${PANEL_WIDTH}" height="${PANEL_HEIGHT}" fill="${DARK}"/></svg>`;
  const body = svgOf(draw(view).ops);
  const transform = ROTATION[orientation]!;
  return `${open}<g shape-rendering="crispEdges">${transform ? `<g transform="${transform}">${body}</g>` : body}</g></svg>`;
}

/** The display as a PNG of 160x80 pixels, each `scale` x `scale` screen pixels. */
export function renderDisplayPng(view: DisplayView, scale = 1): Buffer {
  const orientation = view.orientation in ROTATION ? view.orientation : 1;
  const tft = draw(view);
  const logical = view.backlight ? rasterize(tft.ops, tft.width, tft.height) : undefined;
  const dark = parseInt(DARK.slice(1), 16);
  // The physical panel, each pixel taken from its logical source as the SVG's rotation transforms place it.
  const panel = new Uint8Array(PANEL_WIDTH * PANEL_HEIGHT * 3);
  for (let py = 0; py < PANEL_HEIGHT; py++) {
    for (let px = 0; px < PANEL_WIDTH; px++) {
      const at = (py * PANEL_WIDTH + px) * 3;
      if (!logical) {
        panel[at] = dark >> 16;
        panel[at + 1] = (dark >> 8) & 0xff;
        panel[at + 2] = dark & 0xff;
        continue;
      }
      let x = px;
      let y = py;
      if (orientation === 0) [x, y] = [PANEL_HEIGHT - 1 - py, px];
      else if (orientation === 2) [x, y] = [py, PANEL_WIDTH - 1 - px];
      else if (orientation === 3) [x, y] = [PANEL_WIDTH - 1 - px, PANEL_HEIGHT - 1 - py];
      panel.set(logical.subarray((y * tft.width + x) * 3, (y * tft.width + x) * 3 + 3), at);
    }
  }
  if (scale === 1) return encodePng(PANEL_WIDTH, PANEL_HEIGHT, panel);
  const width = PANEL_WIDTH * scale;
  const out = new Uint8Array(width * PANEL_HEIGHT * scale * 3);
  for (let py = 0; py < PANEL_HEIGHT; py++) {
    const row = new Uint8Array(width * 3);
    for (let px = 0; px < PANEL_WIDTH; px++) {
      for (let k = 0; k < scale; k++) row.set(panel.subarray((py * PANEL_WIDTH + px) * 3, (py * PANEL_WIDTH + px) * 3 + 3), (px * scale + k) * 3);
    }
    for (let k = 0; k < scale; k++) out.set(row, (py * scale + k) * width * 3);
  }
  return encodePng(width, PANEL_HEIGHT * scale, out);
}

/** The screen drawn on a landscape (160x80) or portrait (80x160) canvas. */
function draw(view: DisplayView): Tft {
  const orientation = view.orientation in ROTATION ? view.orientation : 1;
  const landscape = orientation === 1 || orientation === 3;
  const tft = landscape ? new Tft(PANEL_WIDTH, PANEL_HEIGHT) : new Tft(PANEL_HEIGHT, PANEL_WIDTH);
  drawScreen(tft, landscape, view.screen);
  return tft;
}
