// The MQTT dot on the mode screen is green while the device's MQTT client is connected and turns
// red when the broker goes away — with a real broker (aedes, in this process) and the real bin/framefi-device.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { Aedes } from "aedes";
import { eventually, freePort, startDevice, type RunningDevice } from "../helpers.js";

/** The fill colours of the circles in the display picture: the MQTT dot. */
async function dots(dev: RunningDevice): Promise<string[]> {
  const svg = await (await fetch(`${dev.url}/panel/display.svg`)).text();
  return [...svg.matchAll(/<circle [^>]*fill="([^"]+)"/g)].map((m) => m[1]!);
}

describe("the MQTT dot", () => {
  let dev: RunningDevice;
  let server: Server;
  let broker: Aedes;
  const sockets = new Set<Socket>();

  before(async () => {
    const port = await freePort();
    broker = await Aedes.createBroker();
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      broker.handle(socket);
    });
    await new Promise<void>((res) => server.listen(port, "127.0.0.1", res));
    dev = await startDevice({ args: ["--mqtt-url", `mqtt://127.0.0.1:${port}`, "--mqtt-topic-prefix", `panel-${port}`] });
  });
  after(async () => {
    await dev?.stop();
    for (const s of sockets) s.destroy();
    await new Promise<void>((res) => (server ? server.close(() => res()) : res()));
    await new Promise<void>((res) => (broker ? broker.close(() => res()) : res()));
  });

  test("green while connected, red once the broker is gone", async () => {
    await eventually(async () => (await dots(dev)).join() === "#a6e3a1", 15_000);
    const status = (await (await fetch(`${dev.url}/mqtt/status`)).json()) as { mqtt_connected: boolean };
    assert.equal(status.mqtt_connected, true, "the dot agrees with the API");
    for (const s of sockets) s.destroy();
    await new Promise<void>((res) => server.close(() => res()));
    await eventually(async () => (await dots(dev)).join() === "#f38ba8", 15_000);
  });
});
