// FTP block mode (RFC 959 MODE B) on bin/framefi-device, spoken byte for byte over real sockets: several files
// over one data connection, each ended by its EOF block; an upload that never ends keeps nothing; and
// --ftp-stream-only refuses block mode with the firmware's own words.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile } from "node:fs/promises";
import type { Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { PASSWORD, startFtp, usage, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection, logIn, openData, type RawFtp } from "./fixtures/raw.js";

const EOF = 64;
const RESTART = 16;

function block(descriptor: number, data: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.concat([Buffer.from([descriptor, data.length >> 8, data.length & 0xff]), data]);
}

/** `data` as blocks of at most `size` bytes, then the EOF block. */
function blocks(data: Buffer, size = 0xffff): Buffer {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) out.push(block(0, data.subarray(at, at + size)));
  return Buffer.concat([...out, block(EOF)]);
}

/** A logged-in session in binary block mode with its data connection open. */
async function blockSession(ftp: Ftp): Promise<{ raw: RawFtp; data: Socket; received: () => Buffer }> {
  const raw = await ftpConnection(ftp.port);
  await logIn(raw, USER, PASSWORD);
  assert.equal(await raw.command("MODE B"), "200 Mode set to B.");
  const data = await openData(raw);
  let got = Buffer.alloc(0);
  data.on("data", (d: Buffer) => (got = Buffer.concat([got, d])));
  return { raw, data, received: () => got };
}

/** Sends STOR, then `bytes` once the server opened the transfer; resolves with the final reply. */
async function store(raw: RawFtp, data: Socket, name: string, bytes: Buffer | Buffer[]): Promise<string> {
  // heard from the start: a file whose bytes came early is complete as soon as it opens, its 226 right behind the 150
  const isFinal = (line: string): boolean => /^[2-5]\d\d /.test(line);
  const final = raw.next((t) => t.split("\r\n").some(isFinal));
  final.catch(() => undefined);
  const opened = await raw.command(`STOR ${name}`);
  if (!opened.startsWith("150")) return opened;
  for (const piece of Array.isArray(bytes) ? bytes : [bytes]) data.write(piece);
  return (await final).split("\r\n").find(isFinal)!;
}

/** The file content of a block-mode download in `stream`, once its EOF block is complete; undefined before. */
function unblock(stream: Buffer): Buffer | undefined {
  const out: Buffer[] = [];
  for (let at = 0; at + 3 <= stream.length; ) {
    const [descriptor, length] = [stream[at]!, stream.readUInt16BE(at + 1)];
    if (at + 3 + length > stream.length) return undefined;
    out.push(stream.subarray(at + 3, at + 3 + length));
    at += 3 + length;
    if (descriptor & EOF) return Buffer.concat(out);
  }
  return undefined;
}

