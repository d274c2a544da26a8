// The hook server's errors table (src/webhook/errors.ts) on its own: one code convention, one-line messages, exit
// codes the reference uses and HTTP statuses that exist; and describe(), which the CLI and the server go by.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { describe, ERRORS, type Row } from "../../src/webhook/errors.js";
import { TlsConfigError } from "../../src/webhook/cli/tls.js";
import { STATUS_TEXT } from "../../src/webhook/http/status.js";

const rows = Object.entries(ERRORS) as [string, Row][];

test("every code is WEBHOOK_ and SCREAMING_SNAKE, and no two rows share one", () => {
  for (const [code] of rows) assert.match(code, /^WEBHOOK_[A-Z0-9]+(?:_[A-Z0-9]+)*$/);
  // An object literal keeps the last of two equal keys: count them in the source.
  const source = readFileSync(new URL("../../../src/webhook/errors.ts", import.meta.url), "utf8");
  const keys = [...source.matchAll(/^\s+(WEBHOOK_\w+):/gm)].map((m) => m[1]);
  assert.equal(keys.length, rows.length);
  assert.equal(new Set(keys).size, keys.length);
});

/** The reference's own fatal texts of several lines, kept as they are. */
const REFERENCE_LINES: Record<string, number> = { WEBHOOK_DUPLICATE_HOOK: 2, WEBHOOK_NO_HOOKS: 3 };

test("every message is one line, but the reference's own fatals of several", () => {
  for (const [code, row] of rows) assert.equal(row.message.split("\n").length, REFERENCE_LINES[code] ?? 1, code);
  assert.ok(!rows.some(([, row]) => row.message.includes("\r")));
});

test("a message's parts are named in camelCase", () => {
  for (const [code, row] of rows) {
    for (const [, name] of row.message.matchAll(/\{(\w+)\}/g)) assert.match(name!, /^[a-z][A-Za-z]*$/, code);
  }
});

test("every row ends in an exit code the reference uses or in an HTTP status that exists, not both", () => {
  for (const [code, row] of rows) {
    assert.ok((row.exit === undefined) !== (row.status === undefined), code);
    if (row.exit !== undefined) assert.ok([0, 1, 2].includes(row.exit), code);
    if (row.status !== undefined) assert.ok(row.status >= 400 && row.status <= 599 && STATUS_TEXT[row.status] !== undefined, code);
  }
});

test("describe() gives an error of ours its row's message and exit code, and nothing for any other error", () => {
  const e = new TlsConfigError("WEBHOOK_TLS_MIN_VERSION", { version: "1.9" });
  assert.deepEqual(describe(e), { code: "WEBHOOK_TLS_MIN_VERSION", message: "error: unknown minimum TLS version: 1.9", exit: 1 });
  assert.equal(describe(new Error("bug")), undefined);
  assert.equal(describe("text"), undefined);
});
