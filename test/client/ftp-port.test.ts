// The client never guesses which FTP server to write to: our device service announces its FTP port
// (X-FrameFi-FTP-Port on every answer, the firmware's JSON unchanged), and `framefi sync` uses it. Two device
// services on one host, both with the firmware's default FTP login: the sync lands on the one it was given.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, eventually, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";

describe("the FTP port comes from the device", () => {
  let a: RunningDevice;
  let b: RunningDevice;
  let photos: string;

  before(async () => {
    [a, b] = await Promise.all([startDevice(), startDevice()]);
    photos = await tempDir("framefi-photos-");
    for (const name of ["one.jpg", "two.jpg"]) await writeFile(join(photos, name), name);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await removeDir(photos);
  });

  test("every answer carries X-FrameFi-FTP-Port; the JSON is the firmware's", async () => {
    const res = await fetch(`${a.url}/`);
    assert.equal(res.headers.get("x-framefi-ftp-port"), String(a.ftpPort));
    assert.deepEqual(Object.keys((await res.json()) as object), ["mode", "display", "sd_card", "mqtt", "led"]);
    const missing = await fetch(`${a.url}/no-such-path`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get("x-framefi-ftp-port"), String(a.ftpPort));
  });

  test("with the other device in FTP mode too, a sync without --ftp-port writes to the device it was given", async () => {
    await fetch(`${b.url}/mode/ftp`, { method: "POST" });
    await eventually(async () => ((await (await fetch(`${b.url}/`)).json()) as { mode: string }).mode !== "USB MSC");
    const env = { ...process.env };
    delete env.FRAMEFI_FTP_PORT;
    const r = await run(bin("framefi"), ["--host", `127.0.0.1:${a.port}`, "sync", photos], { env, cwd: photos });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`Waiting for the FTP server at 127\\.0\\.0\\.1:${a.ftpPort}…`));
    assert.deepEqual((await readdir(a.card)).sort(), ["one.jpg", "two.jpg"]);
    assert.deepEqual(await readdir(b.card), [], "nothing went to the other device");
  });
});
