// `framefi sync DIR` against a running bin/framefi-device over real FTP. A tree with
// sub-folders mirrored with the device in MSC mode at the start (switched to FTP and back); change, add and
// delete, then --delete: the card matches the folder exactly; --dry-run; --stay; --json; a failing file; Ctrl-C
// midway and a rerun that finishes; the progress bar on a terminal; the .env's variables.
import { after, before, describe, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { bin, eventually, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { FrameFiClient, MODE_FTP, MODE_MSC } from "../../src/client/api/index.js";
import { framefi, framefiOnTerminal, startFramefi, tree } from "./fixtures/cli.js";

const FTP_USER = "photos";
const FTP_PASS = "pa55:word";

async function put(root: string, rel: string, size: number): Promise<void> {
  await mkdir(join(root, rel, ".."), { recursive: true });
  await writeFile(join(root, rel), randomBytes(size));
}

/** One test's own device (in MSC mode) and photo folder; removed after the test. */
interface Setup {
  dev: RunningDevice;
  api: FrameFiClient;
  local: string;
  base: string[];
  ftp: string[];
  sync(...args: string[]): ReturnType<typeof framefi>;
  mode(): Promise<string>;
}

/** The tree the first sync mirrors: files at three depths, a name with spaces and accents, an empty file and folder. */
async function photoTree(local: string): Promise<void> {
  await put(local, "a.jpg", 120_000);
  await put(local, "2024/b.jpg", 80_000);
  await put(local, "2024/summer/c.jpg", 50_000);
  await put(local, "2024/summer/deep/d.jpg", 10);
  await put(local, "with space/é ü.jpg", 2_000);
  await put(local, "zero.jpg", 0);
  await mkdir(join(local, "empty"));
}

/** A device and a folder holding photoTree; `synced`: the folder already mirrored to the card once. */
async function setup(t: TestContext, opts: { synced?: boolean } = {}): Promise<Setup> {
  const dev = await startDevice({ args: ["--ftp-user", FTP_USER, "--ftp-password", FTP_PASS] });
  t.after(() => dev.stop());
  const local = await tempDir("framefi-photos-");
  t.after(() => removeDir(local));
  await photoTree(local);
  const api = new FrameFiClient({ host: dev.url });
  const base = ["--host", `127.0.0.1:${dev.port}`];
  const ftp = ["--ftp-port", String(dev.ftpPort), "--ftp-user", `${FTP_USER}:${FTP_PASS}`];
  const s: Setup = {
    dev,
    api,
    local,
    base,
    ftp,
    sync: (...args) => framefi([...base, "sync", ...ftp, ...args]),
    mode: async () => (await api.mode()).mode,
  };
  if (opts.synced) {
    const first = await s.sync(local);
    assert.equal(first.code, 0, first.stderr);
  }
  return s;
}

// Each test starts its own device and folder, so any one runs alone (--test-name-pattern) as in the suite.
describe("framefi sync", { concurrency: 2 }, () => {
  test("a tree with sub-folders, device in MSC mode at the start: switched to FTP, mirrored, switched back", async (t) => {
    const { dev, api, local, sync, mode } = await setup(t);
    assert.equal(await mode(), MODE_MSC);

    const r = await sync(local);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Switching the device to FTP mode/);
    assert.match(r.stderr, /Switching the device back to USB MSC mode/);
    const lines = r.stdout.trim().split("\n");
    assert.ok(lines.includes("uploaded 2024/summer/deep/d.jpg (10 B)"), r.stdout);
    assert.ok(lines.includes("uploaded with space/é ü.jpg (2.0 kB)"), r.stdout);
    assert.ok(lines.includes("created folder empty/"), r.stdout);
    assert.equal(lines.filter((l) => l.startsWith("uploaded ")).length, 6, "one line per file");
    assert.match(lines.at(-1)!, /^Sync done: 6 uploaded .* The device is in USB MSC mode\.$/);
    assert.deepEqual(await tree(dev.card), await tree(local));
    assert.equal(await mode(), MODE_MSC);
    assert.equal((await api.status()).sd_card.file_count, 6);
    assert.match(dev.program.stdout(), /ftp [\d.:]+: block mode/, "our device takes block mode: one data connection per FTP connection");
  });

  test("a second run uploads nothing", async (t) => {
    const { local, sync } = await setup(t, { synced: true });
    const r = await sync(local);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 6 unchanged\./m);
  });

  test("change, add and delete; without --delete extra files stay, with --delete the card matches exactly", async (t) => {
    const { dev, local, sync, mode } = await setup(t, { synced: true });
    await put(local, "a.jpg", 130_000);
    await put(local, "2024/b.jpg", 80_000);
    const later = new Date(Date.now() + 3_600_000);
    await utimes(join(local, "2024/b.jpg"), later, later);
    await put(local, "2024/new.jpg", 7_000);
    await put(local, "new/folder/x.jpg", 9_000);
    await rm(join(local, "2024/summer/deep"), { recursive: true });
    await rm(join(local, "with space/é ü.jpg"));
    await writeFile(join(dev.card, "stray.txt"), "put there by another program");

    const keep = await sync(local);
    assert.equal(keep.code, 0, keep.stderr);
    for (const rel of ["a.jpg", "2024/b.jpg", "2024/new.jpg", "new/folder/x.jpg"]) assert.match(keep.stdout, new RegExp(`^uploaded ${rel} `, "m"));
    assert.doesNotMatch(keep.stdout, /^deleted/m);
    const card = await tree(dev.card);
    assert.ok(card["stray.txt"] && card["2024/summer/deep/d.jpg"] && card["with space/é ü.jpg"], "nothing deleted without --delete");

    const del = await sync(local, "--delete");
    assert.equal(del.code, 0, del.stderr);
    for (const line of ["deleted stray.txt", "deleted 2024/summer/deep/d.jpg", "deleted folder 2024/summer/deep/", "deleted with space/é ü.jpg"]) {
      assert.ok(del.stdout.split("\n").includes(line), `${line}\n${del.stdout}`);
    }
    assert.match(del.stdout, /0 uploaded/);
    assert.deepEqual(await tree(dev.card), await tree(local), "the card matches the folder exactly");
    assert.equal(await mode(), MODE_MSC);
  });

  test("a file replaced by a folder of the same name (and back) needs --delete", async (t) => {
    const { dev, local, sync } = await setup(t, { synced: true });
    await rm(join(local, "zero.jpg"));
    await put(local, "zero.jpg/inside.jpg", 100);
    const without = await sync(local);
    assert.equal(without.code, 1);
    assert.match(without.stderr, /zero\.jpg: the card has a file of that name; rerun with --delete/);
    const withDelete = await sync(local, "--delete");
    assert.equal(withDelete.code, 0, withDelete.stderr);
    assert.deepEqual(await tree(dev.card), await tree(local));
  });

  test("--dry-run never changes the mode: in MSC mode it says so; in FTP mode it prints the plan and changes nothing", async (t) => {
    const { dev, api, local, sync, mode } = await setup(t, { synced: true });
    await put(local, "planned.jpg", 1_000);
    await writeFile(join(dev.card, "stray2.txt"), "x");
    const before = await tree(dev.card);
    const refused = await sync(local, "--delete", "--dry-run");
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      /^framefi: Nothing compared: the device is in USB MSC mode, and comparing with the card needs FTP mode, .* Switch first \(framefi mode ftp\), or run it on a terminal to be asked\.\n$/,
    );
    assert.equal(await mode(), MODE_MSC, "the card stayed with the frame");

    await api.setMode("ftp");
    await eventually(async () => (await mode()) === MODE_FTP);
    const r = await sync(local, "--delete", "--dry-run");
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes("would upload planned.jpg (1.0 kB, new)"), r.stdout);
    assert.ok(r.stdout.includes("would delete stray2.txt"), r.stdout);
    assert.match(r.stdout, /Nothing was changed; the device is in Application \(FTP Server\) mode\./);
    assert.deepEqual(await tree(dev.card), before);
    assert.equal(await mode(), MODE_FTP, "still in the mode it was in");
    await api.setMode("msc");
    await eventually(async () => (await mode()) === MODE_MSC);
  });

  test("--stay keeps FTP mode; --json prints a summary; from FTP mode a plain sync ends in MSC mode", async (t) => {
    const { dev, local, sync, mode } = await setup(t, { synced: true });
    // One file to upload and one to delete.
    await put(local, "planned.jpg", 1_000);
    await writeFile(join(dev.card, "stray2.txt"), "x");
    const r = await sync(local, "--delete", "--stay", "--json");
    assert.equal(r.code, 0, r.stderr);
    const summary = JSON.parse(r.stdout);
    assert.equal(summary.status, "success");
    assert.equal(summary.uploaded, 1);
    assert.equal(summary.deleted, 1);
    assert.equal(summary.mode, MODE_FTP);
    assert.equal(await mode(), MODE_FTP);
    const again = await sync(local);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /Switching the device to FTP mode/, "already in FTP mode");
    assert.equal(await mode(), MODE_MSC);
    assert.deepEqual(await tree(dev.card), await tree(local));
  });

  test("interrupted midway (Ctrl-C): back in MSC mode, no partial file; a rerun finishes the rest", async (t) => {
    const { dev, base, ftp, sync, mode } = await setup(t);
    const big = await tempDir("framefi-big-");
    try {
      const files = 400;
      for (let i = 0; i < files; i++) await put(big, `f${String(i).padStart(3, "0")}.jpg`, 100_000);
      const p = startFramefi([...base, "sync", ...ftp, big, "--to", "/big", "--parallel", "1"], { cwd: big });
      await p.waitFor(/(?:uploaded f\d+\.jpg [^\n]*\n){5}/, 30_000);
      p.child.kill("SIGINT");
      assert.equal(await p.exited, 130, p.stderr());
      assert.match(p.stderr(), /Sync interrupted\. The device is back in USB MSC mode\. Run the same command again/);
      assert.equal(await mode(), MODE_MSC);

      const want = await tree(big);
      const got = await tree(join(dev.card, "big"));
      const arrived = Object.keys(got).length;
      assert.ok(arrived > 0 && arrived < files, `stopped midway (${arrived} of ${files} arrived)`);
      for (const [rel, hash] of Object.entries(got)) assert.equal(hash, want[rel], `${rel} on the card is whole`);

      const rerun = await sync(big, "--to", "/big");
      assert.equal(rerun.code, 0, rerun.stderr);
      const m = /Sync done: (\d+) uploaded .*, (\d+) unchanged/.exec(rerun.stdout);
      assert.ok(m, rerun.stdout);
      assert.equal(Number(m[1]) + Number(m[2]), files);
      assert.ok(Number(m[2]) >= arrived - 1, "what arrived is not sent again");
      assert.deepEqual(await tree(join(dev.card, "big")), want);
    } finally {
      await removeDir(big);
    }
  });

  test("on a terminal: a progress bar with files, bytes, rate and time left", async (t) => {
    const { base, ftp } = await setup(t);
    const dir = await tempDir("framefi-tty-");
    try {
      for (let i = 0; i < 40; i++) await put(dir, `p${i}.jpg`, 200_000);
      const r = await framefiOnTerminal([...base, "sync", ...ftp, dir, "--to", "/tty"], []);
      assert.equal(r.code, 0, r.transcript);
      assert.match(r.transcript, /\[#{24}\] 40\/40 files +8\.0 MB\/8\.0 MB +(–|[\d.]+ [kMG]?B\/s) +[–\d:]+ left/);
      assert.doesNotMatch(r.transcript, /^uploaded /m, "no per-file lines on a terminal");
    } finally {
      await removeDir(dir);
    }
  });

  test("the .env gives the device, the folder, the card folder and the FTP login; FRAMEFI_FTP_PORT the FTP port", async (t) => {
    const { dev } = await setup(t);
    const cwd = await tempDir("framefi-env-");
    try {
      await put(cwd, "pictures/one.jpg", 1_500);
      await writeFile(
        join(cwd, ".env"),
        `FTP_HOST="127.0.0.1:${dev.port}"\nFTP_USER="${FTP_USER}"\nFTP_PASSWORD="${FTP_PASS}"\nLOCAL_DIR="pictures"\nREMOTE_DIR="/frame/album"\n`,
      );
      const r = await framefi(["sync"], { cwd, env: { FRAMEFI_FTP_PORT: String(dev.ftpPort) } });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await readdir(join(dev.card, "frame/album")), ["one.jpg"]);
    } finally {
      await removeDir(cwd);
    }
  });

  test("a wrong FTP password exits 4 and leaves the device in MSC mode", async (t) => {
    const { dev, base, local, mode } = await setup(t);
    const r = await framefi([...base, "sync", "--ftp-port", String(dev.ftpPort), "--ftp-user", `${FTP_USER}:wrong`, local]);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /refused user "photos" \(530\).*--ftp-user.*back in USB MSC mode/);
    assert.ok(!r.stderr.includes(FTP_PASS));
    assert.equal(await mode(), MODE_MSC);
  });

  test("output piped into a reader that stops early (| head -1): the sync still ends, and in MSC mode", async (t) => {
    const { dev, base, ftp, mode } = await setup(t);
    const dir = await tempDir("framefi-piped-");
    try {
      for (let i = 0; i < 50; i++) await put(dir, `p${i}.jpg`, 20_000);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell script, not a template
      const script = '"$@" | head -1; echo "exit=${PIPESTATUS[0]}" >&2';
      const r = await run("bash", ["-c", script, "_", bin("framefi"), ...base, "sync", ...ftp, dir, "--to", "/piped"], { timeoutMs: 60_000 });
      assert.match(r.stderr, /exit=0$/m, r.stderr);
      assert.doesNotMatch(r.stderr, /unexpected error/);
      assert.deepEqual(await tree(join(dev.card, "piped")), await tree(dir));
      assert.equal(await mode(), MODE_MSC);
    } finally {
      await removeDir(dir);
    }
  });
});

