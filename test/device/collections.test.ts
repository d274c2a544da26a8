// Collections on the folder card (framefi-device --collections DIR, a folder per collection): the web API lists them
// and switches the frame between them as the MQTT select does, behind the web login, only in USB MSC mode; what the
// device serves (its figures, its uploads) is the collection's folder, and the switch survives a restart.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { eventually, removeDir, run, bin, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { sharedBroker, type Broker } from "../mqtt/fixtures/broker.js";
import { clearRetained, watch, type Watcher } from "../mqtt/fixtures/frame.js";
import { get, post } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";

const USER = ["coluser", "colpass"] as const;
const READER = ["viewer", "viewpass"] as const;

/** A folder of collections: winter (2 photos), summer (1), and a file that is not one. */
async function collectionsFolder(): Promise<string> {
  const dir = await tempDir("framefi-collections-");
  await mkdir(join(dir, "winter"));
  await mkdir(join(dir, "summer"));
  await writeFile(join(dir, "winter", "snow.jpg"), randomBytes(1000));
  await writeFile(join(dir, "winter", "ice.jpg"), randomBytes(1000));
  await writeFile(join(dir, "summer", "beach.jpg"), randomBytes(1000));
  await writeFile(join(dir, "notes.txt"), "not a collection");
  return dir;
}

const listed = async (dev: RunningDevice): Promise<unknown> => JSON.parse((await get(dev.url, "/collections", { auth: USER })).text);
const fileCount = async (dev: RunningDevice): Promise<number> => (await api(dev, USER).status()).sd_card.file_count;

