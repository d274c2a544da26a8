// SOURCE URLs (src/client/sources/): what each becomes for rclone, which are refused, and that no password ever
// shows in an error; seeded random and mutated URLs never throw anything but the client's errors and never yield a
// path with "..". FUZZ_SEED=<seed> npm test replays a failure; npm run fuzz runs many more cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrameFiError } from "../../src/client/errors.js";
import { parseRemoteSource } from "../../src/client/sources/source.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";
import { docBlocks } from "../fixtures/docs.js";

const home = mkdtempSync(join(tmpdir(), "framefi-home-"));
const knownHosts = join(home, "known_hosts");
writeFileSync(knownHosts, "");
const secrets = { password: "pw", knownHosts };

describe("SOURCE URLs", () => {
  it("turns each kind into an rclone remote", () => {
    const dav = parseRemoteSource("webdavs://anna@cloud.example/remote.php/dav/files/anna/Fotos%20Oma", secrets, home);
    assert.deepEqual(dav.backend.options, {
      type: "webdav",
      vendor: "nextcloud",
      url: "https://cloud.example/remote.php/dav/files/anna/Fotos%20Oma",
      user: "anna",
      pass: "pw",
    });
    assert.equal(dav.display, "webdavs://anna@cloud.example/remote.php/dav/files/anna/Fotos%20Oma");
    const link = parseRemoteSource("webdavs://cloud.example/s/AbC123", {}, home);
    assert.deepEqual([link.backend.options.url, link.backend.options.user], ["https://cloud.example/public.php/webdav/", "AbC123"]);
    assert.equal(link.display, "webdavs://cloud.example/s/***", "a share link's token is its key: never shown");
    const sftp = parseRemoteSource("sftp://pi@nas:2222/~/Pictures", { keyFile: "/k", knownHosts }, home);
    assert.deepEqual(
      [sftp.backend.path, sftp.backend.options.port, sftp.backend.options.key_file, sftp.backend.options.shell_type],
      ["Pictures", "2222", "/k", "none"],
    );
    assert.equal(parseRemoteSource("sftp://nas/srv/photos", secrets, home).backend.path, "/srv/photos");
    const smb = parseRemoteSource("smb://HOME;anna@nas/photos/2024", secrets, home);
    assert.deepEqual([smb.backend.path, smb.backend.options.domain, smb.backend.options.user], ["photos/2024", "HOME", "anna"]);
  });

  it("refuses a password in the URL without showing it, encoded slashes, no known_hosts, no share", () => {
    const refused = (text: string, pattern: RegExp, s = secrets): void => {
      assert.throws(
        () => parseRemoteSource(text, s, home),
        (e: unknown) => e instanceof FrameFiError && pattern.test(e.message) && !e.message.includes("s3cr3t"),
        text,
      );
    };
    refused("webdav://anna:s3cr3t@host/x", /anna:\*\*\*@host.*FRAMEFI_SOURCE_PASSWORD/);
    refused("sftp://a:s3cr3t@h/x", /a:\*\*\*@h/);
    // An @ in the user name, a / in the password (the URL then does not parse): still never shown.
    refused("webdav://u@x:s3cr3t@host/x", /u@x:\*\*\*@host/);
    refused("webdav://u:s3cr3t/w@host/x", /^webdav:\/\/… is not a source/);
    refused("sftp://me@home:s3cr3t@h/photos", /me@home:\*\*\*@h/);
    // Dot segments, even encoded, are resolved by URL before anything sees the path: it names no other folder.
    assert.equal(parseRemoteSource("webdav://host/a/%2e%2e/b", secrets, home).backend.options.url, "http://host/b");
    refused("webdav://host/a/%2Fb", /encoded slash/);
    refused("smb://host/", /names no share/);
    refused("webdav://host/x?pass=1", /query/);
    refused("sftp://host/x", /known_hosts does not exist|does not exist/, { password: "p", knownHosts: join(home, "missing") });
  });

  it("reads every share of docs/client.md's worked examples", () => {
    const urls = docBlocks("docs/client.md", { heading: "Sync from a share" }).flatMap((b) =>
      [...b.body.matchAll(/\b(?:webdavs?|sftp|smb):\/\/[^\s']+/g)].map((m) => m[0]),
    );
    assert.equal(urls.length, 4);
    for (const url of urls) assert.equal(parseRemoteSource(url, secrets, home).key, url);
  });

  const seed = fuzzSeed(0x5eed36);
  it(`never throws anything but the client's errors, never leaks the password, never yields ".." (seed ${seed})`, () => {
    const r = seeded(seed);
    const good = ["webdav://anna@h:8080/a/b", "sftp://u@h/~/p", "smb://D;u@h/s/p", "webdavs://h/s/TOKEN"];
    const parts = ["%2e%2e", "..", "%", "@", ":", "s3cr3t", "/", ";", "?", "#", "%00", "\u202e", "[::1]", "~"];
    for (let i = 0; i < fuzzCases(2_000); i++) {
      let text = r.pick(good);
      for (let k = r.int(5); k > 0; k--) {
        const at = r.int(text.length + 1);
        text = text.slice(0, at) + (r.int(3) === 0 ? r.bytes(1 + r.int(3)).toString("latin1") : r.pick(parts)) + text.slice(at + r.int(2));
      }
      try {
        const s = parseRemoteSource(text, { password: "pw-secret", knownHosts }, home);
        assert.ok(!s.display.includes("pw-secret"), `case ${i}`);
        assert.ok(!`/${s.backend.path}/`.includes("/../") && !`${s.backend.options.url ?? ""}/`.includes("/../"), `case ${i}: ${text}`);
      } catch (e) {
        assert.ok(e instanceof FrameFiError, `case ${i}: ${text}: ${(e as Error).stack}`);
        // A URL that parses: its password is never shown; one that does not: nothing of it but the scheme.
        const password = URL.canParse(text) ? new URL(text).password : undefined;
        if (password === undefined) assert.ok(!/:\/\/\S*s3cr3t/.test(e.message), `case ${i}: ${text}: ${e.message}`);
        else if (password !== "") assert.ok(!e.message.includes(`:${password}@`), `case ${i}: ${text}: ${e.message}`);
      }
    }
  });
});
