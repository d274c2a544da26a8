// The setup page (after a Wi-Fi reset) under attack: anyone near the access point can post the form, so it must
// not hand out the stored MQTT and FTP logins. Each test performs the attack against the real bin/framefi-device.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { eventually, freePort, startDevice } from "../helpers.js";
import { call } from "./fixtures/http.js";

const form = (values: Record<string, string>): RequestInit => ({ method: "POST", body: new URLSearchParams(values), signal: AbortSignal.timeout(5_000) });

/** A TCP listener standing in for an attacker's broker: resolves with the first MQTT CONNECT packet it receives. */
async function connectCatcher(host: string, port: number): Promise<{ connect: Promise<Buffer>; close: () => void }> {
  const sockets = new Set<Socket>();
  let caught: (packet: Buffer) => void = () => undefined;
  const connect = new Promise<Buffer>((res) => (caught = res));
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    let got = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      // Fixed header, then the remaining length (one byte is enough for a CONNECT this small).
      if (got.length >= 2 && got.length >= 2 + got[1]!) caught(got.subarray(0, 2 + got[1]!));
    });
  });
  await new Promise<void>((r) => server.listen(port, host, r));
  return {
    connect,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** The CONNECT flags byte: after the fixed header (2), the protocol name (2 + 4) and the level (1). */
const PASSWORD_FLAG = 0x40;
const connectFlags = (packet: Buffer): number => packet[9]!;

async function toSetupMode(dev: { url: string; setupPort: number }, auth?: [string, string]): Promise<string> {
  const setup = `http://127.0.0.1:${dev.setupPort}`;
  assert.equal((await call(dev.url, "POST", "/wifi/reset", auth ? { auth } : {})).status, 200);
  await eventually(async () => (await fetch(`${setup}/`).catch(() => undefined))?.status === 200, 10_000, 100);
  return setup;
}

describe("the setup page keeps the stored MQTT and FTP logins", () => {
  test("a new MQTT host with the password left blank gets no password: the device does not log in to it with the stored one", async (t) => {
    const port = await freePort();
    const dev = await startDevice({ args: ["--mqtt-url", `mqtt://mq-user:mq-secret@127.0.0.1:${port}`] });
    t.after(() => dev.stop());
    // The attacker's broker: the same port on another loopback address.
    const evil = await connectCatcher("127.0.0.2", port);
    t.after(evil.close);
    const setup = await toSetupMode(dev);
    // As the page sends it: every field, the stored user filled in, the password blank.
    const saved = await fetch(
      `${setup}/wifisave`,
      form({ s: "EvilNet", p: "x", mqtt_host: "127.0.0.2", mqtt_port: String(port), mqtt_user: "mq-user", mqtt_pass: "", ftp_user: "user", ftp_pass: "" }),
    );
    assert.equal(saved.status, 200);
    const packet = await evil.connect;
    assert.ok(!packet.includes("mq-secret"), "the stored MQTT password went to the new broker");
    assert.equal(connectFlags(packet) & PASSWORD_FLAG, 0, "no password in the CONNECT");
    const log = dev.program.stdout() + dev.program.stderr();
    assert.ok(!log.includes("mq-secret"), "the password is not in the log");
  });

  test("with a web login set, changing the FTP or MQTT login needs the current web password (403)", async (t) => {
    const owner: [string, string] = ["owner", "owner-pw"];
    const dev = await startDevice({
      args: [
        // More wrong guesses than the five refused below before the throttle delays the owner (attack-setup-2 tests it).
        "--login-attempts",
        "20",
        "--web-user",
        owner[0],
        "--web-password",
        owner[1],
        "--ftp-user",
        "frame",
        "--ftp-password",
        "ftp-pw",
        "--mqtt-url",
        "mqtt://mq-user:mq-pw@127.0.0.1:1",
      ],
    });
    t.after(() => dev.stop());
    const setup = await toSetupMode(dev, owner);
    for (const [path, values] of [
      ["/wifisave", { s: "EvilNet", p: "x", ftp_user: "attacker", ftp_pass: "" }],
      ["/wifisave", { s: "EvilNet", p: "x", ftp_user: "frame", ftp_pass: "owned" }],
      ["/paramsave", { mqtt_user: "attacker" }],
      ["/paramsave", { mqtt_user: "mq-user", mqtt_pass: "owned" }],
      ["/paramsave", { ftp_pass: "owned", web_pass_current: "a guess" }],
    ] as const) {
      const r = await fetch(`${setup}${path}`, form(values));
      assert.equal(r.status, 403, `${path} ${JSON.stringify(values)}`);
      assert.match(await r.text(), /enter the current web password to change the web, FTP or MQTT login/);
    }
    // The page as sent unchanged, and a new MQTT host, need no password.
    const params = await fetch(`${setup}/paramsave`, form({ ftp_user: "frame", ftp_pass: "", mqtt_user: "mq-user", mqtt_pass: "", mqtt_host: "broker.lan" }));
    assert.equal(params.status, 200);
    const stored = JSON.parse(await readFile(join(dev.state, "settings.json"), "utf8")) as Record<string, unknown>;
    assert.equal(stored.mqttHost, "broker.lan");
    assert.equal(stored.mqttPassword, "", "the new host does not get the stored MQTT password");
    assert.ok(!JSON.stringify(stored).includes("attacker") && !JSON.stringify(stored).includes("owned"));
    // The owner, with the current web password, changes the FTP login.
    const saved = await fetch(`${setup}/wifisave`, form({ s: "HomeNet", p: "pw", ftp_user: "frame2", ftp_pass: "ftp-pw2", web_pass_current: owner[1] }));
    assert.equal(saved.status, 200);
    const after = JSON.parse(await readFile(join(dev.state, "settings.json"), "utf8")) as Record<string, unknown>;
    assert.equal(after.ftpUser, "frame2");
  });
});