describe("collections of folders over the web API and MQTT", () => {
  let dir: string;
  let state: string;
  let broker: Broker;
  let dev: RunningDevice;
  let mqtt: Watcher;
  const prefix = `framefi-coltest-${randomBytes(4).toString("hex")}`;
  const args = (): string[] => [
    ...["--collections", dir, "--web-user", USER[0], "--web-password", USER[1], "--read-only-user", READER[0], "--read-only-password", READER[1]],
    ...["--mqtt-url", broker.url, "--mqtt-topic-prefix", prefix, "--mqtt-discovery-prefix", `${prefix}/ha`, "--mqtt-client-id", prefix],
  ];

  before(async () => {
    dir = await collectionsFolder();
    state = await tempDir("framefi-colstate-");
    broker = await sharedBroker();
    mqtt = await watch(broker.url, [`${prefix}/#`]);
    dev = await startDevice({ card: join(dir, "winter"), state, args: args() });
  });
  after(async () => {
    await dev?.stop();
    await mqtt?.close();
    if (broker) {
      await clearRetained(broker.url, prefix, `${prefix}/ha`);
      await broker.stop();
    }
    await removeDir(dir);
    await removeDir(state);
  });

  test("GET /collections lists the folders and the one the frame has; the read-only account may read it", async () => {
    assert.deepEqual(await listed(dev), { status: "success", collections: ["summer", "winter"], current: "winter" });
    const r = await get(dev.url, "/collections", { auth: READER });
    assert.equal(r.status, 200);
    assert.equal((await get(dev.url, "/collections")).status, 401);
    assert.equal(await fileCount(dev), 2);
    await mqtt.waitFor(`${prefix}/collection`, (t) => t === "winter", 15_000);
  });

  test("POST /collections/use switches the frame: its card is the other folder, and MQTT's collection topic says so", async () => {
    const from = mqtt.messages.length;
    const r = await post(dev.url, "/collections/use", { auth: USER, body: "summer" });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(JSON.parse(r.text), { status: "success", message: "The frame now has the collection summer.", current: "summer" });
    assert.deepEqual(await listed(dev), { status: "success", collections: ["summer", "winter"], current: "summer" });
    assert.equal(await eventually(async () => ((await fileCount(dev)) === 1 ? 1 : undefined), 10_000), 1);
    await mqtt.waitFor(`${prefix}/collection`, (t) => t === "summer", 15_000, from);
    // Retained: Home Assistant, connecting later, sees it too.
    const late = await watch(broker.url, [`${prefix}/collection`]);
    try {
      const m = await late.waitFor(`${prefix}/collection`, undefined, 15_000);
      assert.deepEqual([m.text, m.retain], ["summer", true]);
    } finally {
      await late.close();
    }
    assert.equal((await readFile(join(state, "collection"), "utf8")).trim(), "summer");
  });

  test("the MQTT select and the web API switch the same thing", async () => {
    await eventually(async () => (await api(dev, USER).mqttStatus()).mqtt_connected || undefined, 15_000, 100);
    await mqtt.publish(`${prefix}/collection/set`, "winter");
    await eventually(async () => ((await listed(dev)) as { current: string }).current === "winter" || undefined, 15_000, 50);
    assert.equal(await eventually(async () => ((await fileCount(dev)) === 2 ? 2 : undefined), 10_000), 2);
    const r = await post(dev.url, "/collections/use", { auth: USER, body: "summer\n" });
    assert.equal(r.status, 200, r.text);
  });

  test("without the login, with the read-only account, or with a bad name: refused, and nothing changes", async () => {
    const before = await listed(dev);
    assert.equal((await post(dev.url, "/collections/use", { body: "winter" })).status, 401);
    const ro = await post(dev.url, "/collections/use", { auth: READER, body: "winter" });
    assert.equal(ro.status, 403, ro.text);
    const unknown = await post(dev.url, "/collections/use", { auth: USER, body: "autumn" });
    assert.equal(unknown.status, 404);
    assert.match(JSON.parse(unknown.text).message, /^No collection autumn: the collections are summer, winter; add autumn\.img/);
    for (const name of ["", "../winter", "winter/..", "/etc", "..", ".", "notes.txt", "winter\0", "w".repeat(33), "name=winter"]) {
      const r = await post(dev.url, "/collections/use", { auth: USER, body: name });
      assert.equal(r.status, 400, `${JSON.stringify(name)} → ${r.status} ${r.text}`);
      assert.match(JSON.parse(r.text).message, /^Not a collection name: send the name alone/);
    }
    assert.deepEqual(await listed(dev), before);
    assert.deepEqual((await readdir(dir)).sort(), ["notes.txt", "summer", "winter"]);
  });

  test("in FTP mode the collection cannot change (409); uploads land in the collection the frame has", async () => {
    const client = api(dev, USER);
    await client.setMode("ftp");
    await eventually(async () => (await client.mode()).mode !== "USB MSC" || undefined, 10_000);
    const r = await post(dev.url, "/collections/use", { auth: USER, body: "winter" });
    assert.equal(r.status, 409, r.text);
    assert.equal(
      JSON.parse(r.text).message,
      "The collection cannot change in FTP mode (the card is in use for uploads); switch the device back to USB MSC first (POST /mode/msc).",
    );
    const photo = randomBytes(500);
    await client.upload({ name: "new.jpg", data: photo });
    assert.deepEqual(await readFile(join(dir, "summer", "new.jpg")), photo);
    await client.setMode("msc");
    await eventually(async () => (await client.mode()).mode === "USB MSC" || undefined, 10_000);
    assert.equal((await post(dev.url, "/collections/use", { auth: USER, body: "winter" })).status, 200);
  });

  test("a restart keeps the collection the frame has", async () => {
    await post(dev.url, "/collections/use", { auth: USER, body: "summer" });
    await dev.stop();
    dev = await startDevice({ card: join(dir, "winter"), state, args: args() });
    assert.deepEqual(await listed(dev), { status: "success", collections: ["summer", "winter"], current: "summer" });
    assert.equal(await fileCount(dev), 2, "beach.jpg and the upload");
  });
});

test("a device without --collections answers GET /collections with 404 and says how to get them", async (t) => {
  const dev = await startDevice();
  t.after(() => dev.stop());
  for (const r of [await get(dev.url, "/collections"), await post(dev.url, "/collections/use", { body: "winter" })]) {
    assert.equal(r.status, 404);
    assert.deepEqual(JSON.parse(r.text), {
      status: "error",
      message: "This device has no collections: run it with --collections DIR (a folder of card images NAME.img with --usb-gadget, else of folders NAME).",
    });
  }
});

test("--collections naming no folder stops the start with a one-line reason", async (t) => {
  const state = await tempDir("framefi-colstate-");
  t.after(() => removeDir(state));
  const r = await run(bin("framefi-device"), ["--collections", join(state, "missing"), "--state", state, "--card", join(state, "card"), "--port", "0"], {
    timeoutMs: 30_000,
  });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /cannot start: the collections folder .*missing \(--collections\) does not exist or cannot be read: give a folder/);
});
