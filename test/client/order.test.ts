// --order, --max-per-folder and several frames in one .env, through bin/framefi syncing to a running
// bin/framefi-device over FTP: the card's names sort in the asked order, an unchanged photo is not sent again when a
// new one sorts before it, a seed reshuffles; `sync NAME` and `sync --all` (a line per frame, the exit code's bits).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, removeDir, startDevice, tempDir } from "../helpers.js";
import sharp from "sharp";
import { framefi } from "./fixtures/cli.js";
import { add, names, photos, summary } from "./fixtures/order.js";
import { docBlocks } from "../fixtures/docs.js";

describe("framefi sync --order and --max-per-folder", { concurrency: 2 }, () => {
  test("date order, kept across syncs; a new seed reshuffles", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const dir = await photos(t, { "winter.jpg": 30, "spring.jpg": 100, "summer.jpg": 200 });
    const sync = (...args: string[]) => framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--delete", ...args]);

    // The docs' example, as written but for the folder and the device.
    const [example] = docBlocks("docs/client.md", { heading: "The order a frame plays, and full folders", lang: "sh" }).map((b) => b.body.trim());
    const args = example!
      .split(" ")
      .slice(1)
      .map((a) => (a === "~/Pictures" ? dir : a));
    let r = await framefi(["--host", `127.0.0.1:${dev.port}`, ...args, "--ftp-port", String(dev.ftpPort)]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await names(dev.card), ["00001000-winter.jpg", "00002000-spring.jpg", "00003000-summer.jpg"]);

    // An older photo sorts first: it alone is sent, the others keep their names.
    await add(dir, { "new-year.jpg": 1 });
    r = await sync("--order", "date");
    assert.equal(r.code, 0, r.stderr);
    assert.match(summary(r.stdout), /^Sync done: 1 uploaded .* 0 deleted, .* 3 unchanged\./);
    assert.deepEqual(await names(dev.card), ["00000500-new-year.jpg", "00001000-winter.jpg", "00002000-spring.jpg", "00003000-summer.jpg"]);

    const shuffled = async (seed: string): Promise<string[]> => {
      const s = await sync("--order", `shuffle:${seed}`);
      assert.equal(s.code, 0, s.stderr);
      return (await names(dev.card)).map((n) => n.slice(9));
    };
    const one = await shuffled("1");
    assert.deepEqual(one, await shuffled("1"));
    r = await sync("--order", "shuffle:1");
    assert.match(summary(r.stdout), /^Sync done: 0 uploaded .* 4 unchanged\./);
    const others = await Promise.all(["2", "3"].map(async (s) => (await shuffled(s)).join()));
    assert.ok(
      others.some((o) => o !== one.join()),
      `every seed gave ${one.join()}`,
    );
  });

  test("without a frame profile, --order date and a collection's dates go by the EXIF date taken, not the file's time", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const dir = await photos(t, {});
    // Copied photos: each file's time says the opposite of when it was taken.
    for (const [name, taken, mtime] of [
      ["old.jpg", "2010:06:01 12:00:00", "2033-01-01"],
      ["new.jpg", "2024:06:01 12:00:00", "2001-01-01"],
    ] as const) {
      await sharp({ create: { width: 40, height: 30, channels: 3, background: "#468" } })
        .jpeg()
        .withExif({ IFD0: {}, IFD2: { DateTimeOriginal: taken } })
        .toFile(join(dir, name));
      const s = Date.parse(`${mtime}T12:00:00Z`) / 1000;
      await utimes(join(dir, name), s, s);
    }
    const host = ["--host", `127.0.0.1:${dev.port}`];
    const r = await framefi([...host, "sync", "--ftp-port", String(dev.ftpPort), dir, "--delete", "--force", "--order", "date"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await names(dev.card), ["00001000-old.jpg", "00002000-new.jpg"]);

    const cwd = await tempDir("framefi-dates-");
    t.after(() => removeDir(cwd));
    await writeFile(join(cwd, ".env"), `[frame den]\nHOST=127.0.0.1:${dev.port}\n\n[collection twenty-ten]\nSOURCE=${dir}\nFROM=2010-01-01\nTO=2011-01-01\n`);
    const set = await framefi(["collection", "use", "twenty-ten", "den"], { cwd, env: { FRAMEFI_FTP_PORT: String(dev.ftpPort) } });
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(await names(dev.card), ["old.jpg"]);
  });

  test("--max-per-folder spreads a folder into numbered subfolders; a bad value is a usage error", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const dir = await photos(t, { "a.jpg": 1, "b.jpg": 2, "c.jpg": 3, "d.jpg": 4, "e.jpg": 5 });
    const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--max-per-folder", "2"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await names(dev.card), ["001/a.jpg", "001/b.jpg", "002/c.jpg", "002/d.jpg", "003/e.jpg"]);
    // Converted photos are named after conversion: the HEIC-or-PNG-to-JPEG name takes the prefix.
    const pics = await photos(t, {});
    for (const n of ["y", "x"])
      await sharp({ create: { width: 40, height: 30, channels: 3, background: "#888" } })
        .png()
        .toFile(join(pics, `${n}.png`));
    const converted = await framefi([
      "--host",
      `127.0.0.1:${dev.port}`,
      "sync",
      "--ftp-port",
      String(dev.ftpPort),
      pics,
      "--to",
      "/fit",
      "--fit",
      "32x32",
      "--order",
      "name",
      "--cache",
      await photos(t, {}),
    ]);
    assert.equal(converted.code, 0, converted.stderr);
    assert.deepEqual(await names(dev.card, "fit"), ["fit/00001000-x.jpg", "fit/00002000-y.jpg"]);
    const bad = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", dir, "--order", "random"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--order is name, date, shuffle or shuffle:SEED, got "random"/);
  });
});