describe("framefi sync on a card that fills up", () => {
  let dev: RunningDevice;
  let local: string;
  before(async () => {
    dev = await startDevice({ args: ["--card-size", "1MB"] });
    local = await tempDir("framefi-full-");
  });
  after(async () => {
    await dev?.stop();
    await removeDir(local);
  });

  test("a file that fails is reported, the others arrive, and the exit code says so", async () => {
    await put(local, "a.jpg", 200_000);
    await put(local, "huge.jpg", 3_000_000);
    await put(local, "c.jpg", 200_000);
    // One connection: with several, the big upload's bytes in flight can take the room c.jpg needs at that moment.
    const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--parallel", "1", local]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^failed huge\.jpg: 552 /m);
    assert.match(r.stdout, /^uploaded a\.jpg /m);
    assert.match(r.stdout, /^uploaded c\.jpg /m);
    assert.match(r.stdout, /2 uploaded .*, 1 failed\. The device is in USB MSC mode\./);
    assert.deepEqual((await readdir(dev.card)).sort(), ["a.jpg", "c.jpg"], "no partial file left");
  });

  test("on a terminal, a failed file is counted, and the bar never runs backwards", async () => {
    const dir = await tempDir("framefi-tty-full-");
    try {
      await put(dir, "d.jpg", 100_000);
      await put(dir, "huge.jpg", 3_000_000);
      await put(dir, "e.jpg", 100_000);
      const r = await framefiOnTerminal(
        ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--parallel", "1", dir, "--to", "/more"],
        [],
      );
      assert.equal(r.code, 1, r.transcript);
      const frames = [...r.transcript.matchAll(/\[(#*)-*\] (\d+)\/3 files(, (\d+) failed)?/g)].map((m) => ({
        filled: m[1]!.length,
        done: Number(m[2]),
        failed: Number(m[4] ?? 0),
      }));
      assert.ok(frames.length > 0, r.transcript);
      for (let i = 1; i < frames.length; i++) assert.ok(frames[i]!.filled >= frames[i - 1]!.filled, `the bar went back: ${JSON.stringify(frames)}`);
      assert.deepEqual(frames.at(-1), { filled: 24, done: 2, failed: 1 });
    } finally {
      await removeDir(dir);
    }
  });
});

describe("framefi sync to a card that refuses names (--fat-names)", () => {
  let dev: RunningDevice;
  let local: string;
  before(async () => {
    dev = await startDevice({ args: ["--fat-names"] });
    local = await tempDir("framefi-fat-");
  });
  after(async () => {
    await dev?.stop();
    await removeDir(local);
  });

  test("a refused name fails alone; the files after it on the same connection arrive byte for byte", async () => {
    // The client sends a file's first chunk along with STOR: a refusal (553) must drop those bytes, never hand them
    // to the next file. a?.jpg is two chunks (the first goes early), c:.jpg one (it goes whole, with its EOF block).
    await put(local, "a?.jpg", 300_000);
    await put(local, "b.jpg", 100_000);
    await put(local, "c:.jpg", 1_000);
    await put(local, "d.jpg", 50_000);
    const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), "--parallel", "1", local]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^failed a\?\.jpg: 553 /m);
    assert.match(r.stderr, /^failed c:\.jpg: 553 /m);
    assert.match(r.stdout, /2 uploaded .*, 2 failed\. The device is in USB MSC mode\./);
    const { "a?.jpg": _a, "c:.jpg": _c, ...sent } = await tree(local);
    assert.deepEqual(await tree(dev.card), sent);
  });
});

