// The setup page (after a Wi-Fi reset) under attack, second round: a stored secret must not come out of the page,
// not even one bit at a time. Each test performs the attack against the real bin/framefi-device.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { eventually, startDevice } from "../helpers.js";
import { call } from "./fixtures/http.js";

const form = (values: Record<string, string>): RequestInit => ({ method: "POST", body: new URLSearchParams(values), signal: AbortSignal.timeout(5_000) });

async function toSetupMode(dev: { url: string; setupPort: number }, auth?: [string, string]): Promise<string> {
  const setup = `http://127.0.0.1:${dev.setupPort}`;
  assert.equal((await call(dev.url, "POST", "/wifi/reset", auth ? { auth } : {})).status, 200);
  await eventually(async () => (await fetch(`${setup}/`).catch(() => undefined))?.status === 200, 10_000, 100);
  return setup;
}

describe("the setup page is no oracle for the stored FTP and MQTT passwords", () => {
  test("without the web password, a guessed FTP or MQTT password is answered the same whether it is right or wrong", async (t) => {
    const owner: [string, string] = ["owner", "owner-pw"];
    const dev = await startDevice({
      args: [
        "--web-user",
        owner[0],
        "--web-password",
        owner[1],
        "--ftp-user",
        "frame",
        "--ftp-password",
        "ftp-secret",
        "--mqtt-url",
        "mqtt://mq-user:mq-secret@127.0.0.1:1",
      ],
    });
    t.after(() => dev.stop());
    const setup = await toSetupMode(dev, owner);
    for (const field of ["ftp_pass", "mqtt_pass"]) {
      const right = field === "ftp_pass" ? "ftp-secret" : "mq-secret";
      const wrong = await fetch(`${setup}/paramsave`, form({ [field]: "a-wrong-guess" }));
      await wrong.text();
      const hit = await fetch(`${setup}/paramsave`, form({ [field]: right }));
      await hit.text();
      // Today: 403 for the wrong guess, 200 "Saved" for the right one, so anyone near the access point can
      // test guesses of the stored password without knowing the web password (and without the login throttle).
      assert.equal(hit.status, wrong.status, `${field}: a right guess (${hit.status}) is told apart from a wrong one (${wrong.status})`);
    }
  });
});

describe("the setup page's current-web-password field is a login surface", () => {
  test("guesses of the web password in web_pass_current are throttled like the web API's and FTP's logins", async (t) => {
    const owner: [string, string] = ["owner", "owner-pw"];
    const dev = await startDevice({
      args: ["--web-user", owner[0], "--web-password", owner[1], "--login-attempts", "3", "--ftp-user", "frame", "--ftp-password", "ftp-pw"],
    });
    t.after(() => dev.stop());
    const setup = await toSetupMode(dev, owner);
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await fetch(`${setup}/paramsave`, form({ ftp_pass: "owned", web_pass_current: `guess-${i}` }));
      await r.text();
      statuses.push(r.status);
    }
    const elapsed = Date.now() - started;
    const right = await fetch(`${setup}/paramsave`, form({ ftp_pass: "owned", web_pass_current: owner[1] }));
    await right.text();
    // Today: 30 wrong guesses are each answered 403 at once (no 429, no wait), and the right one right after is 200:
    // the throttle that holds FTP and the web API (1 s doubling after 3 failures) is not asked here.
    assert.ok(
      statuses.includes(429) || elapsed > 10_000 || right.status !== 200,
      `30 guesses in ${elapsed} ms answered ${[...new Set(statuses)].join("/")}, then the right password ${right.status}: no throttle`,
    );
  });
});
