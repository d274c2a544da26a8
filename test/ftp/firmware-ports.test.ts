// --firmware-ports: the dongle's ports as defaults (web 80, setup 80, FTP 21, one passive data port 50009),
// explicit flags still win. The privileged defaults are read back from the configuration; the passive port is
// exercised for real with curl.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { parseCli } from "../../src/device/cli/config.js";
import { removeDir, tempDir } from "../helpers.js";
import { curl, startFtp, type Ftp } from "./fixtures/ftp.js";

let dir = "";
let ftp: Ftp;

before(async () => {
  dir = await tempDir("framefi-ftp-fwports-");
  await mkdir(join(dir, "card"));
  ftp = await startFtp(join(dir, "card"), ["--firmware-ports"]);
});
after(async () => {
  await ftp?.stop();
  await removeDir(dir);
});

it("gives the dongle's ports as defaults, and a given port wins", () => {
  const parsed = parseCli(["--firmware-ports"], {});
  assert.ok(parsed.action === "run");
  assert.deepEqual(
    { port: parsed.config.port, setup: parsed.config.setupPort, ftp: parsed.config.ftpPort, passive: parsed.config.ftpPassivePorts },
    { port: 80, setup: 80, ftp: 21, passive: [50009, 50009] },
  );
  const mixed = parseCli(["--firmware-ports", "--port", "8080"], { FRAMEFI_FTP_PORT: "2121" });
  assert.ok(mixed.action === "run");
  assert.deepEqual([mixed.config.port, mixed.config.ftpPort, mixed.config.setupPort], [8080, 2121, 80]);
  const fromEnv = parseCli([], { FRAMEFI_FIRMWARE_PORTS: "on" });
  assert.ok(fromEnv.action === "run");
  assert.equal(fromEnv.config.ftpPort, 21);
  assert.throws(() => parseCli([], { FRAMEFI_FIRMWARE_PORTS: "maybe" }), /--firmware-ports is on or off/);
});

it("passive transfers use data port 50009, one after another", async () => {
  for (const name of ["a.jpg", "b.jpg", "c.jpg"]) {
    await writeFile(join(dir, name), `photo ${name}`);
    const r = await curl(["-v", "-T", join(dir, name), `${ftp.url}/${name}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /port 50009\b/, "curl connected to the passive data port 50009");
  }
});
