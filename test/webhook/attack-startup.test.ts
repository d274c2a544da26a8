// Connections accepted before the hook server serves: with -queue it listens first (as the reference, it may
// need root for the port) and waits for the shared queue to serve its hooks; connections meanwhile are held
// unread. A client that reset such a connection once ended bin/webhook (its socket's error had no listener).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, createServer, type Server as NetServer, type Socket } from "node:net";
import { bin, eventually, freePort, removeDir, start, tempDir } from "../helpers.js";
import { send, writeHooks } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

/**
 * A TCP proxy to NATS that stops passing the server's answers once the client asks about `marker` (a stream name),
 * until release(): the hook server then stays between listening and serving for as long as the test needs.
 */
async function stallingProxy(natsPort: number, marker: string): Promise<{ port: number; stalled: Promise<void>; release(): void; close(): void }> {
  let held = true;
  let onStall: () => void = () => undefined;
  const stalled = new Promise<void>((resolve) => (onStall = resolve));
  const waiting: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const server: NetServer = createServer((client) => {
    const upstream = connect(natsPort, "127.0.0.1");
    let asked = false;
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (d: Buffer) => {
      if (!asked && d.includes(marker)) {
        asked = true;
        onStall();
      }
      upstream.write(d);
    });
    upstream.on("data", (d: Buffer) => {
      if (asked && held) {
        upstream.pause();
        waiting.push(() => {
          client.write(d);
          upstream.resume();
        });
      } else client.write(d);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    stalled,
    release: () => {
      held = false;
      for (const w of waiting.splice(0)) w();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

let nats: Nats;
let dir = "";
before(async () => {
  nats = await startNats();
  dir = await tempDir("webhook-startup-");
});
after(async () => {
  await nats?.close();
  await removeDir(dir);
});

describe("connections before the hooks are served", () => {
  test("with -queue, clients that reset their connection while the queue gets ready do not end the server", async (t) => {
    const hooks = await writeHooks(dir, [{ id: "held", "execute-command": "/bin/true" }]);
    const proxy = await stallingProxy(nats.port, "WEBHOOK_held");
    t.after(() => proxy.close());
    const port = await freePort();
    const proc = start(bin("webhook"), ["-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks, "-queue", `nats://127.0.0.1:${proxy.port}`, "-verbose"]);
    t.after(() => proc.stop());
    await proxy.stalled;
    // The port accepts (the server listens) but nothing is read yet: reset a few such connections.
    await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          const s = connect(port, "127.0.0.1");
          s.on("error", () => resolve(false));
          s.on("connect", () => {
            s.resetAndDestroy();
            resolve(true);
          });
        }),
      20_000,
    );
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve) => {
        const s = connect(port, "127.0.0.1", () => {
          s.write("GET / HTTP/1.1\r\nHost: x\r\n");
          s.resetAndDestroy();
          resolve();
        });
        s.on("error", () => resolve());
      });
    }
    proxy.release();
    await proc.waitFor(/serving hooks on/, 20_000);
    assert.equal((await send(`http://127.0.0.1:${port}/`, { method: "GET" })).status, 200);
    assert.equal(proc.child.exitCode, null, proc.stderr());
  });
});
