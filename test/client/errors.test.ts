// The client's errors table (src/client/errors.ts) on its own: one code convention, messages that end with what to
// do, exit codes among those `framefi --help` documents; and describe(), which words an error for the CLI.
import { describe as suite, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { AuthenticationError, DeviceHttpError, DeviceUnreachableError, FrameFiError, MODE_MSC } from "../../src/client/api/index.js";
import { ERRORS, EXIT, type Row } from "../../src/client/errors.js";
import { describe } from "../../src/client/cli/describe.js";
import { FtpLoginError, SyncStopped } from "../../src/client/sync/errors.js";

const rows = Object.entries(ERRORS) as [string, Row][];
/** The exit codes of an error, as `framefi --help` lists them (0 is success). */
const DOCUMENTED_EXITS = [1, 2, 3, 4, 130];
/** A clause that says what to do begins with one of these. */
const TO_DO = /^(?:or |then )?(?:pass|use|check|give|name|switch|run|send|fix|set|add|remove|see|close|make|sync)\b/i;
/** A sentence that says what a value must be (and what was given). */
const REQUIRED = /\b(?:must|takes|needs|expected)\b|, got "/;

/** Whether the last sentence of `message` (after a part, the device's text may end a sentence) says what to do. */
function endsWithWhatToDo(message: string): boolean {
  const last = message.split(/(?<=[.?!]) (?=[A-Z])|(?<=\}) (?=[A-Z][a-z]+ )/).at(-1)!;
  return REQUIRED.test(last) || last.split(/[,;:] |\(| or (?=[a-z])/).some((clause) => TO_DO.test(clause.trim()));
}

suite("the client's errors table", () => {
  test("every code is FRAMEFI_ and SCREAMING_SNAKE, and no two rows share one", () => {
    for (const [code] of rows) assert.match(code, /^FRAMEFI_[A-Z0-9]+(?:_[A-Z0-9]+)*$/);
    // An object literal keeps the last of two equal keys: count them in the source.
    const source = readFileSync(new URL("../../../src/client/errors.ts", import.meta.url), "utf8");
    const keys = [...source.matchAll(/^\s+(FRAMEFI_\w+):/gm)].map((m) => m[1]);
    assert.equal(keys.length, rows.length);
    assert.equal(new Set(keys).size, keys.length);
  });

  test("every message ends with what to do", () => {
    for (const [code, row] of rows) {
      for (const message of [row.message, row.cli].filter((m) => m !== undefined)) {
        // Ctrl-C: the user chose to stop; nothing is left to do.
        if (row.exit === EXIT.interrupted) continue;
        // Text written elsewhere ends it (the device's message, the FTP server's reply, the cause's, the thrower's).
        if (/\{\w+\}$/.test(message)) continue;
        // A reason printed after a file's name: the list's last line says what to do.
        if (/^[a-z]/.test(message) && !message.endsWith(".")) continue;
        assert.ok(endsWithWhatToDo(message), `${code}: ${message}`);
      }
    }
  });

  test("a row's command-line wording names only parts its message has", () => {
    const parts = (template: string) => new Set([...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
    for (const [code, row] of rows) {
      if (row.cli === undefined) continue;
      assert.notEqual(row.cli, row.message, code);
      const own = parts(row.message);
      for (const part of parts(row.cli)) assert.ok(own.has(part), `${code}: {${part}}`);
    }
  });

  test("every exit code is one framefi documents", () => {
    assert.deepEqual(
      Object.values(EXIT).sort((a, b) => a - b),
      [0, ...DOCUMENTED_EXITS],
    );
    for (const [code, row] of rows) assert.ok(DOCUMENTED_EXITS.includes(row.exit), `${code}: ${row.exit}`);
  });

  test("an error's code is its row, and its message the row's filled in", () => {
    const e = new DeviceUnreachableError("http://frame.local", "ECONNREFUSED");
    assert.ok(e instanceof FrameFiError);
    assert.equal(e.code, "FRAMEFI_DEVICE_UNREACHABLE");
    assert.equal(e.message, "The device at http://frame.local did not answer (ECONNREFUSED). Check the address and that the device is on.");
  });
});

suite("describe()", () => {
  test("words a device's refusal in the command line's terms, with its exit code", () => {
    const told = describe(new AuthenticationError(401, "Unauthorized", '{"status":"error","message":"Unauthorized"}', "GET /"));
    assert.equal(told.line, "the device refused the login (401). Give its web user and password with -u USER[:PASSWORD] or FRAMEFI_USER.");
    assert.equal(told.exit, EXIT.auth);
    assert.equal(told.answer, '{"status":"error","message":"Unauthorized"}');
  });

  test("tells the device's hint to switch modes as a framefi command", () => {
    const told = describe(new DeviceHttpError(400, "Uploads need FTP mode; the device is in MSC mode.", "{}", "POST /upload"));
    assert.equal(
      told.line,
      "the device answered 400: Uploads need FTP mode; the device is in MSC mode. Switch the device to FTP mode first: framefi mode ftp.",
    );
    assert.equal(told.exit, EXIT.deviceError);
  });

  test("a stopped sync takes its cause's words and exit code", () => {
    const refused = describe(new SyncStopped("530", new FtpLoginError("frame", 21, "user"), MODE_MSC, false));
    assert.equal(
      refused.line,
      'Sync stopped: The FTP server at frame:21 refused user "user" (530). Pass the device\'s FTP user and password with --ftp-user USER:PASSWORD. The device is back in USB MSC mode.',
    );
    assert.equal(refused.exit, EXIT.auth);
    const broken = describe(new SyncStopped("ECONNRESET: read", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), undefined, false));
    assert.equal(
      broken.line,
      "Sync stopped: read ECONNRESET. Could not put the device back in its mode: check it with framefi status. Run the same command again to finish.",
    );
    assert.equal(broken.exit, EXIT.unreachable);
    assert.equal(describe(new SyncStopped("Interrupted.", new Error("Interrupted."), MODE_MSC, true)).exit, EXIT.interrupted);
  });

  test("an error that is not the client's is a bug to report", () => {
    assert.deepEqual(describe(new TypeError("x is not a function")), {
      line: "unexpected error: x is not a function. Please report it.",
      reason: "x is not a function",
      exit: EXIT.deviceError,
    });
  });
});
