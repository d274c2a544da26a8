// Attacks on --pull SOURCE with a password in odd places: every form is refused at start, and the password is never shown.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { bin, removeDir, run, tempDir } from "../helpers.js";

describe("framefi-device --pull: a password in the URL in odd forms", () => {
  for (const source of ["webdav://u@x:SECRETpw@h/", "webdav://u:SECRET/w@h/", "sftp://me@home:SECRET@h/photos"]) {
    test(`${source} is refused at start without showing the password`, async () => {
      const card = await tempDir("framefi-att-pull-card-");
      try {
        const r = await run(bin("framefi-device"), ["--pull", source, "--card", card, "--port", "0", "--ftp-port", "0"], { timeoutMs: 10_000 });
        assert.equal(r.code, 2, r.stderr);
        assert.doesNotMatch(r.stderr + r.stdout, /SECRET/);
      } finally {
        await removeDir(card);
      }
    });
  }
});
