// In a real headless Chromium: the panel shows the device as it is, its button works
// with a mouse and a finger (click toggles the mode, holding 3 s resets Wi-Fi), and the page follows every change
// made through the API live; in Wi-Fi setup mode the panel moves to the setup page's server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";
import { chromiumMissing, launchChromium, untilShown, type Browser } from "./browser.js";

const skip = chromiumMissing();
if (skip) console.log(`# ${skip}`);

interface Shown {
  screen: string;
  backlight: string;
  text: string;
  dots: string[];
  led: string;
  status: string;
  link: string;
}

/** What the page shows now: the display's screen and text, the MQTT dot colours, the LED and the status line. */
function shown(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const svg = document.querySelector<SVGSVGElement>("#display svg");
    return {
      screen: svg?.dataset.screen ?? "",
      backlight: svg?.dataset.backlight ?? "",
      text: [...(svg?.querySelectorAll("[data-text]") ?? [])].map((t) => t.getAttribute("data-text")).join(" "),
      dots: [...(svg?.querySelectorAll("circle") ?? [])].map((c) => c.getAttribute("fill") ?? ""),
      led: document.getElementById("led")?.dataset.color ?? "",
      status: document.getElementById("status")?.textContent ?? "",
      link: document.getElementById("link")?.textContent ?? "",
    };
  });
}

/** Waits (generously) until what the page shows satisfies `ok`. */
const until = (page: Page, ok: (s: Shown) => boolean, timeoutMs = 10_000): Promise<Shown> => untilShown(() => shown(page), ok, timeoutMs);

const filesShown = (s: Shown): number => Number(/Files: (\d+)/.exec(s.text)?.[1] ?? NaN);

