// `framefi wifi reset` asks for confirmation on a terminal unless --yes; without a terminal
// and without --yes it refuses (exit 2) and the device keeps its network.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";
import { framefi, framefiOnTerminal } from "./fixtures/cli.js";

async function answers(url: string): Promise<boolean> {
  try {
    await (await fetch(url, { signal: AbortSignal.timeout(2_000) })).arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

describe("framefi wifi reset", () => {
  const devices: RunningDevice[] = [];
  after(async () => {
    await Promise.all(devices.map((d) => d.stop()));
  });

  test("refuses without a terminal and without --yes; a 'no' on the terminal changes nothing; 'yes' resets", async () => {
    const dev = await startDevice();
    devices.push(dev);
    const host = `127.0.0.1:${dev.port}`;
    const refused = await framefi(["--host", host, "wifi", "reset"], { input: "y\n" });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--yes/);

    const no = await framefiOnTerminal(["--host", host, "wifi", "reset"], [["[y/N]", "n\r"]]);
    assert.equal(no.code, 0, no.transcript);
    assert.match(no.transcript, /Reset the Wi-Fi settings of http:\/\/127\.0\.0\.1:\d+\?.*\[y\/N\]/s);
    assert.match(no.transcript, /Nothing done\./);
    assert.ok(await answers(dev.url), "the device keeps its network");

    const yes = await framefiOnTerminal(["--host", host, "wifi", "reset"], [["[y/N]", "y\r"]]);
    assert.equal(yes.code, 0, yes.transcript);
    assert.match(yes.transcript, /Resetting WiFi and restarting\.\.\./);
    await eventually(async () => !(await answers(dev.url)), 10_000, 100);
    await eventually(() => answers(`http://127.0.0.1:${dev.setupPort}/`), 10_000, 100);
  });

  test("--yes resets without asking; --json prints the device's answer", async () => {
    const dev = await startDevice();
    devices.push(dev);
    const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "wifi", "reset", "--yes", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '{"status":"success","message":"Resetting WiFi and restarting..."}\n');
    await eventually(() => answers(`http://127.0.0.1:${dev.setupPort}/`), 10_000, 100);
  });
});
