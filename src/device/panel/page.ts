// The panel page: the T-Dongle-S3 drawn as it looks (USB plug, case, the display, the LED, the button), kept live by
// server-sent events from /panel/events. The button works with a mouse, a finger or the keyboard: a click toggles
// the mode, holding it 3 s resets Wi-Fi, as OneButton does on the device.
import type { DeviceView } from "./view.js";

const STYLE = `
:root { color-scheme: dark; --bg: #181825; --fg: #cdd6f4; --muted: #a6adc8; --case: #2b2d31; --case-edge: #3c3f45; }
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; align-items: center; justify-content: center;
  gap: 28px; background: radial-gradient(circle at 50% 35%, #25263a, var(--bg) 70%); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; padding: 24px; }
h1 { margin: 0; font-size: 20px; font-weight: 600; letter-spacing: .02em; }
h1 small { color: var(--muted); font-weight: 400; font-size: 14px; margin-left: 8px; }
.dongle { display: flex; align-items: center; filter: drop-shadow(0 18px 24px rgba(0,0,0,.55)); }
.plug { width: 104px; height: 124px; border-radius: 6px 0 0 6px; background: linear-gradient(#e4e6ea, #a9adb4 45%, #d6d9de);
  position: relative; border: 1px solid #8d9096; }
.plug::before, .plug::after { content: ""; position: absolute; left: 30px; width: 34px; height: 16px; background: #3b3e44; border-radius: 2px; }
.plug::before { top: 30px; } .plug::after { bottom: 30px; }
.case { width: 560px; height: 200px; border-radius: 8px 34px 34px 8px; background: linear-gradient(160deg, #3a3c42, var(--case) 40%, #1f2024);
  border: 1px solid var(--case-edge); display: flex; align-items: center; padding: 0 26px 0 30px; gap: 26px; position: relative; }
.case::after { content: "T-Dongle-S3"; position: absolute; top: 12px; right: 44px; font-size: 11px; letter-spacing: .18em; color: #6c6f78; }
.bezel { padding: 10px 12px; background: #0b0b0f; border-radius: 6px; box-shadow: inset 0 0 0 1px #000, 0 0 0 2px #44474f; }
#display { width: 320px; height: 160px; line-height: 0; }
#display svg { width: 320px; height: 160px; image-rendering: pixelated; display: block; }
.side { display: flex; flex-direction: column; align-items: center; gap: 30px; }
.led-window { width: 30px; height: 30px; border-radius: 50%; background: #16171b; display: grid; place-items: center; box-shadow: inset 0 1px 3px #000; }
#led { width: 16px; height: 16px; border-radius: 50%; background: #2c2d33; transition: background .15s, box-shadow .15s, opacity .15s; }
#led.blink { animation: blink .3s steps(1, end) infinite; }
@keyframes blink { 50% { background: #2c2d33; box-shadow: none; } }
#button { width: 62px; height: 62px; border-radius: 50%; border: 0; cursor: pointer; position: relative; touch-action: none; user-select: none;
  -webkit-user-select: none; -webkit-touch-callout: none; background: radial-gradient(circle at 40% 35%, #5b5e66, #2e3036 70%);
  box-shadow: 0 4px 0 #15161a, 0 0 0 4px #1b1c20; color: #9aa0ab; font: 600 10px/1 system-ui, sans-serif; letter-spacing: .12em; }
#button:focus-visible { outline: 2px solid #89b4fa; outline-offset: 6px; }
#button.pressed { transform: translateY(3px); box-shadow: 0 1px 0 #15161a, 0 0 0 4px #1b1c20; }
#hold { position: absolute; inset: -9px; border-radius: 50%; pointer-events: none;
  background: conic-gradient(#f38ba8 calc(var(--p, 0) * 1%), transparent 0); -webkit-mask: radial-gradient(circle, transparent 38px, #000 39px);
  mask: radial-gradient(circle, transparent 38px, #000 39px); }
.info { width: min(720px, 100%); display: grid; gap: 10px; text-align: center; }
#status { font-size: 16px; }
#progress { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; color: var(--muted); min-height: 1.4em;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.help, .links { color: var(--muted); font-size: 13px; }
.links a, #status a { color: #89b4fa; }
#link { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #313244; color: #a6e3a1; margin-left: 6px; }
body.offline #link { color: #f38ba8; }
body.offline #display { opacity: .55; }
@media (max-width: 720px) { .dongle { zoom: .5; } }
`;

