// Basic auth on every endpoint, the 401 challenge, blank credentials → open,
// the read-only account (GET ok, POST 403), secrets kept out of the logs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { bin, eventually, run, startDevice, type RunningDevice } from "../helpers.js";
import { BODY, ENDPOINTS, MODE_MSC } from "./fixtures/contract.js";
import { call } from "./fixtures/http.js";
import { curl } from "../fixtures/http.js";
import { api } from "./fixtures/device.js";
import { AuthenticationError, ForbiddenError } from "../../src/client/api/index.js";

const USER = "frame-admin";
const PASS = "s3cret-Pa55:with-colon";
const RO_USER = "viewer";
const RO_PASS = "look-only-77";
const ADMIN = [USER, PASS] as const;

/** The read-only account's flags, as `--help` names them. */
async function readOnlyFlags(): Promise<[string, string]> {
  const help = (await run(bin("framefi-device"), ["--help"])).stdout;
  const user = help.match(/--(?:read[-_]?only|ro|readonly|viewer|read)[-\w]*-user\b/)?.[0];
  const pass = help.match(/--(?:read[-_]?only|ro|readonly|viewer|read)[-\w]*-pass(?:word)?\b/)?.[0];
  if (!user || !pass) throw new Error(`--help names no read-only account flags:\n${help}`);
  return [user, pass];
}

const errorBody = (text: string): void => {
  const j = JSON.parse(text);
  assert.deepEqual(Object.keys(j), ["status", "message"], text);
  assert.equal(j.status, "error");
  assert.ok(typeof j.message === "string" && j.message.length > 0);
};

/** The settable part of the state (MQTT connection fields move on their own). */
async function settable(dev: RunningDevice): Promise<object> {
  const s = await api(dev, ADMIN).status();
  return { mode: s.mode, display: s.display.status, mqtt: s.mqtt.enabled, led: s.led.state, brightness: s.led.brightness };
}

describe("a web user and password are set", () => {
  let dev: RunningDevice;
  let roFlags: [string, string] | undefined;
  before(async () => {
    roFlags = await readOnlyFlags().catch(() => undefined);
    const ro = roFlags ? [roFlags[0], RO_USER, roFlags[1], RO_PASS] : [];
    // These tests try many wrong logins on purpose: the throttle has its own tests (login-throttle.test.ts).
    dev = await startDevice({ args: ["--web-user", USER, "--web-password", PASS, "--login-attempts", "1000", ...ro] });
  });
  after(async () => {
    await dev?.stop();
  });

  const bodyFor = (m: string, p: string): string | undefined => (m === "POST" && p === "/led/brightness" ? "99" : undefined);

  test('every endpoint without credentials → 401, Basic realm="FrameFi", JSON error; nothing changes', async () => {
    const before = await settable(dev);
    for (const [m, p] of ENDPOINTS) {
      const r = await call(dev.url, m, p, { body: bodyFor(m, p) });
      assert.equal(r.status, 401, `${m} ${p}`);
      assert.equal(r.headers.get("www-authenticate"), 'Basic realm="FrameFi"', `${m} ${p}`);
      assert.match(r.headers.get("content-type") ?? "", /^application\/json/, `${m} ${p}`);
      errorBody(r.text);
    }
    assert.deepEqual(await settable(dev), before, "no unauthenticated POST changed anything (restart and wifi reset included)");
  });

  test("wrong password, wrong user, malformed Authorization → 401", async () => {
    const wrong: Array<Record<string, string>> = [
      { authorization: "Basic " + Buffer.from(`${USER}:wrong-password-XYZ`).toString("base64") },
      { authorization: "Basic " + Buffer.from(`someone:${PASS}`).toString("base64") },
      { authorization: "Basic " + Buffer.from(`${USER}:${PASS}x`).toString("base64") },
      { authorization: "Basic " + Buffer.from(`${USER}:${PASS.slice(0, -1)}`).toString("base64") },
      { authorization: "Basic " + Buffer.from(`${USER}`).toString("base64") },
      { authorization: "Basic !!!not-base64!!!" },
      { authorization: "Bearer " + PASS },
      { authorization: "Basic" },
    ];
    for (const headers of wrong) {
      for (const [m, p] of [
        ["GET", "/"],
        ["POST", "/display/off"],
      ] as const) {
        const r = await call(dev.url, m, p, { headers });
        assert.equal(r.status, 401, `${m} ${p} with ${headers.authorization}`);
        assert.equal(r.headers.get("www-authenticate"), 'Basic realm="FrameFi"');
        errorBody(r.text);
      }
    }
    assert.equal((await api(dev, ADMIN).status()).display.status, "on");
    await assert.rejects(api(dev, [USER, "wrong"]).status(), AuthenticationError);
    await assert.rejects(api(dev).display("off"), AuthenticationError);
  });

  test("the right credentials open every endpoint (curl -u as in the docs)", async () => {
    for (const [m, p] of ENDPOINTS.filter(([m]) => m === "GET")) {
      const r = await call(dev.url, m, p, { auth: ADMIN });
      assert.equal(r.status, 200, `${m} ${p}`);
    }
    const r = await curl(["-u", `${USER}:${PASS}`, "-X", "POST", `${dev.url}/display/off`]);
    assert.equal(r.status, 200);
    assert.equal(r.body, BODY.displayTurned("off"));
    const r2 = await curl(["-u", `${USER}:${PASS}`, "-X", "POST", `${dev.url}/display/on`]);
    assert.equal(r2.body, BODY.displayTurned("on"));
    const up = await curl(["-u", `${USER}:${PASS}`, "-F", "file=@/etc/hostname", `${dev.url}/upload`]);
    assert.equal(up.status, 400, "authenticated upload in MSC mode reaches the MSC check");
    assert.equal(up.body, BODY.uploadInMsc);
  });

  test("the auth scheme name is case-insensitive (RFC 7617)", async () => {
    const token = Buffer.from(`${USER}:${PASS}`).toString("base64");
    for (const scheme of ["basic", "BASIC"]) {
      const r = await call(dev.url, "GET", "/led/status", { headers: { authorization: `${scheme} ${token}` } });
      assert.equal(r.status, 200, scheme);
    }
  });

  test("secrets never appear in the service's output", async () => {
    const out = dev.program.stdout() + dev.program.stderr();
    assert.ok(!out.includes(PASS), "web password in logs");
    assert.ok(!out.includes("wrong-password-XYZ"), "a tried password in logs");
    assert.ok(!out.includes(RO_PASS), "read-only password in logs");
  });

  test("read-only account: every GET 200, every POST 403 JSON; nothing changes", async () => {
    assert.ok(roFlags, "--help names the read-only account's flags (e.g. --read-only-user / --read-only-password)");
    const RO = [RO_USER, RO_PASS] as const;
    const before = await settable(dev);
    for (const [m, p] of ENDPOINTS) {
      const r = await call(dev.url, m, p, { auth: RO, body: bodyFor(m, p) });
      if (m === "GET") assert.equal(r.status, 200, `${m} ${p}: ${r.text}`);
      else {
        assert.equal(r.status, 403, `${m} ${p}: ${r.text}`);
        assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
        errorBody(r.text);
      }
    }
    const roClient = api(dev, RO);
    assert.equal((await roClient.ledStatus()).status, "success");
    await assert.rejects(roClient.led("off"), ForbiddenError);
    await assert.rejects(roClient.setBrightness(1), ForbiddenError);
    const wrongRo = await call(dev.url, "GET", "/", { auth: [RO_USER, "nope"] });
    assert.equal(wrongRo.status, 401);
    assert.deepEqual(await settable(dev), before);
    assert.equal((await api(dev, ADMIN).status()).mode, MODE_MSC);
  });
});

