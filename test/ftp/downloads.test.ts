// Downloads (RETR) on bin/framefi-device over real sockets: a client that hangs up the moment its file has arrived
// (a killed client, or one that knew the size) must not leave its session behind: sessions per address are
// limited, and switching to MSC mode waits for every session to close.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection } from "./fixtures/raw.js";

const SESSIONS = 40;

describe("FTP downloads", () => {
  let dir: string;
  let ftp: Ftp;
  const file = randomBytes(20_000);
  before(async () => {
    dir = await tempDir();
    const card = join(dir, "card");
    await mkdir(card);
    await writeFile(join(card, "small.jpg"), file);
    ftp = await startFtp(card);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  it(`${SESSIONS} clients that hang up as soon as their file has arrived all get their session closed; MSC mode then comes at once`, async () => {
    const closedBefore = (ftp.device.program.stdout().match(/: closed/g) ?? []).length;
    for (let i = 0; i < SESSIONS; i++) {
      const raw = await ftpConnection(ftp.port);
      assert.match(await raw.command(`USER ${USER}`), /^331/);
      assert.match(await raw.command(`PASS ${PASSWORD}`), /^230/, `session ${i} is let in`);
      assert.match(await raw.command("TYPE I"), /^200/);
      const port = Number(/\|\|\|(\d+)\|/.exec(await raw.command("EPSV"))?.[1]);
      const data = connect(port, "127.0.0.1");
      data.on("error", () => undefined);
      await new Promise((resolve) => data.once("connect", resolve));
      let got = Buffer.alloc(0);
      const arrived = new Promise<void>((resolve) =>
        data.on("data", (d: Buffer) => {
          got = Buffer.concat([got, d]);
          if (got.length >= file.length) resolve();
        }),
      );
      raw.socket.write("RETR small.jpg\r\n");
      await arrived;
      assert.ok(got.equals(file), `session ${i} got the file`);
      raw.socket.destroy();
      data.destroy();
    }
    await eventually(() => (ftp.device.program.stdout().match(/: closed/g) ?? []).length - closedBefore >= SESSIONS, 15_000);
    await ftp.enterMsc();
  });
});
