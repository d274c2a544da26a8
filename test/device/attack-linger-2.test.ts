// A second attacker's pass on the early answers' half-closed connections (b219344: sendErrorEarly keeps reading
// the body after a "Connection: close" answer and closes the connection once the body is in). What follows the
// body's end in the same read is parsed by Node as the next request and carried out before the body's "end" event
// closes the connection: a request that the device had refused to take (it said Connection: close) changes the
// device, and its client never hears of it. Before 93c4d3f the connection was closed as soon as the answer was out,
// so nothing sent after it was read. The last test is the same attack when the whole body is in the first packet
// (no early answer at all): that one is Node's own, and fails before 93c4d3f too.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import type { Socket } from "node:net";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { basic } from "./fixtures/http.js";
import { holdsConnection, sendAndRead } from "./fixtures/connections.js";

const USER = ["attuser", "attpass"] as const;
const RIGHT = basic(...USER);

const post = (auth: string, extra: string, body: string): Buffer =>
  Buffer.from(`POST /collections/use HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`);

/** POST /collections/use, announced with a 200-byte body (over the 64-byte limit: 413 on the headers) of which 10 come. */
const head413 = Buffer.from(`POST /collections/use HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${RIGHT}\r\nContent-Length: 200\r\n\r\n${"x".repeat(10)}`);
const rest413 = Buffer.from("x".repeat(190));

describe("requests that follow the body of an early answer's half-closed connection", () => {
  let dir: string;
  let state: string;
  let dev: RunningDevice;

  const current = async (): Promise<string> => {
    const { sock, text } = await sendAndRead(
      dev.port,
      Buffer.from(`GET /collections HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${RIGHT}\r\nConnection: close\r\n\r\n`),
    );
    sock.destroy();
    return /"current":"([^"]*)"/.exec(text)?.[1] ?? `(no answer: ${text})`;
  };
  const use = async (name: string): Promise<void> => {
    const { sock, text } = await sendAndRead(dev.port, post(RIGHT, "Connection: close\r\n", name));
    sock.destroy();
    assert.match(text, /^HTTP\/1\.1 200 /);
  };
  /** Waits until the device has let go of `sock`'s connection; whatever it did with what it read is then done. */
  const released = async (sock: Socket): Promise<void> => {
    const port = sock.localPort!;
    await eventually(async () => !(await holdsConnection(dev, port)), 10_000, 50).catch(() => {
      throw new Error("the device still holds the connection 10 s after its 413");
    });
    sock.destroy();
  };

  before(async () => {
    dir = await tempDir("framefi-attack-linger2-");
    state = await tempDir("framefi-attack-linger2-state-");
    for (const name of ["a", "b"]) {
      await mkdir(join(dir, name));
      await writeFile(join(dir, name, `${name}.jpg`), randomBytes(100));
    }
    dev = await startDevice({ card: join(dir, "a"), state, args: ["--collections", dir, "--web-user", USER[0], "--web-password", USER[1]] });
  });
  after(async () => {
    await dev?.stop();
    for (const d of [dir, state]) await removeDir(d);
  });

  test("a 413 (Connection: close) while the body comes; the body's rest and a request in one write: not carried out", async () => {
    await use("a");
    const { sock, text } = await sendAndRead(dev.port, head413);
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /Connection: close/i);
    sock.write(Buffer.concat([rest413, post(RIGHT, "", "b")]));
    await released(sock);
    assert.equal(await current(), "a", "a request read after the device said Connection: close was carried out, unanswered");
  });

  test("the same in two writes, back to back (an ordinary pipelining client): not carried out", async () => {
    await use("a");
    const { sock, text } = await sendAndRead(dev.port, head413);
    assert.match(text, /^HTTP\/1\.1 413 /);
    sock.write(rest413);
    sock.write(post(RIGHT, "", "b"));
    await released(sock);
    assert.equal(await current(), "a", "a request read after the device said Connection: close was carried out, unanswered");
  });

  test("a request pipelined in the same packet as a 413'd body (the whole body in the first packet): not carried out", async () => {
    await use("a");
    const { sock, text } = await sendAndRead(dev.port, Buffer.concat([post(RIGHT, "", "x".repeat(100)), post(RIGHT, "", "b")]));
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /Connection: close/i);
    await released(sock);
    assert.doesNotMatch(text, /HTTP\/1\.1 200 /, "the pipelined request was answered");
    assert.equal(await current(), "a", "a request pipelined behind one answered with Connection: close was carried out, unanswered");
  });
});