describe("blank credentials → no authentication", () => {
  test("--web-user '' --web-password '' answers without credentials", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "", "--web-password", ""] });
    t.after(() => dev.stop());
    const r = await call(dev.url, "GET", "/");
    assert.equal(r.status, 200);
    assert.equal((await call(dev.url, "POST", "/display/off")).text, BODY.displayTurned("off"));
    const withCreds = await call(dev.url, "GET", "/mode/msc", { auth: ["anyone", "anything"] });
    assert.equal(withCreds.status, 200, "credentials sent to an open device are ignored");
  });

  test("a user with a blank password still needs that user (firmware checks the user only)", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "solo", "--web-password", ""] });
    t.after(() => dev.stop());
    assert.equal((await call(dev.url, "GET", "/")).status, 401);
    assert.equal((await call(dev.url, "GET", "/", { auth: ["solo", ""] })).status, 200);
  });
});

describe("a password without a user", () => {
  test("leaves the API open, as on the firmware, and the start-up log warns", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "", "--web-password", "only-a-password"] });
    t.after(() => dev.stop());
    assert.equal((await call(dev.url, "GET", "/")).status, 200);
    assert.equal((await call(dev.url, "POST", "/display/off")).text, BODY.displayTurned("off"));
    const logs = (): string => dev.program.stdout() + dev.program.stderr();
    await eventually(() => /warning: a web password is set but no web user, so the API is open to everyone/.test(logs()), 10_000);
    assert.doesNotMatch(logs(), /only-a-password/);
  });
});

describe("non-ASCII credentials", () => {
  test("UTF-8 credentials work with curl -u", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "jörg", "--web-password", "päss-ñ"] });
    t.after(() => dev.stop());
    assert.equal((await curl(["-u", "jörg:päss-ñ", `${dev.url}/mode/msc`])).body, BODY.modeIsMsc);
    assert.equal((await curl(["-u", "jorg:pass-n", `${dev.url}/mode/msc`])).status, 401);
  });
});
