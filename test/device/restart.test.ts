// POST /device/restart (back within 2 s, in MSC mode, settings re-read) and
// POST /wifi/reset → API gone → setup page on the setup port → saving it brings the API back.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { BODY, MODE_FTP, MODE_MSC } from "./fixtures/contract.js";

const MiB = 1024 * 1024;
import { call, openUpload, post, receiving } from "./fixtures/http.js";
import { tree } from "../fixtures/files.js";
import { api } from "./fixtures/device.js";

const setBrightness = async (dev: RunningDevice, n: number, auth?: readonly [string, string]): Promise<void> => {
  assert.deepEqual(await api(dev, auth).setBrightness(n), JSON.parse(BODY.brightnessSet(n)));
};

/** Resolves once nothing answers HTTP on `url` any more. */
const gone = (url: string, ms = 5_000): Promise<boolean> =>
  eventually(
    async () => {
      try {
        const r = await fetch(url, { signal: AbortSignal.timeout(1_000) });
        await r.arrayBuffer();
        return false;
      } catch {
        return true;
      }
    },
    ms,
    50,
  );

describe("POST /device/restart", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice();
  });
  after(async () => {
    await dev?.stop();
  });

  test("answers, restarts in-process, back within 2 s in MSC mode with settings re-read", async () => {
    await setBrightness(dev, 99);
    await post(dev.url, "/mode/ftp");
    await eventually(async () => (await api(dev).status()).mode === MODE_FTP, 10_000);
    await post(dev.url, "/display/off");
    await post(dev.url, "/led/off");
    const pid = dev.program.child.pid;

    const r = await post(dev.url, "/device/restart");
    assert.equal(r.status, 200);
    assert.equal(r.text, BODY.restarting);
    const t0 = Date.now();
    // Until the restart has happened the old state may still answer; a failed request (restarting) is retried.
    const s = await eventually(async () => {
      const got = await api(dev, undefined, 1_000).status();
      return got.mode === MODE_MSC && got.display.status === "on" ? got : undefined;
    }, 4_000).catch(() => undefined);
    const took = Date.now() - t0;
    assert.ok(s, "the API came back in MSC mode");
    assert.ok(took <= 2_000, `API back after ${took} ms (issue: within 2 s)`);
    assert.equal(s.led.state, "on");
    assert.equal(s.led.color, "green");
    assert.equal(s.led.brightness, 99, "persisted brightness re-read");
    assert.equal(dev.program.child.pid, pid);
    assert.equal(dev.program.child.exitCode, null, "restarted in-process, the process did not exit");
  });
});

const unescapeHtml = (v: string): string =>
  v.replace(/&(#\d+|#x[0-9a-f]+|quot|amp|lt|gt|apos);/gi, (_, e: string) => {
    const named: Record<string, string> = { quot: '"', amp: "&", lt: "<", gt: ">", apos: "'" };
    if (e[0] !== "#") return named[e.toLowerCase()]!;
    return String.fromCodePoint(e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : Number(e.slice(1)));
  });

interface Form {
  action: string;
  method: string;
  fields: Map<string, string>;
  html: string;
}

