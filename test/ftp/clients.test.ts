// Real lftp and curl against bin/framefi-device in FTP mode: mirror up and down, uploads, downloads, listings,
// file commands; the card figures of GET / follow every FTP write at once.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, removeDir, run, start, tempDir } from "../helpers.js";
import { curl, hasPartial, lftp, sameTree, startFtp, usage, type Ftp } from "./fixtures/ftp.js";
import { listTree } from "../fixtures/files.js";

const CARD_SIZE = 1024 ** 3;

describe("FTP mode with real clients", () => {
  let dir: string;
  let card: string;
  let ftp: Ftp;

  before(async () => {
    dir = await tempDir("framefi-ftp-");
    card = join(dir, "card");
    await mkdir(card);
    ftp = await startFtp(card, ["--card-size", String(CARD_SIZE)]);
  });
  after(async () => {
    await ftp?.stop();
    await removeDir(dir);
  });

  /** GET /'s card figures match the card folder right after an FTP client is done: no waiting. */
  async function assertFigures(): Promise<void> {
    const { used_size, file_count } = await usage(card);
    assert.deepEqual(await ftp.figures(), { total_size: CARD_SIZE, used_size, free_size: CARD_SIZE - used_size, file_count });
  }

  it("lftp mirror -R (the firmware's sync) uploads a tree, mirror downloads it byte for byte, --delete removes", async () => {
    const src = join(dir, "photos");
    await mkdir(join(src, "2024/summer"), { recursive: true });
    await mkdir(join(src, "empty"));
    await writeFile(join(src, "cover.jpg"), randomBytes(300_000));
    await writeFile(join(src, "2024/a.jpg"), randomBytes(1_200_000));
    await writeFile(join(src, "2024/summer/beach photo é.jpg"), randomBytes(70_000));
    await writeFile(join(src, "2024/summer/zero.txt"), "");
    const sync = "mirror -R --delete --only-missing --no-perms --parallel=1 photos /frame";
    const up = await lftp(ftp, sync, { cwd: dir });
    assert.equal(up.code, 0, up.stderr);
    assert.ok(await sameTree(src, join(card, "frame")), "card matches the source folder");
    await assertFigures();

    const down = await lftp(ftp, "mirror /frame back", { cwd: dir });
    assert.equal(down.code, 0, down.stderr);
    assert.ok(await sameTree(src, join(dir, "back")), "downloaded tree matches byte for byte");

    await rm(join(src, "2024/a.jpg"));
    await rm(join(src, "empty"), { recursive: true });
    await writeFile(join(src, "new.jpg"), randomBytes(5_000));
    const again = await lftp(ftp, sync, { cwd: dir });
    assert.equal(again.code, 0, again.stderr);
    assert.ok(await sameTree(src, join(card, "frame")), "deleted and added files are mirrored");
    assert.equal(hasPartial(await listTree(card)), false);
    await assertFigures();
  });

  it("lftp keeps the source's modification times (MFMT) so later syncs can compare them", async () => {
    const src = join(dir, "timed");
    await mkdir(src);
    await writeFile(join(src, "old.jpg"), "x");
    const when = new Date("2021-03-04T05:06:07Z");
    await utimes(join(src, "old.jpg"), when, when);
    const r = await lftp(ftp, "mirror -R --no-perms timed /timed", { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await stat(join(card, "timed/old.jpg"))).mtime.toISOString(), when.toISOString());
    const mdtm = await lftp(ftp, "quote MDTM /timed/old.jpg");
    assert.match(mdtm.stdout, /^213 20210304050607/m);
  });

  it("curl -T --ftp-create-dirs uploads into new folders; curl downloads it back", async () => {
    const file = join(dir, "upload.bin");
    const bytes = randomBytes(2_000_000);
    await writeFile(file, bytes);
    const up = await curl(["-T", file, `${ftp.url}/curl/deep/`, "--ftp-create-dirs"]);
    assert.equal(up.code, 0, up.stderr);
    assert.ok((await readFile(join(card, "curl/deep/upload.bin"))).equals(bytes));
    const down = await curl(["-o", join(dir, "downloaded.bin"), `${ftp.url}/curl/deep/upload.bin`]);
    assert.equal(down.code, 0, down.stderr);
    assert.ok((await readFile(join(dir, "downloaded.bin"))).equals(bytes));
    await assertFigures();
  });

  it("overwriting a file is atomic: readers see the old bytes until the new upload is complete", async () => {
    await writeFile(join(card, "frame.jpg"), "old picture");
    const next = randomBytes(1_500_000);
    await writeFile(join(dir, "next.jpg"), next);
    const upload = start("curl", ["-sS", "--limit-rate", "1M", "-T", join(dir, "next.jpg"), `${ftp.url}/frame.jpg`]);
    await eventually(async () => hasPartial(await listTree(card)), 15_000);
    const during = await curl([`${ftp.url}/frame.jpg`]);
    assert.equal(during.stdout, "old picture");
    assert.equal(await upload.exited, 0, upload.stderr());
    assert.ok((await readFile(join(card, "frame.jpg"))).equals(next));
  });

  it("lists folders: LIST in ls -l form (curl), NLST (curl -l), MLSD (lftp cls), MLST, SIZE", async () => {
    await mkdir(join(card, "list/sub"), { recursive: true });
    await writeFile(join(card, "list/one.jpg"), "12345");
    await writeFile(join(card, "list/.hidden"), "h");
    const list = await curl([`${ftp.url}/list/`]);
    assert.equal(list.code, 0, list.stderr);
    const lines = list.stdout.trim().split(/\r?\n/);
    assert.equal(lines.length, 3);
    assert.match(lines.find((l) => l.endsWith(" one.jpg"))!, /^-rw-r--r-- +1 ftp +ftp +5 [A-Z][a-z]{2} [ \d]\d \d\d:\d\d one\.jpg$/);
    assert.match(lines.find((l) => l.endsWith(" sub"))!, /^drwxr-xr-x /);

    const nlst = await curl(["-l", `${ftp.url}/list/`]);
    assert.deepEqual(nlst.stdout.trim().split(/\r?\n/).sort(), [".hidden", "one.jpg", "sub"]);

    const cls = await lftp(ftp, "cd /list; cls -1 --sort=name");
    assert.deepEqual(cls.stdout.trim().split("\n"), [".hidden", "one.jpg", "sub/"]);

    const facts = await lftp(ftp, "quote MLST /list/one.jpg; quote SIZE /list/one.jpg; quote PWD");
    assert.match(facts.stdout, /type=file;size=5;modify=\d{14};perm=adfrw; \/list\/one\.jpg/);
    assert.match(facts.stdout, /^213 5$/m);
    assert.match(facts.stdout, /^257 "\/" is the current folder\.$/m);
  });

  it("REST resumes a download (curl -C -) and APPE resumes an upload", async () => {
    const bytes = randomBytes(3_000_000);
    await writeFile(join(card, "resume.bin"), bytes);
    const local = join(dir, "resume.bin");
    await writeFile(local, bytes.subarray(0, 1_234_567));
    const down = await curl(["-C", "-", "-o", local, `${ftp.url}/resume.bin`]);
    assert.equal(down.code, 0, down.stderr);
    assert.ok((await readFile(local)).equals(bytes), "resumed download is complete and exact");

    await writeFile(join(card, "half.bin"), bytes.subarray(0, 1_000_000));
    const up = await curl(["-C", "-", "-T", local, `${ftp.url}/half.bin`]);
    assert.equal(up.code, 0, up.stderr);
    assert.ok((await readFile(join(card, "half.bin"))).equals(bytes), "resumed upload is complete and exact");
  });

  it("a ranged download (REST, then ABOR once the range is read) and active mode (EPRT and PORT) both ways", async () => {
    const bytes = randomBytes(4_000_000);
    await writeFile(join(card, "ranged.bin"), bytes);
    const ranged = await run("sh", ["-c", `curl -sS -r 1000000-1000999 ${ftp.url}/ranged.bin | od -An -tx1 -v | tr -d ' \\n'`]);
    assert.equal(ranged.code, 0, ranged.stderr);
    assert.equal(ranged.stdout, bytes.subarray(1_000_000, 1_001_000).toString("hex"));
    const after = await curl(["-o", join(dir, "after-abor.bin"), `${ftp.url}/ranged.bin`]);
    assert.equal(after.code, 0, "the server is fine after ABOR");

    for (const flags of [
      ["-P", "127.0.0.1"],
      ["-P", "127.0.0.1", "--disable-eprt"],
    ]) {
      const r = await curl([...flags, "-o", join(dir, "active.bin"), `${ftp.url}/ranged.bin`]);
      assert.equal(r.code, 0, `${flags.join(" ")}: ${r.stderr}`);
      assert.ok((await readFile(join(dir, "active.bin"))).equals(bytes), flags.join(" "));
      const up = await curl([...flags, "-T", join(dir, "active.bin"), `${ftp.url}/active-up.bin`]);
      assert.equal(up.code, 0, `upload ${flags.join(" ")}: ${up.stderr}`);
      assert.ok((await readFile(join(card, "active-up.bin"))).equals(bytes), `upload ${flags.join(" ")}`);
    }
  });

  it("RNFR/RNTO, MKD, RMD, DELE via curl -Q and lftp", async () => {
    await writeFile(join(card, "before.txt"), "content");
    const rn = await curl(["-Q", "RNFR before.txt", "-Q", "RNTO after.txt", `${ftp.url}/`]);
    assert.equal(rn.code, 0, rn.stderr);
    assert.equal(await readFile(join(card, "after.txt"), "utf8"), "content");
    await assert.rejects(stat(join(card, "before.txt")));

    const ops = await lftp(ftp, "mkdir /made; mv /after.txt /made/moved.txt; rm /made/moved.txt; rmdir /made");
    assert.equal(ops.code, 0, ops.stderr);
    await assert.rejects(stat(join(card, "made")));

    await writeFile(join(card, "gone.txt"), "x");
    const dele = await curl(["-Q", "DELE gone.txt", `${ftp.url}/`]);
    assert.equal(dele.code, 0, dele.stderr);
    await assert.rejects(stat(join(card, "gone.txt")));

    await mkdir(join(card, "full/inner"), { recursive: true });
    const rmd = await lftp(ftp, "rmdir /full");
    assert.notEqual(rmd.code, 0);
    assert.match(rmd.stderr, /550 Folder not empty/);
    const deleDir = await lftp(ftp, "rm /full");
    assert.match(deleDir.stderr, /550/);
    assert.ok((await stat(join(card, "full/inner"))).isDirectory(), "nothing removed by refused commands");
    await assertFigures();
  });

  it("a symlink inside the card that stays inside is followed", async () => {
    await mkdir(join(card, "real"));
    await writeFile(join(card, "real/pic.jpg"), "pic");
    await symlink(join(card, "real"), join(card, "alias"));
    const r = await curl([`${ftp.url}/alias/pic.jpg`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "pic");
    // Removing the link removes the link, not what it points to.
    await symlink(join(card, "real/pic.jpg"), join(card, "pic-link.jpg"));
    const rm = await lftp(ftp, "rm /pic-link.jpg");
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal(await readFile(join(card, "real/pic.jpg"), "utf8"), "pic");
    await assert.rejects(stat(join(card, "pic-link.jpg")));
    // A file written through the link is counted once, where it really is.
    await writeFile(join(dir, "through.jpg"), randomBytes(10_000));
    const put = await curl(["-T", join(dir, "through.jpg"), `${ftp.url}/alias/through.jpg`]);
    assert.equal(put.code, 0, put.stderr);
    assert.equal((await stat(join(card, "real/through.jpg"))).size, 10_000);
    await assertFigures();
  });
});
