// Connection faults and their PubSubClient state codes: unreachable broker, silent broker, refused
// credentials, a broker stopped and restarted. Each test owns its broker; the shared one is never touched.
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { describe, test } from "node:test";
import { embeddedBroker, findMosquitto, ownBroker, startMosquitto } from "./fixtures/broker.js";
import { startFrame, unique, WAIT, watch } from "./fixtures/frame.js";
import { freePort } from "../helpers.js";

const stateEvent =
  (state: number, connected = state === 0) =>
  (e: { event: string; state?: number; connected?: boolean }) =>
    e.event === "state" && e.state === state && e.connected === connected;

describe("connection faults", { concurrency: 2 }, () => {
  test("unreachable broker: state -2, retried until a broker appears, then 0", async (t) => {
    const port = await freePort();
    const frame = startFrame({ url: `mqtt://127.0.0.1:${port}`, retryMs: 500, ...unique("unreachable") });
    t.after(() => frame.stop());
    await frame.waitEvent(stateEvent(-2));
    assert.match(frame.program.stderr(), /failed \(state -2: connect ECONNREFUSED/);
    const broker = await embeddedBroker({ port });
    t.after(() => broker.stop());
    await frame.waitEvent(stateEvent(0));
  });

  test("a broker that never answers CONNECT: state -4 (connection timeout)", async (t) => {
    const sockets = new Set<Socket>();
    const silent = createServer((s) => void sockets.add(s));
    await new Promise<void>((res) => silent.listen(0, "127.0.0.1", res));
    t.after(() => {
      for (const s of sockets) s.destroy();
      silent.close();
    });
    const port = (silent.address() as { port: number }).port;
    const frame = startFrame({ url: `mqtt://127.0.0.1:${port}`, retryMs: 500, connectTimeoutMs: 1_000, ...unique("silent") });
    t.after(() => frame.stop());
    await frame.waitEvent(stateEvent(-4));
  });

  test("a broker refusing the user name or password: state 4, and 0 with the right ones", async (t) => {
    const broker = await embeddedBroker({ users: { frame: "s3cret-pass" } });
    t.after(() => broker.stop());
    const bad = startFrame({ url: broker.url, username: "frame", password: "wrong-pass", retryMs: 500, ...unique("badcreds") });
    t.after(() => bad.stop());
    await bad.waitEvent(stateEvent(4));
    assert.doesNotMatch(bad.program.stderr(), /wrong-pass/, "the password never reaches the log");

    const good = startFrame({ url: broker.url, username: "frame", password: "s3cret-pass", retryMs: 500, ...unique("goodcreds") });
    t.after(() => good.stop());
    await good.waitEvent(stateEvent(0));
  });

  test("Mosquitto with a password file: wrong password → state 5 (Mosquitto answers 'not authorised'), right one → 0", async (t) => {
    const binary = await findMosquitto();
    if (!binary) return t.skip("mosquitto is not installed");
    const broker = await startMosquitto(binary, { users: { frame: "s3cret-pass" } });
    t.after(() => broker.dispose());
    const creds = new URL(broker.url);
    creds.username = "frame";
    creds.password = "wrong-pass";
    const bad = startFrame({ url: creds.toString(), retryMs: 500, ...unique("mosq-bad") });
    t.after(() => bad.stop());
    await bad.waitEvent(stateEvent(5));
    assert.doesNotMatch(bad.program.stderr(), /wrong-pass/, "the password never reaches the log");

    const anonymous = startFrame({ url: broker.url, retryMs: 500, ...unique("mosq-anon") });
    t.after(() => anonymous.stop());
    await anonymous.waitEvent(stateEvent(5));

    const good = startFrame({ url: broker.url, username: "frame", password: "s3cret-pass", retryMs: 500, ...unique("mosq-good") });
    t.after(() => good.stop());
    await good.waitEvent(stateEvent(0));
  });

  test("broker stopped and restarted: state -3, then 0 again within 10 s, state republished", async (t) => {
    const broker = await ownBroker();
    t.after(() => broker.dispose());
    const ids = unique("restart-broker");
    // The default retry period (5 s), as in production.
    const frame = startFrame({ url: broker.url, ...ids });
    t.after(() => frame.stop());
    await frame.waitEvent(stateEvent(0));

    let from = frame.events().length;
    await broker.stop();
    await frame.waitEvent(stateEvent(-3), WAIT, from);

    from = frame.events().length;
    await broker.start();
    const restarted = Date.now();
    await frame.waitEvent(stateEvent(0), WAIT, from);
    assert.ok(Date.now() - restarted < 10_000, `reconnected after ${Date.now() - restarted} ms`);
    // The new broker lost everything; the frame publishes its retained topics again on connect.
    const w = await watch(broker.url, [`${ids.topicPrefix}/state`, `${ids.topicPrefix}/status`]);
    t.after(() => w.close());
    await w.waitFor(`${ids.topicPrefix}/state`, (s) => JSON.parse(s).mode === "USB MSC");
    await w.waitFor(`${ids.topicPrefix}/status`, (s) => s === "online");
  });
});
