// SITE FREE: the firmware's FTP server's words (test/device/fixtures/contract.ts) with the card's figures, over a
// real control connection and through lftp.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { removeDir, tempDir } from "../helpers.js";
import { SITE } from "../device/fixtures/contract.js";
import { lftp, PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection, type RawFtp } from "./fixtures/raw.js";

/** Logs in on a raw control connection. */
async function loggedIn(ftp: Ftp): Promise<RawFtp> {
  const c = await ftpConnection(ftp.port);
  assert.match(await c.command(`USER ${USER}`), /^331 /);
  assert.match(await c.command(`PASS ${PASSWORD}`), /^230 /);
  return c;
}

/** The bytes of the reply to `line` (continuation lines included). */
async function replyBytes(c: RawFtp, line: string): Promise<string> {
  const reply = c.next((t) => /^\d{3} .*\r\n/m.test(t));
  c.socket.write(line + "\r\n");
  return reply;
}

describe("SITE FREE", () => {
  let dir = "";
  before(async () => {
    dir = await tempDir("framefi-ftp-site-");
  });
  after(async () => removeDir(dir));

  it("a card under 1 000 MB answers in kB (1 024 bytes, rounded down), and the figure follows an upload", async () => {
    const card = join(dir, "small");
    await mkdir(card);
    await writeFile(join(card, "kept.jpg"), Buffer.alloc(300_000));
    const ftp = await startFtp(card, ["--card-size", "1000000"]);
    try {
      const c = await loggedIn(ftp);
      // 1 000 000 bytes = 976 kB; 700 000 free = 683 kB.
      assert.equal(await replyBytes(c, "SITE FREE"), SITE.freeKb(683, 976));
      await writeFile(join(dir, "new.jpg"), Buffer.alloc(200_000));
      const r = await lftp(ftp, `put ${join(dir, "new.jpg")} -o new.jpg; quote SITE FREE`);
      assert.equal(r.code, 0, r.stderr);
      // 500 000 free = 488 kB.
      assert.match(r.stdout, /^200 488 kB free of 976 kB capacity$/m);
      c.socket.end("QUIT\r\n");
    } finally {
      await ftp.stop();
    }
  });

  it("a card of 1 000 MB or more answers in MB; FEAT and HELP list it; other SITE commands get 500 with the parameter", async () => {
    const card = join(dir, "big");
    await mkdir(card);
    await writeFile(join(card, "kept.jpg"), Buffer.alloc(3 * 1024 * 1024));
    const ftp = await startFtp(card, ["--card-size", "8GiB"]);
    try {
      const c = await loggedIn(ftp);
      assert.equal(await replyBytes(c, "SITE FREE"), SITE.freeMb(8189, 8192));
      assert.equal(await replyBytes(c, "SITE  FREE"), SITE.freeMb(8189, 8192), "spaces before the parameter are skipped, as on the firmware");
      assert.equal(await replyBytes(c, "SITE free"), SITE.unknown("free"), "the parameter is compared exactly, as on the firmware");
      assert.equal(await replyBytes(c, "SITE CHMOD 644 a.jpg"), SITE.unknown("CHMOD 644 a.jpg"));
      assert.equal(await replyBytes(c, "SITE"), SITE.unknown(""));
      assert.ok((await replyBytes(c, "FEAT")).includes(SITE.feature));
      assert.match(await replyBytes(c, "HELP"), /^214 .*\bSITE FREE\b/);
      c.socket.end("QUIT\r\n");
    } finally {
      await ftp.stop();
    }
  });

  it("needs a login", async () => {
    const card = join(dir, "login");
    await mkdir(card);
    const ftp = await startFtp(card);
    try {
      const c = await ftpConnection(ftp.port);
      assert.match(await c.command("SITE FREE"), /^530 /);
      c.socket.end("QUIT\r\n");
    } finally {
      await ftp.stop();
    }
  });
});
