// Attacks on the device's FTP verbs and web upload (after the card took over every file-system change), against the
// real bin/framefi-device over raw FTP and HTTP. Each test here failed when written; see the commit message.
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { removeDir, tempDir } from "../helpers.js";
import { walk } from "../fixtures/files.js";
import { curl as httpCurl, multipart } from "../fixtures/http.js";
import { isPartial, PASSWORD, startFtp, usage, USER, type Ftp } from "../ftp/fixtures/ftp.js";
import { ftpConnection, logIn, openData, type RawFtp } from "../ftp/fixtures/raw.js";

/** Sends raw bytes as one command line and resolves with its final reply line. */
async function rawCommand(c: RawFtp, line: Buffer): Promise<string> {
  const reply = c.next((t) => /(^|\r\n)\d{3} [^\r\n]*\r\n/.test(t));
  c.socket.write(Buffer.concat([line, Buffer.from("\r\n")]));
  return (await reply).split("\r\n").find((l) => /^\d{3} /.test(l)) ?? "";
}

/** Stores `content` under the raw name bytes `name`; resolves with the transfer's final reply. */
async function storRaw(c: RawFtp, name: Buffer, content: string): Promise<string> {
  const data = await openData(c);
  const first = await rawCommand(c, Buffer.concat([Buffer.from("STOR "), name]));
  if (!first.startsWith("150")) {
    data.destroy();
    return first;
  }
  const done = c.next((t) => /(^|\r\n)[2-5]\d\d [^\r\n]*\r\n/.test(t));
  data.end(content);
  return (await done).split("\r\n").find((l) => /^\d{3} /.test(l)) ?? "";
}

