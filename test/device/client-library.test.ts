// The typed client (src/client/api/index.ts) against a running bin/framefi-device: every method, every error class.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import {
  AuthenticationError,
  baseUrl,
  DeviceHttpError,
  DeviceUnreachableError,
  ForbiddenError,
  FrameFiClient,
  MODE_FTP,
  MODE_MSC,
} from "../../src/client/api/index.js";
import { eventually, freePort, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";

let dev: RunningDevice;
let client: FrameFiClient;
let work: string;

before(async () => {
  work = await tempDir("framefi-client-");
  dev = await startDevice({
    args: ["--card-size", "4MiB", "--web-user", "admin", "--web-password", "s3cret", "--read-only-user", "viewer", "--read-only-password", "look"],
  });
  client = new FrameFiClient({ host: `127.0.0.1:${dev.port}`, user: "admin", password: "s3cret" });
});
after(async () => {
  await dev?.stop();
  await removeDir(work);
});

describe("FrameFiClient", () => {
  test("baseUrl accepts host, host:port and URLs", () => {
    assert.equal(baseUrl("frame.local"), "http://frame.local");
    assert.equal(baseUrl("10.0.0.5:8080"), "http://10.0.0.5:8080");
    assert.equal(baseUrl("http://[::1]:8080/"), "http://[::1]:8080");
    assert.throws(() => baseUrl("ftp://x"), /only http/);
  });

  test("status and the GET endpoints return the firmware's shapes", async () => {
    const s = await client.status();
    assert.equal(s.mode, MODE_MSC);
    assert.equal(s.sd_card.total_size, 4 * 1024 * 1024);
    assert.deepEqual(await client.mode(), { status: "success", mode: MODE_MSC });
    assert.deepEqual(await client.displayStatus(), { status: "success", display_status: "on" });
    assert.deepEqual(await client.ledStatus(), { status: "success", color: "green", state: "on", brightness: 13 });
    assert.deepEqual(await client.brightness(), { status: "success", brightness: 13 });
    assert.deepEqual(await client.mqttStatus(), { status: "success", mqtt_enabled: false, mqtt_connected: false, mqtt_state: -1 });
  });

  test("the POST endpoints return the firmware's messages", async () => {
    assert.deepEqual(await client.display("off"), { status: "success", message: "Display turned off." });
    assert.deepEqual(await client.display("toggle"), { status: "success", message: "Display toggled on." });
    assert.deepEqual(await client.led("toggle"), { status: "success", message: "LED toggled." });
    assert.deepEqual(await client.led("on"), { status: "success", message: "LED turned on." });
    assert.deepEqual(await client.mqtt("toggle"), { status: "success", message: "MQTT toggled." });
    assert.deepEqual(await client.mqtt("disable"), { status: "success", message: "MQTT disabled." });
    assert.deepEqual(await client.setBrightness(77), { status: "success", message: "LED brightness set to 77." });
    await assert.rejects(client.setBrightness(256), /0 to 255/);
  });

  test("mode switch and uploads: path, bytes and stream sources; device errors are typed", async () => {
    await assert.rejects(client.upload({ name: "a.txt", data: Buffer.from("x") }), (e: unknown) => {
      assert.ok(e instanceof DeviceHttpError);
      assert.equal(e.status, 400);
      assert.equal(e.deviceMessage, "Cannot upload in MSC mode.");
      return true;
    });
    assert.deepEqual(await client.setMode("ftp"), { status: "success", message: "Attempting to switch to Application (FTP) mode." });
    assert.deepEqual(await client.setMode("ftp"), { status: "no_change", message: "Already in Application (FTP) mode." });
    await eventually(async () => (await client.status()).mode === MODE_FTP);

    const local = join(work, "local.jpg");
    await writeFile(local, Buffer.alloc(300_000, 3));
    let progress = 0;
    const result = await client.upload(local, "2024/été/local.jpg", (sent, total) => {
      assert.equal(total, 300_000);
      progress = sent;
    });
    assert.deepEqual(result, { status: "success", message: "File uploaded successfully." });
    assert.equal(progress, 300_000);
    assert.deepEqual(await readFile(join(dev.card, "2024/été/local.jpg")), Buffer.alloc(300_000, 3));
    await client.upload({ name: "bytes.bin", data: Buffer.from("hello") });
    await client.upload({ name: "stream.bin", data: Readable.from([Buffer.from("a"), Buffer.from("b")]) });
    assert.equal(await readFile(join(dev.card, "stream.bin"), "utf8"), "ab");
    const s = await client.status();
    assert.equal(s.sd_card.file_count, 3);
    assert.equal(s.sd_card.used_size, 300_000 + 5 + 2);

    await assert.rejects(client.upload({ name: "../out.txt", data: Buffer.from("x") }), (e: unknown) => e instanceof DeviceHttpError && e.status === 400);
    await assert.rejects(
      client.upload({ name: "huge.bin", data: Buffer.alloc(5 * 1024 * 1024) }),
      (e: unknown) => e instanceof DeviceHttpError && e.status === 507,
    );
    await client.setMode("msc");
  });

  test("401, 403 and unreachable are their own classes", async () => {
    const anonymous = new FrameFiClient({ host: dev.url });
    await assert.rejects(anonymous.status(), (e: unknown) => e instanceof AuthenticationError && e.status === 401);
    const wrong = new FrameFiClient({ host: dev.url, user: "admin", password: "nope" });
    await assert.rejects(wrong.status(), AuthenticationError);
    const viewer = new FrameFiClient({ host: dev.url, user: "viewer", password: "look" });
    assert.equal((await viewer.status()).mode, MODE_MSC);
    await assert.rejects(viewer.led("off"), (e: unknown) => e instanceof ForbiddenError && e.status === 403);
    const nobody = new FrameFiClient({ host: `127.0.0.1:${await freePort()}`, timeoutMs: 3_000 });
    await assert.rejects(nobody.status(), DeviceUnreachableError);
  });
});
