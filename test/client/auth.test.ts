// Logging in. -u user:password, FRAMEFI_USER/FRAMEFI_PASSWORD, the .env's
// WEB_SERVER_USER/WEB_SERVER_PASSWORD; -u user alone asks for the password without echo on a terminal (tested
// through a real pseudo-terminal); 401 and 403 exit 4; the password never shows in the output.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi, framefiOnTerminal } from "./fixtures/cli.js";

const USER = "frame-admin";
const PASS = "s3cret-Pa55:with-colon";
const RO_USER = "viewer";
const RO_PASS = "look-only-77";

describe("a device with a web login", () => {
  let dev: RunningDevice;
  let host: string;
  before(async () => {
    dev = await startDevice({ args: ["--web-user", USER, "--web-password", PASS, "--read-only-user", RO_USER, "--read-only-password", RO_PASS] });
    host = `127.0.0.1:${dev.port}`;
  });
  after(async () => {
    await dev?.stop();
  });

  test("no credentials, or wrong ones: exit 4 with what to do, the password not shown", async () => {
    const none = await framefi(["--host", host, "status"]);
    assert.equal(none.code, 4, none.stderr);
    assert.match(none.stderr, /^framefi: .*401.*-u USER\[:PASSWORD\]/);
    assert.equal(none.stderr, "framefi: the device refused the login (401). Give its web user and password with -u USER[:PASSWORD] or FRAMEFI_USER.\n");
    const wrong = await framefi(["--host", host, "-u", `${USER}:not-the-${PASS}`, "display", "off"]);
    assert.equal(wrong.code, 4);
    assert.ok(!wrong.stderr.includes(PASS) && !wrong.stdout.includes(PASS), "the password is not echoed back");
  });

  test("-u user:password (the password may hold a colon), FRAMEFI_USER and FRAMEFI_PASSWORD, -u user with FRAMEFI_PASSWORD, the .env", async () => {
    const r = await framefi(["--host", host, "-u", `${USER}:${PASS}`, "mode"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "USB MSC\n");
    assert.equal((await framefi(["--host", host, "mode"], { env: { FRAMEFI_USER: USER, FRAMEFI_PASSWORD: PASS } })).code, 0);
    assert.equal((await framefi(["--host", host, "mode"], { env: { FRAMEFI_USER: `${USER}:${PASS}` } })).code, 0);
    const userFlag = await framefi(["--host", host, "-u", USER, "mode"], { env: { FRAMEFI_PASSWORD: PASS } });
    assert.equal(userFlag.code, 0, `-u USER takes FRAMEFI_PASSWORD, as its error advises: ${userFlag.stderr}`);
    const cwd = await tempDir();
    try {
      await writeFile(join(cwd, ".env"), `FTP_HOST="${host}"\nWEB_SERVER_USER="${USER}"\nWEB_SERVER_PASSWORD='${PASS}'\n`);
      const env = await framefi(["mode"], { cwd });
      assert.equal(env.code, 0, env.stderr);
      assert.equal((await framefi(["mode"], { cwd, env: { WEB_SERVER_PASSWORD: "wrong" } })).code, 4, "the environment overrides the .env");
    } finally {
      await removeDir(cwd);
    }
  });

  test("-u user without a password and no terminal: exit 2, nothing asked", async () => {
    const r = await framefi(["--host", host, "-u", USER, "status"], { input: `${PASS}\n` });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no terminal.*-u frame-admin:PASSWORD/);
    // FRAMEFI_PASSWORD belongs to FRAMEFI_USER when that names another user
    const other = await framefi(["--host", host, "-u", USER, "status"], { env: { FRAMEFI_USER: RO_USER, FRAMEFI_PASSWORD: PASS } });
    assert.equal(other.code, 2, other.stderr);
  });

  test("-u user on a terminal: asks for the password without echo, as curl does", async () => {
    const ok = await framefiOnTerminal(["--host", host, "-u", USER, "status"], [["password for user 'frame-admin':", `${PASS}\r`]]);
    assert.equal(ok.code, 0, ok.transcript);
    assert.match(ok.transcript, /Enter host password for user 'frame-admin':/);
    assert.match(ok.transcript, /Mode: +USB MSC/);
    assert.ok(!ok.transcript.includes(PASS), `the typed password is not echoed:\n${ok.transcript}`);
    assert.ok(!ok.transcript.includes("*"), "not even as stars");

    const wrong = await framefiOnTerminal(["--host", host, "-u", USER, "status"], [["password for user", "nope\r"]]);
    assert.equal(wrong.code, 4, wrong.transcript);
  });

  test("the read-only account reads, and a change it may not make exits 4 (403)", async () => {
    const ro = ["--host", host, "-u", `${RO_USER}:${RO_PASS}`];
    assert.equal((await framefi([...ro, "led"])).code, 0);
    const r = await framefi([...ro, "led", "off"]);
    assert.equal(r.code, 4);
    assert.equal(
      r.stderr,
      "framefi: this account may not do that (403: Forbidden: this account is read-only; it may read (GET) but not change anything). Use an account with full access.\n",
    );
    const json = await framefi([...ro, "led", "off", "--json"]);
    assert.equal(JSON.parse(json.stdout).status, "error", "--json prints the device's error body");
  });
});