const SCRIPT = `
const display = document.getElementById("display");
const led = document.getElementById("led");
const statusLine = document.getElementById("status");
const progress = document.getElementById("progress");
const pull = document.getElementById("pull");
const help = document.getElementById("help");
const link = document.getElementById("link");
const button = document.getElementById("button");
const hold = document.getElementById("hold");
const LED_COLORS = { yellow: "#ffd43b", blue: "#4dabf7", green: "#51cf66", purple: "#cc5de8" };
const MODE_NAMES = { msc: "USB MSC", ftp: "FTP" };
const PHASES = { booting: "booting", setup: "in Wi-Fi setup mode", stopped: "restarting" };
const HOLD_MS = 3000;
const HELP = {
  running: "Click the button to switch between USB MSC and FTP mode; hold it for 3 seconds to reset Wi-Fi, as on the device.",
  setup: "In Wi-Fi setup mode the button does nothing: save the setup page to join a network, and the device restarts into USB MSC mode.",
  other: "The button works once the device has booted.",
};

/** Sizes as the firmware's screen counts them: powers of 1024, labelled KB, MB, GB. */
function size(n) {
  if (n < 1024) return n + " B";
  const units = ["KB", "MB", "GB"];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
  return n.toFixed(2) + " " + units[i];
}

function show(device) {
  display.innerHTML = device.svg;
  const v = device.view;
  if (v.led.color) {
    const c = LED_COLORS[v.led.color];
    const level = 0.3 + 0.7 * v.led.brightness / 255;
    led.style.background = c;
    led.style.opacity = String(level);
    led.style.boxShadow = "0 0 " + Math.round(6 + 18 * v.led.brightness / 255) + "px " + c;
  } else {
    led.style.background = "#2c2d33";
    led.style.opacity = "1";
    led.style.boxShadow = "none";
  }
  led.title = "LED: " + (v.led.color ? v.led.color + ", brightness " + v.led.brightness + " of 255" : "off");
  led.setAttribute("aria-label", led.title);
  led.dataset.color = v.led.color || "off";
  led.classList.toggle("blink", v.led.blinking);
  led.dataset.blinking = String(v.led.blinking);
  const p = v.progress;
  progress.textContent = p ? "FTP: " + p.files + " file" + (p.files === 1 ? "" : "s") + " written (" + size(p.bytes) + ")" + (p.current ? " · writing " + p.current : "") : "";
  const l = v.pull;
  pull.textContent = l ? "Last pull " + l.time.slice(0, 16).replace("T", " ") + " UTC: " + l.uploaded + " uploaded, " + l.deleted + " deleted, " + l.unchanged + " unchanged" + (l.error ? " · " + l.error : "") : "";
  help.textContent = HELP[v.phase] || HELP.other;
  const where = v.phase === "running" ? MODE_NAMES[v.mode] + " mode" : PHASES[v.phase];
  statusLine.textContent = where + " · display " + (v.display.backlight ? "on" : "off") + " · LED " + (v.led.color ? v.led.color + " " + v.led.brightness + "/255" : "off");
}

function connect() {
  const events = new EventSource("events");
  events.addEventListener("device", (e) => {
    document.body.classList.remove("offline");
    link.textContent = "live";
    show(JSON.parse(e.data));
  });
  events.onerror = () => {
    document.body.classList.add("offline");
    link.textContent = "not answering";
    const at = (port, path) => location.protocol + "//" + location.hostname + ":" + port + path;
    statusLine.innerHTML = "";
    statusLine.append("The device is not answering here: it is restarting, or it has moved. In Wi-Fi setup mode its ",
      anchor(at(PORTS.setup, "/"), "setup page"), " and ", anchor(at(PORTS.setup, "/panel/"), "panel"),
      " are on port " + PORTS.setup + "; on its network, its ", anchor(at(PORTS.api, "/panel/"), "panel"), " is on port " + PORTS.api + ".");
  };
}

function anchor(href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  return a;
}

async function press(action) {
  try {
    const res = await fetch("button/" + action, { method: "POST" });
    if (!res.ok) {
      const body = await res.json().catch(() => ({ message: res.statusText }));
      statusLine.textContent = "Button: " + body.message;
    }
  } catch {
    statusLine.textContent = "Button: the device did not answer.";
  }
}

let pressedAt = 0;
let timer = 0;
let frame = 0;
let held = false;

function down(e) {
  if (pressedAt) return;
  if (e && e.pointerId !== undefined) button.setPointerCapture(e.pointerId);
  pressedAt = performance.now();
  held = false;
  button.classList.add("pressed");
  timer = setTimeout(() => { held = true; hold.style.setProperty("--p", "100"); press("hold"); }, HOLD_MS);
  const tick = () => {
    if (!pressedAt || held) return;
    hold.style.setProperty("--p", String(Math.min(100, (performance.now() - pressedAt) / HOLD_MS * 100)));
    frame = requestAnimationFrame(tick);
  };
  frame = requestAnimationFrame(tick);
}

function up(cancelled) {
  if (!pressedAt) return;
  clearTimeout(timer);
  cancelAnimationFrame(frame);
  pressedAt = 0;
  button.classList.remove("pressed");
  hold.style.setProperty("--p", "0");
  if (!held && !cancelled) press("click");
}

button.addEventListener("pointerdown", (e) => { e.preventDefault(); down(e); });
button.addEventListener("pointerup", () => up(false));
button.addEventListener("pointercancel", () => up(true));
button.addEventListener("contextmenu", (e) => e.preventDefault());
button.addEventListener("keydown", (e) => { if ((e.key === " " || e.key === "Enter") && !e.repeat) { e.preventDefault(); down(); } });
button.addEventListener("keyup", (e) => { if (e.key === " " || e.key === "Enter") up(false); });
button.addEventListener("blur", () => up(true));
connect();
`;

