// The LED around FTP transfers, as the firmware's transfer callback drives it: whatever it was, it is on in
// FTP mode's colour once a transfer ends.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { curl, startFtp, type Ftp } from "./fixtures/ftp.js";

let dir = "";
let ftp: Ftp;

before(async () => {
  dir = await tempDir("framefi-ftp-led-");
  await mkdir(join(dir, "card"));
  ftp = await startFtp(join(dir, "card"));
});
after(async () => {
  await ftp?.stop();
  await removeDir(dir);
});

const led = async (): Promise<{ color: string; state: string }> =>
  (await (await fetch(`${ftp.device.url}/led/status`)).json()) as { color: string; state: string };

it("an upload and a download each leave the LED on, purple, after it was switched off", async () => {
  await writeFile(join(dir, "a.jpg"), "photo");
  for (const args of [
    ["-T", join(dir, "a.jpg"), `${ftp.url}/a.jpg`],
    ["-o", join(dir, "back.jpg"), `${ftp.url}/a.jpg`],
  ]) {
    await fetch(`${ftp.device.url}/led/off`, { method: "POST" });
    assert.equal((await led()).state, "off");
    const r = await curl(args);
    assert.equal(r.code, 0, r.stderr);
    // The transfer's end is recorded right after its 226 reply reaches curl; the LED state is read over HTTP.
    assert.deepEqual(
      await eventually(async () => {
        const l = await led();
        return l.state === "on" ? l : undefined;
      }),
      { status: "success", color: "purple", state: "on", brightness: 13 },
    );
  }
});
