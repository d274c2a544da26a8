// Persisted settings across process restarts, atomic writes, corrupt or unreadable
// settings → defaults and a logged warning, a failing settings write → 500 without half-changed state.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { BODY, MODE_FTP, MODE_MSC } from "./fixtures/contract.js";
import { call, post } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";

const setBrightness = async (dev: RunningDevice, n: number, auth?: readonly [string, string]): Promise<void> => {
  assert.deepEqual(await api(dev, auth).setBrightness(n), JSON.parse(BODY.brightnessSet(n)));
};

describe("persisted settings survive a restart of the process", () => {
  let folder: string;
  before(async () => {
    folder = await tempDir("framefi-persist-");
  });
  after(async () => {
    await removeDir(folder);
  });

  test("brightness and the MQTT flag come back over the start-up flags; mode, display and LED boot fresh", async () => {
    const state = join(folder, "state");
    const card = join(folder, "card");
    const flags = ["--brightness", "40", "--mqtt-url", "mqtt://127.0.0.1:9"];
    let last = -1;
    const a = await startDevice({ state, card, args: flags });
    try {
      const s0 = await api(a).status();
      assert.equal(s0.led.brightness, 40, "--brightness sets the starting value");
      assert.equal(s0.mqtt.enabled, true, "--mqtt-url enables the MQTT client");
      await setBrightness(a, 77);
      const filesAfterOne = (await readdir(state)).sort();
      // Many quick writes: the file must end whole, holding the last value, with no temp files left.
      const values = Array.from({ length: 60 }, (_, i) => (i * 37) % 256);
      await Promise.all(values.map((v) => post(a.url, "/led/brightness", { body: String(v) })));
      last = (await api(a).brightness()).brightness;
      assert.equal((await post(a.url, "/mqtt/disable")).text, BODY.mqttDisabled);
      await post(a.url, "/display/off");
      await post(a.url, "/led/off");
      await post(a.url, "/mode/ftp");
      await eventually(async () => (await api(a).status()).mode === MODE_FTP, 10_000);
      const left = await eventually(async () => {
        const names = (await readdir(state)).sort();
        return JSON.stringify(names) === JSON.stringify(filesAfterOne) ? names : undefined;
      }, 10_000).catch(async () => (await readdir(state)).sort());
      assert.deepEqual(left, filesAfterOne, "no temp files left behind in the state folder");
    } finally {
      await a.stop();
    }
    const b = await startDevice({ state, card, args: flags });
    try {
      const s = await api(b).status();
      assert.equal(s.led.brightness, last, "the last brightness set through the API wins over --brightness");
      assert.equal(s.mqtt.enabled, false, "the MQTT flag set through the API wins over --mqtt-url");
      assert.equal(s.mode, MODE_MSC, "boots in MSC");
      assert.equal(s.display.status, "on", "boots with the display on");
      assert.equal(s.led.state, "on", "boots with the LED on");
      assert.equal(s.led.color, "green");
      assert.equal(s.display.orientation, 1);
    } finally {
      await b.stop();
    }
  });

  test("a corrupt settings file → defaults and a logged warning, never a crash", async () => {
    // --help names the settings file: <state>/settings.json.
    const state = join(folder, "state3");
    await mkdir(state);
    // Settings hold credentials: the warning must not quote the broken file's text.
    await writeFile(join(state, "settings.json"), '{"webUser": "admin", "webPassword": s3cr3t-in-settings, \u0000\u00ff');
    const b = await startDevice({ state });
    try {
      const s = await api(b).status();
      assert.equal(s.led.brightness, 13, "default brightness");
      assert.match(b.program.stdout() + b.program.stderr(), /warn/i, "a warning is logged");
      assert.ok(!(b.program.stdout() + b.program.stderr()).includes("s3cr3t"), "the warning does not quote the file's secrets");
      await setBrightness(b, 55);
    } finally {
      await b.stop();
    }
    const c = await startDevice({ state });
    try {
      assert.equal((await api(c).status()).led.brightness, 55, "settings written again after the corrupt file");
    } finally {
      await c.stop();
    }
  });

  const broken: Array<[string, (file: string) => Promise<void>]> = [
    ["unreadable (a folder in its place)", (f) => mkdir(f)],
    ["valid JSON of the wrong shape", (f) => writeFile(f, "[1, 2, 3]")],
  ];
  for (const [what, make] of broken) {
    test(`a settings file that is ${what} → defaults and a warning`, async () => {
      const state = join(folder, `state-${what.split(" ")[0]}`);
      await mkdir(state);
      await make(join(state, "settings.json"));
      const b = await startDevice({ state });
      try {
        const s = await api(b).status();
        assert.equal(s.led.brightness, 13);
        assert.equal(s.mode, MODE_MSC);
        assert.match(b.program.stdout() + b.program.stderr(), /warn/i);
      } finally {
        await b.stop();
      }
    });
  }
});

describe("an unexpected failure", () => {
  test("settings cannot be written → 500 JSON error, the service keeps running, state not half-changed", async (t) => {
    const folder = await tempDir("framefi-500-");
    const state = join(folder, "state");
    const dev = await startDevice({ state, card: join(folder, "card") });
    t.after(async () => {
      await dev.stop();
      await removeDir(folder);
    });
    await setBrightness(dev, 50);
    // Another program puts a plain file where the state folder was: every settings write now fails.
    await rm(state, { recursive: true });
    await writeFile(state, "not a folder");
    const r = await post(dev.url, "/led/brightness", { body: "60", headers: { "content-type": "text/plain" } });
    const now = (await api(dev).status()).led.brightness;
    if (r.status === 200) {
      assert.equal(r.text, BODY.brightnessSet(60));
      assert.equal(now, 60, "answered success, so the change took effect");
    } else {
      assert.equal(r.status, 500, r.text);
      const j = JSON.parse(r.text);
      assert.deepEqual(Object.keys(j), ["status", "message"]);
      assert.equal(j.status, "error");
      assert.equal(now, 50, `answered ${r.status} error, yet brightness reads back ${now}: state half-changed`);
    }
    const m0 = (await api(dev).status()).mqtt.enabled;
    const m = await post(dev.url, "/mqtt/toggle");
    const m1 = (await api(dev).status()).mqtt.enabled;
    if (m.status === 200) assert.equal(m1, !m0);
    else assert.equal(m1, m0, `POST /mqtt/toggle answered ${m.status}, yet the MQTT flag changed`);
    assert.equal((await call(dev.url, "GET", "/mode/msc")).text, BODY.modeIsMsc, "service keeps running");
  });
});