describe("framefi sync against an FTP server without block mode (the firmware's)", () => {
  let dev: RunningDevice;
  let local: string;
  before(async () => {
    dev = await startDevice({ args: ["--ftp-stream-only"] });
    local = await tempDir("framefi-stream-");
  });
  after(async () => {
    await dev?.stop();
    await removeDir(local);
  });

  test("mirrors over a data connection per file, times kept: a rerun sends nothing; Ctrl-C keeps no partial file", async () => {
    await put(local, "a.jpg", 300_000);
    await put(local, "2024/b.jpg", 80_000);
    await put(local, "zero.jpg", 0);
    const host = ["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort)];
    const r = await framefi([...host, local]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Sync done: 3 uploaded/);
    assert.deepEqual(await tree(dev.card), await tree(local));
    assert.doesNotMatch(dev.program.stdout(), /block mode/);
    const again = await framefi([...host, local]);
    assert.match(again.stdout, /Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 3 unchanged\./);

    const many = join(local, "many");
    for (let i = 0; i < 200; i++) await put(local, `many/f${String(i).padStart(3, "0")}.jpg`, 100_000);
    const p = startFramefi([...host, many, "--to", "/many", "--parallel", "1"], { cwd: many });
    await p.waitFor(/(?:uploaded f\d+\.jpg [^\n]*\n){3}/, 30_000);
    p.child.kill("SIGINT");
    assert.equal(await p.exited, 130, p.stderr());
    const want = await tree(many);
    const got = await tree(join(dev.card, "many"));
    assert.ok(Object.keys(got).length < 200, "stopped midway");
    for (const [rel, hash] of Object.entries(got)) assert.equal(hash, want[rel], `${rel} on the card is whole`);
  });
});
