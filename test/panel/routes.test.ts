// Over plain HTTP: the display picture on its own (SVG), the panel's routes behind the API's
// auth, the button's answers, and server-sent events that follow every change.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { DeviceView } from "../../src/device/panel/view.js";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";

interface DeviceEvent {
  view: DeviceView;
  svg: string;
}

/** Reads a server-sent event stream; `next()` resolves with the next "device" event's data. */
interface EventStream {
  next(timeoutMs?: number): Promise<DeviceEvent>;
  /** "ended" when the device ended the stream, else why it broke off. */
  finished: Promise<string>;
  close(): void;
}

async function openEvents(url: string, headers: Record<string, string> = {}): Promise<EventStream> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const queue: DeviceEvent[] = [];
  const waiting: Array<(v: DeviceEvent) => void> = [];
  const finished = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return "ended";
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^event: device\ndata: (.*)$/m.exec(block);
          if (!data) continue;
          const parsed = JSON.parse(data[1]!) as DeviceEvent;
          const w = waiting.shift();
          if (w) w(parsed);
          else queue.push(parsed);
        }
      }
    } catch (e) {
      return `broke off: ${(e as Error).message}`;
    }
  })();
  return {
    finished,
    next: (timeoutMs = 10_000) =>
      queue.length > 0
        ? Promise.resolve(queue.shift()!)
        : new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no event within ${timeoutMs} ms`)), timeoutMs);
            waiting.push((v) => {
              clearTimeout(timer);
              resolve(v);
            });
          }),
    close: () => controller.abort(),
  };
}

describe("panel routes", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice({ args: ["--orientation", "0"] });
  });
  after(async () => {
    await dev?.stop();
  });

  test("GET /panel/display.svg is the display on its own, as SVG, in the configured orientation", async () => {
    const r = await fetch(`${dev.url}/panel/display.svg`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^image\/svg\+xml/);
    const svg = await r.text();
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 160 80" width="160" height="80"/);
    assert.match(svg, /data-orientation="0"/);
    assert.match(svg, /<g transform="translate\(0 80\) rotate\(-90\)">/, "portrait is turned onto the landscape panel");
    // Portrait layout: the label on one line, the value on the next; the IP without its dots.
    assert.match(svg, /data-text="Mode:".*data-text="USB MSC".*data-text="IP:".*data-text="127001"/);
    const big = await fetch(`${dev.url}/panel/display.svg?scale=3`);
    assert.match(await big.text(), /width="480" height="240"/);
  });

  test("a bad scale is refused with a JSON error", async () => {
    const r = await fetch(`${dev.url}/panel/display.svg?scale=99`);
    assert.equal(r.status, 400);
    assert.deepEqual(await r.json(), { status: "error", message: 'Invalid scale "99": use a whole number from 1 to 8 (pixels per display pixel).' });
  });

  test("/panel redirects to /panel/, which is an HTML page with the display in it", async () => {
    const r = await fetch(`${dev.url}/panel`, { redirect: "manual" });
    assert.equal(r.status, 301);
    assert.equal(r.headers.get("location"), "/panel/");
    const page = await fetch(`${dev.url}/panel/`);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    const html = await page.text();
    assert.match(html, /<div id="display"><svg /);
  });

  test("the panel does not shadow the API, and unknown panel paths and methods get the API's JSON errors", async () => {
    assert.equal((await fetch(`${dev.url}/panel/nope`)).status, 404);
    const r = await fetch(`${dev.url}/panel/button/click`);
    assert.equal(r.status, 405);
    assert.equal(r.headers.get("allow"), "POST");
    const status = (await (await fetch(`${dev.url}/`)).json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(status), ["mode", "display", "sd_card", "mqtt", "led"]);
  });

  test("server-sent events: the current state at once, then an event after each change (API and button)", async () => {
    const events = await openEvents(`${dev.url}/panel/events`);
    try {
      const first = await events.next();
      assert.equal(first.view.mode, "msc");
      assert.match(first.svg, /^<svg /);

      assert.equal((await fetch(`${dev.url}/led/off`, { method: "POST" })).status, 200);
      let e = await events.next();
      assert.equal(e.view.led.color, undefined, "the LED is dark");
      assert.equal((await fetch(`${dev.url}/led/on`, { method: "POST" })).status, 200);
      e = await events.next();
      assert.equal(e.view.led.color, "green");

      const click = await fetch(`${dev.url}/panel/button/click`, { method: "POST" });
      assert.equal(click.status, 200);
      assert.deepEqual(await click.json(), { status: "success", message: "Button clicked: switching to Application (FTP) mode." });
      // The FTP transition screen may come first; the FTP mode screen follows.
      do e = await events.next();
      while (e.view.display.screen.kind !== "mode");
      assert.equal(e.view.display.screen.mode, "FTP");
      assert.equal(e.view.led.color, "purple");

      const back = await fetch(`${dev.url}/panel/button/click`, { method: "POST" });
      assert.deepEqual(await back.json(), { status: "success", message: "Button clicked: switching to MSC mode." });
      do e = await events.next();
      while (e.view.display.screen.kind !== "mode" || e.view.display.screen.mode !== "USB MSC");
    } finally {
      events.close();
    }
  });
});

describe("many panels at once", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice();
  });
  after(async () => {
    await dev?.stop();
  });

  test("20 open panels all get each change, and the service warns of no listener leak", async () => {
    const streams = await Promise.all(Array.from({ length: 20 }, () => openEvents(`${dev.url}/panel/events`)));
    try {
      await Promise.all(streams.map((s) => s.next()));
      assert.equal((await fetch(`${dev.url}/display/off`, { method: "POST" })).status, 200);
      const events = await Promise.all(streams.map((s) => s.next()));
      assert.ok(events.every((e) => e.view.display.backlight === false));
    } finally {
      for (const s of streams) s.close();
    }
    assert.doesNotMatch(dev.program.stderr() + dev.program.stdout(), /MaxListenersExceeded/);
  });
});

describe("panel behind basic auth", () => {
  let dev: RunningDevice;
  const auth = (u: string, p: string): Record<string, string> => ({ Authorization: `Basic ${Buffer.from(`${u}:${p}`).toString("base64")}` });
  before(async () => {
    dev = await startDevice({ args: ["--web-user", "admin", "--web-password", "s3cret", "--read-only-user", "viewer", "--read-only-password", "look"] });
  });
  after(async () => {
    await dev?.stop();
  });

  test("the page, the picture and the events need the web login, as the API does", async () => {
    for (const path of ["/panel/", "/panel/display.svg", "/panel/events", "/panel/state"]) {
      const r = await fetch(`${dev.url}${path}`);
      assert.equal(r.status, 401, path);
      assert.equal(r.headers.get("www-authenticate"), 'Basic realm="FrameFi"');
    }
    assert.equal((await fetch(`${dev.url}/panel/display.svg`, { headers: auth("admin", "s3cret") })).status, 200);
  });

  test("the read-only account sees the panel but cannot press the button", async () => {
    assert.equal((await fetch(`${dev.url}/panel/`, { headers: auth("viewer", "look") })).status, 200);
    const r = await fetch(`${dev.url}/panel/button/click`, { method: "POST", headers: auth("viewer", "look") });
    assert.equal(r.status, 403);
    const status = (await (await fetch(`${dev.url}/`, { headers: auth("viewer", "look") })).json()) as { mode: string };
    assert.equal(status.mode, "USB MSC", "nothing changed");
  });
});

describe("a Wi-Fi reset shows its screen, whoever asks for it", () => {
  for (const [who, path] of [
    ["POST /wifi/reset", "/wifi/reset"],
    ["the button held 3 s", "/panel/button/hold"],
  ] as const) {
    test(`${who}: every open panel sees "Resetting Wi-Fi...", then the setup screen once the device is back`, async (t) => {
      const dev = await startDevice();
      t.after(() => dev.stop());
      const events = await openEvents(`${dev.url}/panel/events`);
      t.after(() => events.close());
      assert.equal((await events.next()).view.display.screen.kind, "mode");
      assert.equal((await fetch(`${dev.url}${path}`, { method: "POST" })).status, 200);
      let e: DeviceEvent;
      do e = await events.next();
      while (e.view.display.screen.kind !== "info");
      assert.deepEqual(e.view.display.screen, { kind: "info", title: "FrameFi", message: "Resetting Wi-Fi...", detail: "Restarting...", header: "red" });
      assert.match(e.svg, /data-text="Resetting Wi-Fi\.\.\."/);
      // Ended, not cut off: a browser may drop the last event of a stream that breaks off.
      assert.equal(await events.finished, "ended");
      const setup = `http://127.0.0.1:${dev.setupPort}`;
      const view = await eventually(async () => {
        const r = await fetch(`${setup}/panel/state`).catch(() => undefined);
        const v = r?.ok ? ((await r.json()) as DeviceView) : undefined;
        return v?.phase === "setup" ? v : undefined;
      }, 15_000);
      assert.equal(view?.display.screen.kind, "setup", "the reset screen goes once the device has restarted");
    });
  }
});
