// Every endpoint's exact JSON, boot state, transitions, LED colours,
// mode switch timing, brightness parsing, error bodies — against one running bin/framefi-device.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startDevice, type RunningDevice } from "../helpers.js";
import { BODY, ENDPOINTS, MODE_FTP, MODE_MSC } from "./fixtures/contract.js";
import { call, get, post, rawRequest } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";

let dev: RunningDevice;
before(async () => {
  dev = await startDevice();
});
after(async () => {
  await dev?.stop();
});

const keys = (o: object): string[] => Object.keys(o);
const isInt = (v: unknown): boolean => typeof v === "number" && Number.isInteger(v);

/** POST and expect 200 with exactly `body`. */
async function expectPost(path: string, body: string): Promise<void> {
  const r = await post(dev.url, path);
  assert.equal(r.status, 200, `POST ${path}: ${r.text}`);
  assert.equal(r.text, body, `POST ${path}`);
  assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
}

async function expectGet(path: string, body: string): Promise<void> {
  const r = await get(dev.url, path);
  assert.equal(r.status, 200, `GET ${path}: ${r.text}`);
  assert.equal(r.text, body, `GET ${path}`);
  assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
}

/** Polls GET /mode/msc until it reports `mode`; returns the milliseconds it took. */
async function waitForMode(mode: string, limitMs = 5_000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const m = (await api(dev).mode()).mode;
    if (m === mode) return Date.now() - t0;
    if (Date.now() - t0 > limitMs) throw new Error(`mode still ${m} after ${limitMs} ms, wanted ${mode}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("boot state and GET /", () => {
  test("GET / has exactly the seed's fields and types, booted in MSC with display and LED on", async () => {
    const r = await get(dev.url, "/");
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
    const s = JSON.parse(r.text);
    assert.deepEqual(keys(s), ["mode", "display", "sd_card", "mqtt", "led"], "top-level fields in firmware order");
    assert.deepEqual(keys(s.display), ["status", "orientation"]);
    assert.deepEqual(keys(s.sd_card), ["total_size", "used_size", "free_size", "file_count"]);
    assert.deepEqual(keys(s.mqtt), ["enabled", "state", "connected"]);
    assert.deepEqual(keys(s.led), ["color", "state", "brightness"]);
    assert.equal(s.mode, MODE_MSC);
    assert.equal(s.display.status, "on");
    assert.equal(s.display.orientation, 1, "default orientation 1");
    for (const k of ["total_size", "used_size", "free_size", "file_count"]) assert.ok(isInt(s.sd_card[k]) && s.sd_card[k] >= 0, `sd_card.${k} integer`);
    assert.equal(s.sd_card.file_count, 0, "fresh card folder is empty");
    assert.equal(typeof s.mqtt.enabled, "boolean");
    assert.ok(isInt(s.mqtt.state) && s.mqtt.state >= -4 && s.mqtt.state <= 5, "mqtt.state is a PubSubClient code");
    assert.equal(typeof s.mqtt.connected, "boolean");
    assert.equal(s.led.color, "green");
    assert.equal(s.led.state, "on");
    assert.equal(s.led.brightness, 13, "default brightness 13");
  });

  test("GET /display/status, /led/status, /led/brightness, /mqtt/status have the firmware's field names", async () => {
    await expectGet("/display/status", BODY.displayIs("on"));
    await expectGet("/led/status", JSON.stringify({ status: "success", color: "green", state: "on", brightness: 13 }));
    await expectGet("/led/brightness", BODY.brightnessIs(13));
    const m = await api(dev).mqttStatus();
    assert.deepEqual(keys(m), ["status", "mqtt_enabled", "mqtt_connected", "mqtt_state"]);
    assert.equal(m.status, "success");
    assert.equal(typeof m.mqtt_enabled, "boolean");
    assert.equal(typeof m.mqtt_connected, "boolean");
    assert.ok(isInt(m.mqtt_state));
  });

  test("GET /mode/msc and GET /mode/ftp both report the current mode", async () => {
    await expectGet("/mode/msc", BODY.modeIsMsc);
    await expectGet("/mode/ftp", BODY.modeIsMsc);
  });
});

describe("mode transitions", () => {
  test("POST /mode/msc while in MSC → no_change", async () => {
    await expectPost("/mode/msc", BODY.alreadyMsc);
  });

  test("POST /mode/ftp answers at once and GET shows FTP within 1 s; LED purple", async () => {
    await expectPost("/mode/ftp", BODY.switchedToFtp);
    const ms = await waitForMode(MODE_FTP);
    assert.ok(ms <= 1_000, `mode visible after ${ms} ms (issue: within 1 s)`);
    await expectGet("/mode/ftp", BODY.modeIsFtp);
    await expectGet("/mode/msc", BODY.modeIsFtp);
    const s = await api(dev).status();
    assert.equal(s.mode, MODE_FTP);
    assert.equal(s.led.color, "purple", "purple in FTP mode (the firmware answers unknown)");
    assert.equal(s.led.state, "on");
    await expectGet("/led/status", JSON.stringify({ status: "success", color: "purple", state: "on", brightness: 13 }));
  });

  test("POST /mode/ftp while in FTP → no_change", async () => {
    await expectPost("/mode/ftp", BODY.alreadyFtp);
  });

  test("a mode switch lights the LED again, as the firmware does", async () => {
    await expectPost("/led/off", BODY.ledTurned("off"));
    await expectPost("/mode/msc", BODY.switchedToMsc);
    await waitForMode(MODE_MSC);
    assert.deepEqual((await api(dev).status()).led, { color: "green", state: "on", brightness: 13 });
    await expectPost("/led/off", BODY.ledTurned("off"));
    await expectPost("/mode/ftp", BODY.switchedToFtp);
    await waitForMode(MODE_FTP);
    assert.deepEqual((await api(dev).status()).led, { color: "purple", state: "on", brightness: 13 });
  });

  test("POST /mode/msc from FTP → success, GET shows MSC within 1 s; LED green", async () => {
    await expectPost("/mode/msc", BODY.switchedToMsc);
    const ms = await waitForMode(MODE_MSC);
    assert.ok(ms <= 1_000, `mode visible after ${ms} ms (issue: within 1 s)`);
    const s = await api(dev).status();
    assert.equal(s.led.color, "green");
  });
});

describe("display", () => {
  test("off, on, toggle, toggle with the firmware's messages; status follows", async () => {
    await expectPost("/display/off", BODY.displayTurned("off"));
    await expectGet("/display/status", BODY.displayIs("off"));
    assert.equal((await api(dev).status()).display.status, "off");
    await expectPost("/display/off", BODY.displayTurned("off"));
    await expectPost("/display/toggle", BODY.displayToggled("on"));
    await expectGet("/display/status", BODY.displayIs("on"));
    await expectPost("/display/toggle", BODY.displayToggled("off"));
    await expectGet("/display/status", BODY.displayIs("off"));
    await expectPost("/display/on", BODY.displayTurned("on"));
    await expectPost("/display/on", BODY.displayTurned("on"));
    await expectGet("/display/status", BODY.displayIs("on"));
  });
});

describe("LED", () => {
  test("off, on, toggle with the firmware's messages; colour and state read back", async () => {
    await expectPost("/led/off", BODY.ledTurned("off"));
    // Firmware getLedColorString(): a dark LED reads back as colour "off".
    await expectGet("/led/status", JSON.stringify({ status: "success", color: "off", state: "off", brightness: 13 }));
    const s = await api(dev).status();
    assert.deepEqual(s.led, { color: "off", state: "off", brightness: 13 });
    await expectPost("/led/toggle", BODY.ledToggled);
    await expectGet("/led/status", JSON.stringify({ status: "success", color: "green", state: "on", brightness: 13 }));
    await expectPost("/led/toggle", BODY.ledToggled);
    await expectGet("/led/status", JSON.stringify({ status: "success", color: "off", state: "off", brightness: 13 }));
    await expectPost("/led/on", BODY.ledTurned("on"));
    await expectPost("/led/on", BODY.ledTurned("on"));
    await expectGet("/led/status", JSON.stringify({ status: "success", color: "green", state: "on", brightness: 13 }));
  });
});

describe("MQTT flag", () => {
  test("disable, enable, toggle with the firmware's messages; status follows", async () => {
    const enabled = async (): Promise<boolean> => (await api(dev).mqttStatus()).mqtt_enabled;
    await expectPost("/mqtt/disable", BODY.mqttDisabled);
    assert.equal(await enabled(), false);
    assert.equal((await api(dev).status()).mqtt.enabled, false);
    assert.equal((await api(dev).mqttStatus()).mqtt_connected, false, "disabled → not connected");
    await expectPost("/mqtt/disable", BODY.mqttDisabled);
    await expectPost("/mqtt/toggle", BODY.mqttToggled);
    assert.equal(await enabled(), true);
    await expectPost("/mqtt/toggle", BODY.mqttToggled);
    assert.equal(await enabled(), false);
    await expectPost("/mqtt/enable", BODY.mqttEnabled);
    assert.equal(await enabled(), true);
  });
});

describe("LED brightness", () => {
  const brightness = async (): Promise<number> => (await api(dev).brightness()).brightness;

  test("plain integer bodies are accepted whatever the Content-Type", async () => {
    const cases: Array<[string, Record<string, string>, number]> = [
      ["128", { "content-type": "text/plain" }, 128],
      ["64", { "content-type": "application/json" }, 64],
      ["0", { "content-type": "application/x-www-form-urlencoded" }, 0],
      ["255", {}, 255],
      ["7", { "content-type": "application/octet-stream" }, 7],
    ];
    for (const [body, headers, n] of cases) {
      const r = await post(dev.url, "/led/brightness", { body, headers });
      assert.equal(r.status, 200, `body ${body} ${JSON.stringify(headers)}: ${r.text}`);
      assert.equal(r.text, BODY.brightnessSet(n));
      assert.equal(await brightness(), n);
      const s = await api(dev).status();
      assert.equal(s.led.brightness, n);
    }
  });

  test("what the firmware's String.toInt() reads is accepted as it reads it", async () => {
    const cases: Array<[string, number]> = [
      ["0128", 128],
      ["12.5", 12],
      ["50abc", 50],
      ["1e2", 1],
      ["+7", 7],
    ];
    for (const [body, n] of cases) {
      const r = await post(dev.url, "/led/brightness", { body, headers: { "content-type": "text/plain" } });
      assert.equal(r.status, 200, `body ${body}: ${r.text}`);
      assert.equal(r.text, BODY.brightnessSet(n), `body ${body}`);
      assert.equal(await brightness(), n);
    }
  });

  test("what the firmware refuses → 400 with the firmware's message, brightness unchanged", async () => {
    const r0 = await post(dev.url, "/led/brightness", { body: "42", headers: { "content-type": "text/plain" } });
    assert.equal(r0.status, 200);
    // toInt() reads 0 from these, and the firmware refuses a 0 that was not written "0".
    const bad = ["256", "-1", "abc", "", "00", "-0", "0x10", '"128"', '{"brightness":128}', "99999999999999999999", "+-5"];
    for (const body of bad) {
      for (const ct of ["text/plain", "application/json"]) {
        const r = await post(dev.url, "/led/brightness", { body, headers: { "content-type": ct } });
        assert.equal(r.status, 400, `body ${JSON.stringify(body)} (${ct}) → ${r.status} ${r.text}`);
        assert.equal(r.text, BODY.brightnessInvalid, `body ${JSON.stringify(body)} (${ct})`);
      }
    }
    assert.equal(await brightness(), 42, "state unchanged after bad bodies");
  });

  test("the LED keeps its brightness across on/off and mode", async () => {
    await expectPost("/led/off", BODY.ledTurned("off"));
    await expectPost("/led/on", BODY.ledTurned("on"));
    assert.equal(await brightness(), 42);
    await post(dev.url, "/led/brightness", { body: "13", headers: { "content-type": "text/plain" } });
  });
});

describe("error bodies", () => {
  const errorShape = (text: string): void => {
    const j = JSON.parse(text);
    assert.deepEqual(keys(j), ["status", "message"], `error body ${text}`);
    assert.equal(j.status, "error");
    assert.equal(typeof j.message, "string");
    assert.ok(j.message.length > 0);
  };

  test("unknown path → 404 JSON error", async () => {
    for (const [m, p] of [
      ["GET", "/nope"],
      ["POST", "/nope"],
      ["GET", "/led"],
      ["GET", "/mode/usb"],
      ["POST", "/nope/deeper"],
    ] as const) {
      const r = await call(dev.url, m, p);
      assert.equal(r.status, 404, `${m} ${p}`);
      assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
      errorShape(r.text);
    }
  });

  test("known path, wrong method → 405 JSON error with Allow", async () => {
    const cases: Array<[string, string, string[]]> = [
      ["POST", "/", ["GET"]],
      ["GET", "/led/on", ["POST"]],
      ["GET", "/upload", ["POST"]],
      ["DELETE", "/led/brightness", ["GET", "POST"]],
      ["PUT", "/mode/msc", ["GET", "POST"]],
      ["GET", "/device/restart", ["POST"]],
      ["GET", "/wifi/reset", ["POST"]],
      ["POST", "/mqtt/status", ["GET"]],
    ];
    for (const [m, p, allow] of cases) {
      const r = await call(dev.url, m, p);
      assert.equal(r.status, 405, `${m} ${p}: ${r.text}`);
      const got = (r.headers.get("allow") ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      for (const a of allow) assert.ok(got.includes(a), `${m} ${p}: Allow "${r.headers.get("allow")}" lacks ${a}`);
      assert.ok(!got.includes(m), `${m} ${p}: Allow lists the refused method`);
      errorShape(r.text);
    }
  });

  test("malformed requests → 400 JSON error, service stays up", async () => {
    const garbage = await rawRequest(dev.port, "THIS IS NOT HTTP\r\n\r\n");
    assert.equal(garbage.status, 400, garbage.raw);
    errorShape(garbage.body);
    const badHeader = await rawRequest(dev.port, "GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n");
    assert.equal(badHeader.status, 400, badHeader.raw);
    errorShape(badHeader.body);
    const overflow = await rawRequest(dev.port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    assert.ok(overflow.status === 400 || overflow.status === 431, overflow.raw.slice(0, 200));
    errorShape(overflow.body);
    const smuggle = await rawRequest(dev.port, "POST /led/off HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    assert.equal(smuggle.status, 400, smuggle.raw.slice(0, 200));
    errorShape(smuggle.body);
    const badMultipart = await post(dev.url, "/upload", { body: "x", headers: { "content-type": "multipart/form-data" } });
    assert.ok(badMultipart.status === 400, `multipart without boundary → ${badMultipart.status} ${badMultipart.text}`);
    errorShape(badMultipart.text);
    const badPct = await get(dev.url, "/%zz");
    assert.ok(badPct.status === 400 || badPct.status === 404, `GET /%zz → ${badPct.status}`);
    errorShape(badPct.text);
    await expectGet("/mode/msc", BODY.modeIsMsc);
  });

  test("request targets are taken literally: '//host/path' is a path, absolute form is its path", async () => {
    const slashes = await rawRequest(dev.port, "GET //evil.example/led/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    assert.equal(slashes.status, 404, "a path starting with // is not a host");
    errorShape(slashes.body);
    const absolute = await rawRequest(dev.port, `GET http://127.0.0.1:${dev.port}/led/brightness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    assert.equal(absolute.status, 200);
    assert.equal(absolute.body, BODY.brightnessIs(13));
  });

  test("a query string does not change the route", async () => {
    await expectGet("/led/brightness?x=1", BODY.brightnessIs(13));
    await expectGet("/mode/msc?cache=no", BODY.modeIsMsc);
  });

  test("an oversized brightness body → 4xx JSON error, state unchanged, service up", async () => {
    const r = await post(dev.url, "/led/brightness", { body: "1".repeat(5 * 1024 * 1024), headers: { "content-type": "text/plain" } });
    assert.ok(r.status === 400 || r.status === 413, `→ ${r.status}`);
    errorShape(r.text);
    await expectGet("/led/brightness", BODY.brightnessIs(13));
  });

  test("every seed endpoint answers JSON (not HTML) for its own method", async () => {
    for (const [m, p] of ENDPOINTS) {
      if (m === "POST" && ["/device/restart", "/wifi/reset", "/mode/ftp", "/mode/msc"].includes(p)) continue;
      const r = await call(dev.url, m, p, m === "POST" && p === "/led/brightness" ? { body: "13" } : {});
      assert.match(r.headers.get("content-type") ?? "", /^application\/json/, `${m} ${p}`);
      JSON.parse(r.text);
    }
  });
});