/** Finds the setup form (on / or WiFiManager's /wifi page) and its inputs. */
async function setupForm(base: string): Promise<Form> {
  for (const path of ["/", "/wifi", "/0wifi"]) {
    const r = await call(base, "GET", path).catch(() => undefined);
    if (!r || r.status !== 200) continue;
    assert.match(r.headers.get("content-type") ?? "", /text\/html/, `setup page ${path} is HTML`);
    const html = r.text;
    const form = html.match(/<form\b[^>]*>[\s\S]*?<\/form>/gi)?.find((f) => /name=['"]?s['"\s>]/.test(f));
    if (!form) continue;
    const attr = (tag: string, name: string): string | undefined => tag.match(new RegExp(`\\b${name}=['"]?([^'"\\s>]*)`, "i"))?.[1];
    const open = form.match(/<form\b[^>]*>/i)![0];
    const fields = new Map<string, string>();
    for (const input of form.match(/<input\b[^>]*>/gi) ?? []) {
      const n = attr(input, "name");
      if (n) fields.set(n, unescapeHtml(input.match(/\bvalue=(['"])(.*?)\1/i)?.[2] ?? ""));
    }
    return { action: attr(open, "action") ?? path, method: (attr(open, "method") ?? "GET").toUpperCase(), fields, html };
  }
  throw new Error("no setup form with a network-name field 's' on the setup port");
}

async function submit(base: string, form: Form, values: Record<string, string>): Promise<number> {
  const params = new URLSearchParams();
  for (const [k, v] of form.fields) params.set(k, v);
  for (const [k, v] of Object.entries(values)) params.set(k, v);
  const target = new URL(form.action, base + "/");
  const r =
    form.method === "POST"
      ? await fetch(target, { method: "POST", body: params, signal: AbortSignal.timeout(5_000) })
      : await fetch(`${target}?${params}`, { signal: AbortSignal.timeout(5_000) });
  await r.arrayBuffer();
  return r.status;
}

describe("a restart re-reads the settings file", () => {
  test("settings.json put back by another program is what the device boots with", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    await setBrightness(dev, 123);
    const file = join(dev.state, "settings.json");
    const saved = await readFile(file);
    await setBrightness(dev, 5);
    await writeFile(file, saved);
    assert.equal((await post(dev.url, "/device/restart")).text, BODY.restarting);
    const s = await eventually(async () => {
      try {
        const st = await api(dev, undefined, 1_000).status();
        return st.led.brightness !== 5 ? st : undefined;
      } catch {
        return undefined;
      }
    }, 4_000);
    assert.equal(s.led.brightness, 123);
  });
});

describe("POST /wifi/reset → setup page → saved", () => {
  let dev: RunningDevice;
  let folder: string;
  before(async () => {
    folder = await tempDir("framefi-wifi-");
    dev = await startDevice({ state: join(folder, "state"), card: join(folder, "card") });
  });
  after(async () => {
    await dev?.stop();
    await removeDir(folder);
  });

  const setupUrl = (): string => `http://127.0.0.1:${dev.setupPort}`;

  test("answers with the docs' message, then the API stops answering and the setup page appears", async () => {
    await setBrightness(dev, 150);
    const r = await post(dev.url, "/wifi/reset");
    assert.equal(r.status, 200);
    assert.equal(r.text, BODY.wifiReset);
    assert.ok(await gone(dev.url + "/"), "API stops answering at its address");
    const form = await eventually(() => setupForm(setupUrl()), 5_000, 100);
    for (const name of ["s", "p", "ftp_user", "ftp_pass", "web_user", "web_pass", "mqtt_host", "mqtt_port", "mqtt_user", "mqtt_pass"]) {
      assert.ok(form.fields.has(name), `setup form has WiFiManager/firmware field "${name}" (has ${[...form.fields.keys()].join(", ")})`);
    }
    assert.equal(form.fields.get("ftp_user"), "user", "FTP user shows the firmware default");
    assert.equal(form.fields.get("web_user"), "", "web user blank by default");
  });

  test("saving the form stores the settings and brings the API back on its address", async () => {
    const form = await setupForm(setupUrl());
    const st = await submit(setupUrl(), form, {
      s: "HomeNet",
      p: "wifi-secret",
      web_user: "alice",
      web_pass: "wonderland",
      ftp_user: "photos",
      ftp_pass: "ftp-pw",
    });
    assert.ok(st >= 200 && st < 400, `saving the setup form → ${st}`);
    await eventually(async () => (await call(dev.url, "GET", "/", { timeoutMs: 1_000 })).status === 401, 5_000, 50);
    const open = await call(dev.url, "GET", "/");
    assert.equal(open.status, 401, "the saved web user now protects the API");
    assert.equal(open.headers.get("www-authenticate"), 'Basic realm="FrameFi"');
    const s = await api(dev, ["alice", "wonderland"]).status();
    assert.equal(s.mode, MODE_MSC);
    assert.equal(s.led.color, "green");
    assert.equal(s.led.brightness, 13, "the reset cleared the whole settings store, as the firmware's prefs.clear()");
    assert.ok(await gone(setupUrl() + "/"), "the setup page is gone once back in normal mode");
    const out = dev.program.stdout() + dev.program.stderr();
    for (const secret of ["wonderland", "wifi-secret", "ftp-pw"]) assert.ok(!out.includes(secret), `${secret} in logs`);
  });

  test("saved credentials survive a restart of the process", async () => {
    await dev.stop();
    dev = await startDevice({ state: join(folder, "state"), card: join(folder, "card"), port: dev.port, setupPort: dev.setupPort });
    assert.equal((await call(dev.url, "GET", "/")).status, 401);
    assert.equal((await call(dev.url, "GET", "/", { auth: ["alice", "wonderland"] })).status, 200);
  });

  test("a second reset keeps the web login: the setup page changes it only with the current password", async () => {
    const r = await post(dev.url, "/wifi/reset", { auth: ["alice", "wonderland"] });
    assert.equal(r.text, BODY.wifiReset);
    assert.ok(await gone(dev.url + "/"));
    const form = await eventually(() => setupForm(setupUrl()), 5_000, 100);
    assert.equal(form.fields.get("web_user"), "alice", "the web user survives the reset (a difference from the firmware)");
    assert.equal(form.fields.get("web_pass"), "", "the web password is never echoed");
    assert.ok(form.fields.has("web_pass_current"), "the form asks for the current web password");
    assert.equal(
      await submit(setupUrl(), form, { s: "OtherNet", p: "x", web_user: "", web_pass: "" }),
      403,
      "blanking the login without the current password is refused",
    );
    assert.ok(await gone(dev.url + "/", 1_000), "still in setup mode");
    const st = await submit(setupUrl(), form, { s: "OtherNet", p: "x", web_user: "", web_pass: "", web_pass_current: "wonderland" });
    assert.ok(st >= 200 && st < 400, `saving with the current password → ${st}`);
    await eventually(async () => (await call(dev.url, "GET", "/", { timeoutMs: 1_000 })).status === 200, 5_000, 50);
  });
});

describe("the setup page's own edge cases", () => {
  test("stored values are HTML-escaped in the form; an invalid MQTT port is refused and setup mode stays", async (t) => {
    const odd = `x"'><b>&amp;`;
    const dev = await startDevice({ args: ["--ftp-user", odd] });
    t.after(() => dev.stop());
    const base = `http://127.0.0.1:${dev.setupPort}`;
    await post(dev.url, "/wifi/reset");
    const form = await eventually(() => setupForm(base), 5_000, 100);
    assert.equal(form.fields.get("ftp_user"), odd, "the value round-trips through the HTML unchanged");
    assert.ok(!form.html.includes("<b>&amp;"), "no raw markup from a stored value");
    const st = await submit(base, form, { s: "Net", p: "pw", mqtt_port: "not-a-port" });
    assert.equal(st, 400, "an invalid MQTT port is refused");
    assert.ok(await gone(dev.url + "/", 1_000), "the API stays down: still in setup mode");
    const again = await setupForm(base);
    assert.ok(again.fields.has("s"), "the setup page is still served");
  });

  test("settings that cannot be stored → an error page, setup mode stays, nothing half-saved", async (t) => {
    const folder = await tempDir("framefi-setup-fail-");
    const state = join(folder, "state");
    const dev = await startDevice({ state, card: join(folder, "card") });
    t.after(async () => {
      await dev.stop();
      await removeDir(folder);
    });
    const base = `http://127.0.0.1:${dev.setupPort}`;
    await post(dev.url, "/wifi/reset");
    const form = await eventually(() => setupForm(base), 5_000, 100);
    await rm(state, { recursive: true, force: true });
    await writeFile(state, "not a folder");
    const st = await submit(base, form, { s: "Net", p: "pw", web_user: "half", web_pass: "saved" });
    assert.ok(st >= 500, `a save that could not be stored answered ${st}`);
    assert.ok(await gone(dev.url + "/", 1_000), "still in setup mode");
    const again = await setupForm(base);
    assert.ok(again.fields.has("s"), "the form is still served");
    assert.equal(again.fields.get("web_user"), form.fields.get("web_user"), "the web user that could not be stored is not in effect");
  });
});

describe("the process dies during an upload", () => {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    // In MSC mode the service may not write to the card, so its leftovers go once it owns the card again (FTP mode).
    test(`${signal} mid-upload: once the next start owns the card again, nothing of it is left`, async (t) => {
      const folder = await tempDir("framefi-kill-");
      t.after(() => removeDir(folder));
      const card = join(folder, "card");
      const state = join(folder, "state");
      const args = ["--card-size", "64MiB"];
      const a = await startDevice({ card, state, args });
      try {
        await api(a).setMode("ftp");
        await eventually(async () => (await api(a).status()).mode === MODE_FTP || undefined, 10_000);
        const up = openUpload(a.port, "killed/mid.bin", 8 * MiB);
        await up.send(Buffer.alloc(2 * MiB, 7));
        await receiving(card);
        a.program.child.kill(signal);
        const code = await a.program.exited;
        if (signal === "SIGTERM") assert.ok(code === 0 || code === "SIGTERM", `SIGTERM → exit ${code}`);
      } finally {
        await a.stop();
      }
      const b = await startDevice({ card, state, args });
      try {
        await api(b).setMode("ftp");
        const left = await eventually(async () => {
          const t = await tree(card);
          return t.length === 0 ? t : undefined;
        }, 10_000).catch(() => tree(card));
        assert.deepEqual(left, [], "no partial or temp file, no folder made for it");
        assert.equal((await api(b).status()).sd_card.file_count, 0);
        assert.equal((await api(b).status()).sd_card.used_size, 0);
      } finally {
        await b.stop();
      }
    });
  }
});