describe("several frames and collections in one .env (docs/client.md's example)", () => {
  test("sync NAME with its profile; sync --all a line each, the exit code's bit for the one that failed; collection use", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const dir = await photos(t, {});
    // Photos the landscape profile converts: one of the new-year days, one of March.
    for (const [name, day] of [
      ["b.png", "2026-01-03"],
      ["a.png", "2026-03-01"],
    ] as const) {
      await sharp({ create: { width: 40, height: 30, channels: 3, background: "#468" } })
        .png()
        .toFile(join(dir, name));
      const s = Date.parse(`${day}T12:00:00Z`) / 1000;
      await utimes(join(dir, name), s, s);
    }
    const cwd = await tempDir("framefi-frames-");
    t.after(() => removeDir(cwd));
    const closed = await freePort();
    const [envFile, commands] = docBlocks("docs/client.md", { heading: "Several frames and collections", lang: "sh" }).map((b) => b.body);
    await writeFile(
      join(cwd, ".env"),
      envFile!.replaceAll("192.168.1.50:8080", `127.0.0.1:${dev.port}`).replaceAll("192.168.1.51:8080", `127.0.0.1:${closed}`).replaceAll("/srv/photos", dir),
    );
    const env = { FRAMEFI_FTP_PORT: String(dev.ftpPort), XDG_CACHE_HOME: join(cwd, "cache") };
    const [syncOne, syncAll, useSet] = commands!
      .trim()
      .split("\n")
      .map((line) => line.split(" ").slice(1));

    const one = await framefi(syncOne!, { cwd, env });
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(await names(dev.card), ["00001000-b.jpg", "00002000-a.jpg"]);

    const all = await framefi(syncAll!, { cwd, env });
    assert.equal(all.code, 2, `${all.stdout}\n${all.stderr}`);
    assert.match(all.stdout, /^kitchen: Sync done: 0 uploaded .* 2 unchanged\. The device is in USB MSC mode\.$/m);
    assert.match(
      all.stderr,
      /^hall: failed \(exit 3\): The device at http:\/\/127\.0\.0\.1:\d+ did not answer \(ECONNREFUSED\)\. .*\(the address came from HOST in \[frame hall\]\)$/m,
    );
    assert.equal(all.stdout.trim().split("\n").length, 1);

    // Only the photo of the collection's days stays on the frame.
    const set = await framefi(useSet!, { cwd, env });
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(await names(dev.card), ["00001000-b.jpg"]);
    const unknown = await framefi(["collection", "use", "summer", "kitchen"], { cwd });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no \[collection summer\] section; use one of: new-year\./);

    const none = await framefi(["sync", "--all"]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no \[frame NAME\] section/);
  });
});

describe("a collection's folder", () => {
  test("a collection's FOLDER sends only that folder; a FOLDER leading out of SOURCE is a usage error", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const dir = await photos(t, { "top.jpg": 1, "2024/trip/a.jpg": 2, "2024/trip/day2/b.jpg": 3, "2024/home.jpg": 4, "2025/c.jpg": 5 });
    const cwd = await tempDir("framefi-folder-");
    t.after(() => removeDir(cwd));
    const env = { FRAMEFI_DEVICE: `127.0.0.1:${dev.port}`, FRAMEFI_FTP_PORT: String(dev.ftpPort), XDG_CACHE_HOME: join(cwd, "cache") };
    await writeFile(join(cwd, ".env"), `[collection trip]\nSOURCE=${dir}\nFOLDER=2024/trip\n`);
    const r = await framefi(["collection", "use", "trip"], { cwd, env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await names(dev.card), ["a.jpg", "day2/b.jpg"]);

    for (const folder of ["..", "2024/../..", "2024/../../etc", "/etc", "..\\outside"]) {
      await writeFile(join(cwd, ".env"), `[collection trip]\nSOURCE=${dir}\nFOLDER=${folder}\n`);
      const bad = await framefi(["collection", "use", "trip"], { cwd, env });
      assert.equal(bad.code, 2, `FOLDER=${folder}: ${bad.stderr}`);
      assert.equal(bad.stderr, `framefi: [collection trip]: FOLDER "${folder}" must be a folder inside SOURCE; fix it.\n`);
    }
    assert.deepEqual(await names(dev.card), ["a.jpg", "day2/b.jpg"], "a refused FOLDER changes nothing on the card");
  });
});