describe("web panel in Chromium", { skip }, () => {
  let dev: RunningDevice;
  let browser: Browser;
  let page: Page;

  before(async () => {
    dev = await startDevice();
    browser = await launchChromium();
    page = await browser.context.newPage();
    await page.goto(`${dev.url}/panel/`);
  });
  after(async () => {
    await browser?.close();
    await dev?.stop();
  });

  test("the panel renders the device: MSC screen, green LED, live", async () => {
    const s = await until(page, (x) => x.link === "live" && x.screen === "USB MSC");
    assert.equal(s.backlight, "on");
    assert.match(s.text, /FrameFi Mode: USB MSC IP: 127\.0\.0\.1 MAC: [0-9A-F:]{17} Size: \d+\.\d\dGB Files: 0 Used: /);
    assert.equal(s.led, "green");
    assert.deepEqual(s.dots, [], "no MQTT dot while MQTT is disabled");
    assert.match(s.status, /^USB MSC mode · display on · LED green 13\/255$/);
  });

  test("a click on the button switches to FTP mode and the display shows the FTP screen", async () => {
    await page.click("#button");
    const s = await until(page, (x) => x.screen === "FTP");
    assert.match(s.text, /FrameFi Mode: FTP IP: 127\.0\.0\.1/);
    assert.equal(s.led, "purple");
    const status = (await (await fetch(`${dev.url}/`)).json()) as { mode: string };
    assert.equal(status.mode, "Application (FTP Server)");
  });

  test("an upload changes the file count shown", async () => {
    const before = filesShown(await shown(page));
    assert.equal(before, 0);
    const form = new FormData();
    form.append("file", new Blob([Buffer.from("a picture")]), "holiday/beach.jpg");
    const r = await fetch(`${dev.url}/upload`, { method: "POST", body: form });
    assert.equal(r.status, 200, await r.text());
    await until(page, (x) => filesShown(x) === 1);
  });

  test("POST /display/off makes the display dark in the page; /display/on lights it again", async () => {
    assert.equal((await fetch(`${dev.url}/display/off`, { method: "POST" })).status, 200);
    const off = await until(page, (x) => x.backlight === "off");
    assert.equal(off.text, "", "nothing of the picture shows while the backlight is off");
    const fill = await page.evaluate(() => document.querySelector("#display svg rect")?.getAttribute("fill"));
    assert.equal(fill, "#050507");
    assert.match(off.status, /display off/);
    assert.equal((await fetch(`${dev.url}/display/on`, { method: "POST" })).status, 200);
    await until(page, (x) => x.backlight === "on" && x.screen === "FTP");
  });

  test("the MQTT dot: red while enabled but not connected, gone when disabled", async () => {
    assert.equal((await fetch(`${dev.url}/mqtt/enable`, { method: "POST" })).status, 200);
    await until(page, (x) => x.dots.length === 1 && x.dots[0] === "#f38ba8");
    assert.equal((await fetch(`${dev.url}/mqtt/disable`, { method: "POST" })).status, 200);
    await until(page, (x) => x.dots.length === 0);
  });

  test("the LED follows the API: off, then on at full brightness", async () => {
    assert.equal((await fetch(`${dev.url}/led/off`, { method: "POST" })).status, 200);
    await until(page, (x) => x.led === "off");
    assert.equal((await fetch(`${dev.url}/led/on`, { method: "POST" })).status, 200);
    assert.equal((await fetch(`${dev.url}/led/brightness`, { method: "POST", body: "255" })).status, 200);
    const s = await until(page, (x) => x.led === "purple" && x.status.endsWith("255/255"));
    assert.ok(s);
    // Full brightness: the LED at full opacity (once its short CSS transition is over).
    await eventually(async () => (await page.evaluate(() => getComputedStyle(document.getElementById("led")!).opacity)) === "1");
  });

  test("a tap with a finger toggles the mode back to USB MSC", async () => {
    const box = await page.locator("#button").boundingBox();
    assert.ok(box);
    await page.touchscreen.tap(box.x + box.width / 2, box.y + box.height / 2);
    await until(page, (x) => x.screen === "USB MSC" && x.led === "green");
  });

  test("holding the button 3 s resets Wi-Fi: the reset screen, then the API stops and the setup page answers", async () => {
    const box = await page.locator("#button").boundingBox();
    assert.ok(box);
    // Every picture the page draws is recorded: on a busy machine the reset screen may be up only briefly
    // before the page notices the device has gone.
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      const record = (): void => {
        const texts = [...document.querySelectorAll("#display svg [data-text]")].map((t) => t.getAttribute("data-text")).join(" ");
        if (seen.at(-1) !== texts) seen.push(texts);
      };
      new MutationObserver(record).observe(document.getElementById("display")!, { childList: true, subtree: true, attributes: true });
    });
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    const seen = (): Promise<string[]> => page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    const reset = await eventually(async () => (await seen()).find((t) => /Resetting Wi-Fi\.\.\./.test(t)), 15_000).catch(async (e: Error) => {
      // Seen once in many runs and not reproduced: say what the page drew and what the device did.
      const status = await page.textContent("#status");
      throw new Error(
        `${e.message}; the page drew ${JSON.stringify(await seen())}, its status says "${status}"; device log:\n${dev.program.stdout()}${dev.program.stderr()}`,
        { cause: e },
      );
    });
    await page.mouse.up();
    assert.match(reset, /Restarting\.\.\./);
    await until(page, (x) => x.link === "not answering", 15_000);
    const setup = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${dev.setupPort}/`);
      return r.status === 200 ? r.text() : "";
    }, 15_000);
    assert.match(setup, /<form/i);
    // The offline page points to the setup page and its panel, which shows the setup screen.
    const links = await page.$$eval("#status a", (as) => as.map((a) => (a as HTMLAnchorElement).href));
    assert.deepEqual(links, [`http://127.0.0.1:${dev.setupPort}/`, `http://127.0.0.1:${dev.setupPort}/panel/`, `http://127.0.0.1:${dev.port}/panel/`]);
    await page.goto(links[1]!);
    const s2 = await until(page, (x) => x.link === "live" && x.screen === "setup");
    assert.match(s2.text, /^FrameFi Setup Mode: AP AP IP: 127\.0\.0\.1 SSID: FrameFi-[0-9A-F]{6}$/);
    assert.equal(s2.led, "blue");
    assert.match(s2.status, /^in Wi-Fi setup mode/);
    assert.equal(
      await page.textContent("#help"),
      "In Wi-Fi setup mode the button does nothing: save the setup page to join a network, and the device restarts into USB MSC mode.",
    );
  });
});
