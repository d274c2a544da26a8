// An upload's data that reaches bin/framefi-device before its STOR, as a pipelining client sends it: the device
// reads data connections into one buffer, and keeps what came before a transfer for that transfer.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import type { Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { removeDir, tempDir } from "../helpers.js";
import { PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection, logIn, openData, type RawFtp } from "./fixtures/raw.js";

/** A logged-in binary session and a data connection opened through EPSV. */
async function session(ftp: Ftp): Promise<{ raw: RawFtp; data: Socket }> {
  const raw = await ftpConnection(ftp.port);
  await logIn(raw, USER, PASSWORD);
  return { raw, data: await openData(raw) };
}

/**
 * Sends `bytes` and closes the data connection, then lets two commands pass: the device has read what it takes ahead
 * by then (on loopback the data went first). Resolves with a promise of the bytes all given to the kernel.
 */
async function sendFirst(raw: RawFtp, data: Socket, bytes: Buffer): Promise<{ sent: Promise<void> }> {
  const sent = new Promise<void>((resolve) => data.end(bytes, resolve));
  for (let i = 0; i < 2; i++) assert.match(await raw.command("NOOP"), /^200/);
  return { sent };
}

/** STOR's replies: the opening one and the final one. */
async function stor(raw: RawFtp, name: string): Promise<string[]> {
  const replies = raw.next((t) => t.split("\r\n").some((line) => /^[2-5]\d\d /.test(line)));
  raw.socket.write(`STOR ${name}\r\n`);
  return (await replies).trim().split("\r\n");
}

describe("FTP upload data sent before STOR", () => {
  let dir: string;
  let card: string;
  let ftp: Ftp;

  before(async () => {
    dir = await tempDir("framefi-ftp-early-");
    card = join(dir, "card");
    await mkdir(card);
    ftp = await startFtp(card);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  for (const [what, size] of [
    ["a small file", 10_000],
    ["a file larger than what is read ahead (one read, at most 256 KiB)", 3_000_000],
  ] as const) {
    it(`${what}, sent whole and its data connection closed before STOR, is stored whole`, async () => {
      const { raw, data } = await session(ftp);
      const bytes = randomBytes(size);
      const { sent } = await sendFirst(raw, data, bytes);
      assert.deepEqual(await stor(raw, `early-${size}.jpg`), ["150 Opening data connection.", "226 Transfer complete."]);
      await sent;
      assert.ok((await readFile(join(card, `early-${size}.jpg`))).equals(bytes));
      raw.socket.destroy();
    });
  }

  it("a data connection closed with nothing sent before STOR: 425, and nothing stored", async () => {
    const { raw, data } = await session(ftp);
    await sendFirst(raw, data, Buffer.alloc(0));
    assert.deepEqual(await stor(raw, "never.jpg"), ["425 The data connection was closed; send PASV, EPSV or PORT again."]);
    await assert.rejects(readFile(join(card, "never.jpg")), { code: "ENOENT" });
    raw.socket.destroy();
  });
});
