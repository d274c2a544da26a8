// Control characters in card names (issue 38.12), against bin/framefi-device over real FTP and HTTP: no door
// creates a name with one (FTP STOR, APPE, MKD, RNTO, MFMT → 553; web upload, sub-folders included, and
// PUT ?filename= → 400), and a name that has one on the card already (made by other means) never reaches a listing,
// where a CR or LF would split one entry into two lines.
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { removeDir, tempDir } from "../helpers.js";
import { listTree } from "../fixtures/files.js";
import { curl as httpCurl } from "../fixtures/http.js";
import { curl, PASSWORD, startFtp, USER, type Ftp } from "./fixtures/ftp.js";
import { ftpConnection, logIn, openData, type RawFtp } from "./fixtures/raw.js";

/** Names with a control character: CR, LF (alone: the control connection ends a line at LF), ESC, BEL, TAB, DEL. */
const BAD = ["cr\rname.jpg", "esc\x1b[2Jname.jpg", "bel\x07.jpg", "tab\there.jpg", "del\x7f.jpg"];

describe("control characters in card names", () => {
  let dir: string;
  let card: string;
  let ftp: Ftp;
  let c: RawFtp;

  before(async () => {
    dir = await tempDir("framefi-ftp-control-");
    card = join(dir, "card");
    await mkdir(join(card, "album"), { recursive: true });
    await writeFile(join(card, "ok.jpg"), "ok");
    ftp = await startFtp(card);
    c = await ftpConnection(ftp.port);
    await logIn(c, USER, PASSWORD);
  });
  after(async () => {
    c?.socket.destroy();
    await ftp?.stop();
    await removeDir(dir);
  });

  /** A one-line 553 that names the problem. */
  const refused = (reply: string, what: string): void => assert.match(reply, /^553 .*control character.*$/, `${what} → ${JSON.stringify(reply)}`);

  it("FTP STOR, APPE, MKD, RNTO and MFMT with a control character → 553, nothing made or changed", async () => {
    const before = await listTree(card);
    for (const name of BAD) {
      for (const verb of ["STOR", "APPE"]) {
        const data = await openData(c);
        const reply = await c.command(`${verb} ${name}`);
        data.end("must not land");
        data.destroy();
        refused(reply, `${verb} ${JSON.stringify(name)}`);
      }
      refused(await c.command(`STOR album/${name}`), `STOR album/${JSON.stringify(name)}`);
      refused(await c.command(`MKD ${name}`), `MKD ${JSON.stringify(name)}`);
      refused(await c.command(`MKD ${name}/sub`), `MKD ${JSON.stringify(name)}/sub`);
      assert.match(await c.command("RNFR ok.jpg"), /^350 /);
      refused(await c.command(`RNTO ${name}`), `RNTO ${JSON.stringify(name)}`);
      refused(await c.command(`MFMT 20200101000000 ${name}`), `MFMT ${JSON.stringify(name)}`);
    }
    assert.deepEqual(await listTree(card), before, "the card is unchanged");
    assert.equal(await readFile(join(card, "ok.jpg"), "utf8"), "ok");
  });

  it("web upload (POST multipart, sub-folders too) and PUT ?filename= with a control character → 400 with a one-line message", async () => {
    const before = await listTree(card);
    const src = join(dir, "photo.jpg");
    await writeFile(src, "must not land");
    const refusedHttp = (r: { status: number; body: string }, what: string): void => {
      assert.equal(r.status, 400, `${what} → ${r.status} ${r.body}`);
      const { status, message } = JSON.parse(r.body) as { status: string; message: string };
      assert.equal(status, "error");
      assert.match(message, /^Invalid file name ".*": it contains a control character[^\n\r]*$/, what);
    };
    for (const name of BAD) {
      for (const q of [name, `sub${name}/a.jpg`, `album/${name}`]) {
        const put = await httpCurl(["-X", "PUT", "--data-binary", `@${src}`, `${ftp.device.url}/upload?filename=${encodeURIComponent(q)}`]);
        refusedHttp(put, `PUT ?filename=${JSON.stringify(q)}`);
      }
    }
    // In a part's header busboy takes a TAB as it is (other control characters there make the header malformed),
    // and every control character through the RFC 5987 form of the filename, which it decodes.
    for (const q of ["tab\there.jpg", "sub\t/a.jpg"]) {
      const post = await httpCurl(["-F", `file=@${src};filename=${q}`, `${ftp.device.url}/upload`]);
      refusedHttp(post, `POST filename=${JSON.stringify(q)}`);
    }
    for (const encoded of ["a%0Ab.jpg", "a%0D%0Ab.jpg", "esc%1B%5B2J.jpg", "bel%07.jpg", "del%7F.jpg", "sub%0A%2Fa.jpg", "sub%2Fdir%1B%2Fa.jpg"]) {
      const boundary = "ctl-boundary";
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''${encoded}\r\n\r\nmust not land\r\n--${boundary}--\r\n`;
      const post = await httpCurl(["-H", `Content-Type: multipart/form-data; boundary=${boundary}`, "--data-binary", body, `${ftp.device.url}/upload`]);
      refusedHttp(post, `POST filename*=${encoded}`);
    }
    assert.deepEqual(await listTree(card), before, "the card is unchanged");
  });

  it("names with a control character already on the card are left out of MLSD, NLST and LIST, and cannot be reached", async () => {
    await mkdir(join(card, "shelf"));
    const planted = ["two\r\nlines.jpg", "lf\nonly.jpg", "esc\x1b]0;PWNED\x07.jpg", "dir\nname"];
    for (const name of planted) {
      if (name.startsWith("dir")) await mkdir(join(card, "shelf", name));
      else await writeFile(join(card, "shelf", name), "planted");
    }
    await writeFile(join(card, "shelf", "fine.jpg"), "fine");
    const listing = async (command: string): Promise<string[]> => {
      const data = await openData(c);
      const chunks: Buffer[] = [];
      data.on("data", (d: Buffer) => chunks.push(d));
      const ended = new Promise((resolve) => data.once("close", resolve));
      const replies = c.next((t) => /^(226|[45]\d\d) /m.test(t));
      c.socket.write(`${command}\r\n`);
      assert.match(await replies, /^150 .*\r\n226 /s);
      await ended;
      return Buffer.concat(chunks).toString("utf8").split("\r\n").slice(0, -1);
    };
    assert.deepEqual(await listing("NLST shelf"), ["fine.jpg"]);
    const mlsd = await listing("MLSD shelf");
    assert.equal(mlsd.length, 1, JSON.stringify(mlsd));
    assert.match(mlsd[0]!, /^type=file;size=4;modify=\d{14};perm=adfrw; fine\.jpg$/);
    const list = await listing("LIST shelf");
    assert.equal(list.length, 1, JSON.stringify(list));
    assert.match(list[0]!, /^-rw-r--r-- .* fine\.jpg$/);
    // curl's NLST sees the same (curl -l).
    const names = await curl(["-l", `${ftp.url}/shelf/`]);
    assert.equal(names.code, 0, names.stderr);
    assert.deepEqual(names.stdout.split(/\r?\n/).filter(Boolean), ["fine.jpg"]);
    for (const line of ["RETR shelf/esc\x1b]0;PWNED\x07.jpg", "SIZE shelf/esc\x1b]0;PWNED\x07.jpg", "CWD shelf/dir\rx"]) {
      refused(await c.command(line), JSON.stringify(line));
    }
  });
});
