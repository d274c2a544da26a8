// The device's errors table (src/device/errors.ts) on its own: one code convention, one-line messages that end with
// what to do (or are texts clients already see, pinned byte for byte), valid statuses, replies and exit codes; and
// toHttp()/toFtpReply(), which answer every error the way the web upload and the FTP server did before the table.
import { describe as suite, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { CardError } from "../../src/device/card/card.js";
import { OptionError, parseSize } from "../../src/device/cli/config.js";
import { DeviceError, ERRORS, EXIT, type Row, toFtpReply, toHttp } from "../../src/device/errors.js";
import { cardReply, Reply } from "../../src/device/ftp/replies.js";

const rows = Object.entries(ERRORS) as [string, Row][];
/** A clause that says what to do begins with one of these. */
const TO_DO = /^(?:or |then )?(?:use|give|check|choose|pick|stop|install|close|try|run|add|remove|rename|send|switch|unload)\b|\b(?:must|needs)\b|, got "?\{/i;
/**
 * Texts clients already see, pinned byte for byte (the firmware's, the FTP replies lftp and curl show, what the tests
 * pin): they say what happened only. A new row does not join them: it says what to do.
 */
const SAYS_WHAT_HAPPENED = new Set([
  "DEVICE_NOT_FOUND",
  "DEVICE_NUL_IN_PATH",
  "DEVICE_OUTSIDE_CARD",
  "DEVICE_REQUEST_HEAD_LATE",
  "DEVICE_FILESYSTEM_FULL",
  "DEVICE_CARD_FULL",
  "DEVICE_FILE_TOO_BIG",
  "DEVICE_IN_MSC_MODE",
  "DEVICE_WRITE_ABORTED",
  "DEVICE_UPLOAD_CUT",
  "DEVICE_FOLDER_GONE",
  "DEVICE_UPLOAD_FAILED",
  // Says what to do before its last sentence.
  "DEVICE_TOO_MANY_FILES",
  "DEVICE_QUOTA_USED_UP",
  "DEVICE_NAME_TOO_LONG",
  "DEVICE_FTP_NOT_FOUND",
  "DEVICE_FTP_EXISTS",
  "DEVICE_FTP_NOT_EMPTY",
  "DEVICE_FTP_IS_FOLDER",
  "DEVICE_FTP_NOT_FOLDER",
  "DEVICE_FTP_PERMISSION",
  "DEVICE_FTP_INTO_ITSELF",
  "DEVICE_FTP_FILESYSTEM_FULL",
  "DEVICE_FTP_NAME_TOO_LONG",
  "DEVICE_FTP_LINK_LOOP",
  "DEVICE_SHORT_UPLOAD",
  // Asks the question whose answer is what to do (another gadget holds the controller).
  "DEVICE_GADGET_BIND_FAILED",
  // Says which variable the user meant (FRAMEFI_DEVICE), which is what to do.
  "DEVICE_OPTION_HOST_HAS_PORT",
  // Says where the keys are listed.
  "DEVICE_CONFIG_FILE_UNKNOWN_KEY",
]);
/** The FTP replies an error may get (RFC 959: 4xx try again, 5xx do not). */
const FTP_REPLIES = [421, 426, 450, 451, 452, 550, 552, 553];

suite("the device's errors table", () => {
  test("every code is DEVICE_ and SCREAMING_SNAKE, and no two rows share one", () => {
    for (const [code] of rows) assert.match(code, /^DEVICE_[A-Z0-9]+(?:_[A-Z0-9]+)*$/);
    // An object literal keeps the last of two equal keys: count them in the source.
    const source = readFileSync(new URL("../../../src/device/errors.ts", import.meta.url), "utf8");
    const keys = [...source.matchAll(/^\s+(DEVICE_\w+):/gm)].map((m) => m[1]);
    assert.equal(keys.length, rows.length);
    assert.equal(new Set(keys).size, keys.length);
  });

  test("every message is one line that ends with what to do", () => {
    for (const [code, row] of rows) {
      assert.doesNotMatch(row.message, /[\r\n]/, code);
      // Text written elsewhere ends it (the thrower's reason, a system's output), and says the rest.
      if (/\{\w+\}\.?$/.test(row.message)) continue;
      const last = row.message.split(/(?<=\.) (?=[A-Z])/).at(-1)!;
      const saysWhatToDo = last.split(/[,;:] |\(/).some((clause) => TO_DO.test(clause.trim()));
      // A pinned text that came to say what to do leaves the list.
      assert.equal(saysWhatToDo, !SAYS_WHAT_HAPPENED.has(code), `${code}: ${row.message}`);
    }
  });

  test("every row has an answer: a valid HTTP status, FTP reply or exit code", () => {
    const exits = Object.values(EXIT).filter((e) => e !== EXIT.ok);
    for (const [code, row] of rows) {
      assert.ok(row.http !== undefined || row.ftp !== undefined || row.exit !== undefined, code);
      if (row.http !== undefined) assert.ok(row.http >= 400 && row.http <= 599, `${code}: ${row.http}`);
      if (row.ftp !== undefined) assert.ok(FTP_REPLIES.includes(row.ftp), `${code}: ${row.ftp}`);
      if (row.exit !== undefined) assert.ok((exits as number[]).includes(row.exit), `${code}: ${row.exit}`);
    }
  });

  test("an error's code is its row, and its message the row's filled in", () => {
    const e = new CardError("DEVICE_NO_SPACE", { free: 10 });
    assert.ok(e instanceof DeviceError);
    assert.equal(e.message, "Not enough free space on the card: 10 bytes free, the file needs more.");
    assert.throws(
      () => parseSize("12XB"),
      (err: unknown) =>
        err instanceof OptionError &&
        err.code === "DEVICE_OPTION_BAD_SIZE" &&
        err.row.exit === EXIT.usage &&
        err.message === 'invalid size "12XB": use a number with an optional unit such as 500MB, 8GiB or 1000000',
    );
  });
});

suite("toHttp() and toFtpReply()", () => {
  const errno = (code: string): Error => Object.assign(new Error(`${code}: the system's words`), { code });

  test("the web upload's answers", () => {
    assert.deepEqual(toHttp(new CardError("DEVICE_NO_SPACE", { free: 0 })), {
      status: 507,
      message: "Not enough free space on the card: 0 bytes free, the file needs more.",
    });
    assert.deepEqual(toHttp(new CardError("DEVICE_IN_MSC_MODE", {})), { status: 400, message: "Cannot upload in MSC mode." });
    assert.deepEqual(toHttp(errno("ENOSPC")), {
      status: 507,
      message: "Not enough free space on the card's filesystem: the upload was stopped and nothing was stored.",
    });
    assert.deepEqual(toHttp(errno("EROFS")), {
      status: 500,
      message: "The card folder cannot be written (EROFS): check its permissions; nothing was stored.",
    });
    assert.deepEqual(toHttp(errno("EIO")), { status: 500, message: "Failed to write the file (EIO); nothing was stored." });
    assert.deepEqual(toHttp(errno("EMFILE")), { status: 503, message: "The device has too many files open: try again in a moment; nothing was stored." });
  });

  test("the FTP server's replies", () => {
    assert.deepEqual(toFtpReply(new CardError("DEVICE_BUSY", {})), {
      code: 450,
      text: "Another upload to this file is in progress; try again when it is done.",
    });
    assert.deepEqual(toFtpReply(errno("ENOTEMPTY")), { code: 550, text: "Folder not empty." });
    assert.equal(toFtpReply(errno("EIO")), undefined);
    const replyTo = (e: unknown, step?: "path" | "new-name" | "upload"): string => {
      try {
        cardReply(e, step);
      } catch (r) {
        return r instanceof Reply ? r.message : `not a reply: ${(r as Error).message}`;
      }
    };
    assert.equal(replyTo(new CardError("DEVICE_CARD_FULL", {}), "upload"), "552 Upload aborted: Not enough space on the card.");
    assert.equal(
      replyTo(new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: "a FAT name cannot end with a dot" }), "new-name"),
      "553 File name not allowed: a FAT name cannot end with a dot.",
    );
    assert.equal(replyTo(new CardError("DEVICE_NAME_NOT_ALLOWED", { problem: "Bad." }), "upload"), "553 Bad.");
    assert.equal(replyTo(errno("ENOSPC"), "upload"), "552 The card's filesystem is full.");
    assert.equal(replyTo(errno("EIO")), "not a reply: EIO: the system's words");
  });
});