describe("FTP block mode (MODE B)", () => {
  let dir: string;
  let card: string;
  let ftp: Ftp;

  before(async () => {
    dir = await tempDir("framefi-ftp-blocks-");
    card = join(dir, "card");
    await mkdir(card);
    ftp = await startFtp(card, ["--card-size", String(64 * 1024 ** 2)]);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("carries several files over one data connection, each ended by its EOF block, and downloads and listings too", async () => {
    const { raw, data, received } = await blockSession(ftp);
    const big = randomBytes(300_000);
    // Blocks of every size up to the largest, a restart marker (not file data) and a header cut in three writes.
    assert.equal(
      await store(raw, data, "big.jpg", [
        blocks(big.subarray(0, 200_000)).subarray(0, -3),
        block(RESTART, Buffer.from("r1")),
        blocks(big.subarray(200_000), 777),
      ]),
      "226 Transfer complete.",
    );
    assert.equal(await store(raw, data, "empty.txt", block(EOF)), "226 Transfer complete.");
    const small = blocks(Buffer.from("small file"));
    assert.equal(await store(raw, data, "small.txt", [small.subarray(0, 1), small.subarray(1, 2), small.subarray(2)]), "226 Transfer complete.");
    assert.ok((await readFile(join(card, "big.jpg"))).equals(big));
    assert.equal(await readFile(join(card, "empty.txt"), "utf8"), "");
    assert.equal(await readFile(join(card, "small.txt"), "utf8"), "small file");
    const { used_size, file_count } = await usage(card);
    assert.deepEqual(await ftp.figures(), { total_size: 64 * 1024 ** 2, used_size, free_size: 64 * 1024 ** 2 - used_size, file_count });

    assert.match(await raw.command("MFMT 20200102030405 small.txt"), /^213 /);
    assert.match(await raw.command("RETR big.jpg"), /^150/);
    await eventually(() => unblock(received()) !== undefined);
    assert.ok(unblock(received())!.equals(big), "the download arrives as blocks ending with EOF");
    const afterRetr = received().length;
    assert.match(await raw.command("NLST"), /^150/);
    await eventually(() => unblock(received().subarray(afterRetr)) !== undefined);
    assert.deepEqual(unblock(received().subarray(afterRetr))!.toString().split("\r\n").filter(Boolean).sort(), ["big.jpg", "empty.txt", "small.txt"]);
    assert.ok(!data.destroyed, "the data connection stays open between transfers");
    assert.match(await raw.command("REST 10"), /^504 REST is supported in stream mode only/);
    assert.equal(await raw.command("MODE S"), "200 Mode set to S.");
    await eventually(() => data.destroyed || data.readableEnded, 5_000);
    raw.socket.destroy();
  });

  it("files whose blocks all came in one write before their STORs: each lands whole, the next file's bytes kept for it", async () => {
    const { raw, data } = await blockSession(ftp);
    const [first, second] = [randomBytes(100_000), randomBytes(70_000)];
    data.write(Buffer.concat([blocks(first), blocks(second, 1000)]));
    assert.match(await raw.command("NOOP"), /^200/); // by now the device has read them: the data went first on loopback
    assert.equal(await store(raw, data, "first.jpg", []), "226 Transfer complete.");
    assert.equal(await store(raw, data, "second.jpg", []), "226 Transfer complete.");
    assert.ok((await readFile(join(card, "first.jpg"))).equals(first));
    assert.ok((await readFile(join(card, "second.jpg"))).equals(second));
    raw.socket.destroy();
  });

  it("a refused STOR drops the data connection: blocks sent ahead for it never become the next file's", async () => {
    await mkdir(join(card, "a-folder"));
    const { raw, data } = await blockSession(ftp);
    const closed = new Promise((resolve) => data.once("close", resolve));
    data.write(blocks(randomBytes(5_000)));
    assert.equal(await store(raw, data, "a-folder", []), "550 That name is a folder.");
    await closed;
    assert.match(await raw.command("STOR next.jpg"), /^425 /);
    await assert.rejects(readFile(join(card, "next.jpg")), { code: "ENOENT" });
    raw.socket.destroy();
  });

  it("keeps nothing of an upload whose EOF block never came, or whose blocks are malformed", async () => {
    const { raw, data } = await blockSession(ftp);
    const opened = await raw.command("STOR cut.jpg");
    assert.match(opened, /^150/);
    const final = raw.next((t) => /^\d{3} /m.test(t));
    data.write(block(0, randomBytes(50_000)));
    data.end();
    assert.match(await final, /^426 The data connection ended before the file's EOF block/);
    assert.match(await raw.command("STOR next.jpg"), /^425 /, "a failed transfer closes the data connection");
    raw.socket.destroy();

    const second = await blockSession(ftp);
    assert.match(await store(second.raw, second.data, "bad.jpg", Buffer.from([1, 0, 2, 65, 66])), /^426 Malformed block-mode data: descriptor 1/);
    second.raw.socket.destroy();
    await eventually(async () => !(await readdir(card)).some((n) => n.startsWith(".framefi-upload-")));
    assert.deepEqual(
      (await readdir(card)).filter((n) => n === "cut.jpg" || n === "bad.jpg"),
      [],
    );
  });

  it("a card too full: 552 once the file's blocks are in, and nothing is kept", async () => {
    const { raw, data } = await blockSession(ftp);
    const reply = await store(raw, data, "huge.bin", blocks(Buffer.alloc(70 * 1024 ** 2)));
    assert.match(reply, /^552 /);
    raw.socket.destroy();
    await eventually(async () => !(await readdir(card)).some((n) => n.startsWith(".framefi-upload-")));
    assert.ok(!(await readdir(card)).includes("huge.bin"));
  });
});

describe("--ftp-stream-only", () => {
  it("refuses MODE B with the firmware's reply; stream mode works as before", async () => {
    const dir = await tempDir("framefi-ftp-stream-");
    const ftp = await startFtp(dir, ["--ftp-stream-only"]);
    try {
      const raw = await ftpConnection(ftp.port);
      await raw.command(`USER ${USER}`);
      await raw.command(`PASS ${PASSWORD}`);
      assert.equal(await raw.command("MODE B"), "504 Only S(tream) is supported");
      assert.equal(await raw.command("MODE S"), "200 Mode set to S.");
      raw.socket.destroy();
    } finally {
      await ftp.stop();
      await removeDir(dir);
    }
  });
});