describe("attack: FTP verbs and web upload names", () => {
  let dir: string;
  let card: string;
  let ftp: Ftp;

  before(async () => {
    dir = await tempDir("framefi-attack-ftp-verbs-");
    card = join(dir, "card");
    await mkdir(card, { recursive: true });
    ftp = await startFtp(card, ["--card-size", "100MB"]);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it("a folder renamed by another session while a file uploads into it leaves no partial file and makes no folder", async () => {
    const a = await ftpConnection(ftp.port);
    const b = await ftpConnection(ftp.port);
    try {
      await logIn(a, USER, PASSWORD);
      await logIn(b, USER, PASSWORD);
      assert.match(await a.command("MKD album"), /^257 /);
      const data = await openData(a);
      assert.match(await a.command("STOR album/photo.jpg"), /^150 /);
      data.write(Buffer.alloc(100_000, 0x61));
      await sleep(300);
      assert.match(await b.command("RNFR album"), /^350 /);
      assert.match(await b.command("RNTO album2"), /^250 /);
      const finalReply = a.next((t) => /(^|\r\n)[2-5]\d\d [^\r\n]*\r\n/.test(t));
      data.end(Buffer.alloc(1_000, 0x62));
      await finalReply;
      await a.command("QUIT");
      await b.command("QUIT");
      await sleep(500);
      const entries = await walk(card);
      const partials = entries.filter((e) => isPartial(e.path));
      assert.deepEqual(partials, [], `partial temp files left on the card: ${JSON.stringify(partials)}`);
      // The failed upload must not bring back the folder the other session renamed away.
      assert.ok(!entries.some((e) => e.path === "album"), `a folder "album" was made by a failed upload: ${JSON.stringify(entries)}`);
      // And the figures count what is on the card.
      const figures = await ftp.figures();
      const real = await usage(card);
      assert.deepEqual({ used_size: figures.used_size, file_count: figures.file_count }, real, "GET / sd_card against the folder");
    } finally {
      a.socket.destroy();
      b.socket.destroy();
    }
  });

  it("the partial file of such an upload is not left for the frame in MSC mode either", async () => {
    // Same race, then a switch to MSC mode: the USB host (the frame) must not find a temp file on its card.
    const a = await ftpConnection(ftp.port);
    const b = await ftpConnection(ftp.port);
    try {
      await logIn(a, USER, PASSWORD);
      await logIn(b, USER, PASSWORD);
      assert.match(await a.command("MKD trip"), /^257 /);
      const data = await openData(a);
      assert.match(await a.command("STOR trip/x.jpg"), /^150 /);
      data.write(Buffer.alloc(50_000, 0x61));
      await sleep(300);
      await b.command("RNFR trip");
      assert.match(await b.command("RNTO trip-moved"), /^250 /);
      const finalReply = a.next((t) => /(^|\r\n)[2-5]\d\d [^\r\n]*\r\n/.test(t));
      data.end();
      await finalReply;
    } finally {
      a.socket.destroy();
      b.socket.destroy();
    }
    await ftp.enterMsc();
    try {
      const partials = (await readdir(card, { recursive: true })).filter((p) => p.startsWith("trip") && isPartial(p));
      assert.deepEqual(partials, [], "temp files on the card the frame now reads");
    } finally {
      await ftp.enterFtp();
    }
  });

  it("two FTP names that differ only in bytes that are not UTF-8 are not stored under one name (the first is not lost)", async () => {
    const c = await ftpConnection(ftp.port);
    try {
      await logIn(c, USER, PASSWORD);
      // A Latin-1 client: "café.jpg" and "cafè.jpg" as single bytes 0xE9 and 0xE8.
      const first = await storRaw(c, Buffer.from("636166e92e6a7067", "hex"), "first photo");
      const second = await storRaw(c, Buffer.from("636166e82e6a7067", "hex"), "second photo");
      const names = (await readdir(card)).filter((n) => n.startsWith("caf"));
      // Either both names are refused (a clear 553: not UTF-8) or both files are kept.
      const bothRefused = /^5\d\d /.test(first) && /^5\d\d /.test(second);
      assert.ok(
        bothRefused || names.length === 2,
        `STOR 0xE9 → ${JSON.stringify(first)}, STOR 0xE8 → ${JSON.stringify(second)}; card holds ${JSON.stringify(names)}: the first upload was overwritten`,
      );
    } finally {
      c.socket.destroy();
    }
  });

  it("two PUT ?filename= names that differ only in bytes that are not UTF-8 are not stored under one name", async () => {
    const src = join(dir, "body.jpg");
    await writeFile(src, "one");
    const first = await httpCurl(["-X", "PUT", "--data-binary", `@${src}`, `${ftp.device.url}/upload?filename=photo%E9.jpg`]);
    await writeFile(src, "two");
    const second = await httpCurl(["-X", "PUT", "--data-binary", `@${src}`, `${ftp.device.url}/upload?filename=photo%E8.jpg`]);
    const names = (await readdir(card)).filter((n) => n.startsWith("photo"));
    const bothRefused = first.status === 400 && second.status === 400;
    assert.ok(
      bothRefused || names.length === 2,
      `PUT %E9 → ${first.status} ${first.body}; PUT %E8 → ${second.status} ${second.body}; card holds ${JSON.stringify(names)} (${names.length ? (await stat(join(card, names[0]!))).size : 0} bytes): the first upload was overwritten`,
    );
  });
  it("a multi-file web upload whose second file goes below the first (a.jpg, a.jpg/b.jpg) is refused cleanly and leaves nothing", async () => {
    const before = await walk(card);
    const { body, contentType } = multipart([
      { name: "file", filename: "nest/a.jpg", value: "first" },
      { name: "file", filename: "nest/a.jpg/b.jpg", value: "second" },
    ]);
    const res = await fetch(`${ftp.device.url}/upload`, {
      method: "POST",
      body: new Uint8Array(body),
      headers: { "content-type": contentType },
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    // A bad upload is the client's mistake (4xx) with a one-line message that shows no path of the device's machine.
    assert.ok(res.status >= 400 && res.status < 500, `answered ${res.status}: ${text}`);
    assert.ok(!text.includes(card) && !/\.framefi-upload-/.test(text), `the answer shows the device's own paths: ${text}`);
    // All land or none does: no folder "nest" or "nest/a.jpg" is left behind.
    assert.deepEqual(await walk(card), before, "the card changed although the upload was refused");
  });
  it("one multipart upload with more files than the device may hold open (its open-file limit + 500 one-byte files) gets a clear 4xx, not a 500 EMFILE", async () => {
    const pid = ftp.device.program.child.pid!;
    const limit = Number(/^Max open files\s+(\d+)/m.exec(await readFile(`/proc/${pid}/limits`, "utf8"))?.[1]);
    assert.ok(limit > 0 && limit < 200_000, `the device's open-file limit (${limit}) is too high for this test`);
    const count = limit + 500;
    const boundary = "----attack-many-files";
    const pieces: string[] = [];
    for (let i = 0; i < count; i++) pieces.push(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="many/f${i}.jpg"\r\n\r\nx\r\n`);
    pieces.push(`--${boundary}--\r\n`);
    const res = await fetch(`${ftp.device.url}/upload`, {
      method: "POST",
      body: pieces.join(""),
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    // 200 (all stored) or a refusal that names the problem; never the device's own failure with its paths.
    assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `${count} files in one request → ${res.status}: ${text}`);
    assert.doesNotMatch(text, /EMFILE|\.framefi-upload-/, "the answer shows the device's own failure and paths");
  });
});