/** The page, with the display as it is now so it shows before the first event arrives. */
export function panelPage(first: { view: DeviceView; svg: string }, ports: { api: number; setup: number }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>FrameFi panel</title>
<style>${STYLE}</style>
</head>
<body>
<h1>FrameFi <small>LILYGO T-Dongle-S3 · simulated</small><span id="link">connecting</span></h1>
<div class="dongle" aria-label="The FrameFi device">
  <div class="plug" aria-hidden="true"></div>
  <div class="case">
    <div class="bezel"><div id="display">${first.svg}</div></div>
    <div class="side">
      <div class="led-window"><div id="led" role="img" aria-label="LED"></div></div>
      <button id="button" type="button" aria-label="Device button: click to switch mode, hold 3 seconds to reset Wi-Fi">BOOT<span id="hold"></span></button>
    </div>
  </div>
</div>
<div class="info">
  <div id="status" aria-live="polite"></div>
  <div id="progress" aria-live="off"></div>
  <div id="pull" aria-live="polite"></div>
  <div class="help" id="help"></div>
  <div class="links"><a href="display.svg">display picture (SVG)</a> · <a href="display.png">(PNG)</a> · <a href="state">state (JSON)</a> · <a href="../">device status (API)</a></div>
</div>
<script type="module">${SCRIPT}
const PORTS = ${JSON.stringify(ports)};
show(${JSON.stringify(first).replace(/</g, "\\u003c")});
</script>
</body>
</html>
`;
}
