// The flag table and Go's flag syntax, without starting the server (process-flags.test.ts runs the program).
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaults, FlagError, parseFlags, usage } from "../../src/webhook/cli/flags.js";
import { describe } from "../../src/webhook/errors.js";

function refused(argv: string[]): [number, string] {
  try {
    parseFlags(argv);
  } catch (e) {
    assert.ok(e instanceof FlagError);
    return [describe(e)!.exit!, e.message];
  }
  assert.fail(`accepted ${JSON.stringify(argv)}`);
}

test("every option has its default from its row of the table", () => {
  const d = defaults();
  for (const [k, v] of Object.entries(d)) assert.notEqual(v, undefined, k);
  assert.equal(d.port, 9000);
  assert.equal(d.maxQueue, 100);
  assert.equal(d.maxBackground, 8);
  assert.equal(d.jobsMaxAgeMs, 24 * 3_600_000);
  assert.deepEqual(d.hooks, []);
  // Each call gets lists of its own.
  defaults().headers.push({ name: "X", value: "1" });
  assert.deepEqual(defaults().headers, []);
});

test("usage prints Go's PrintDefaults: type names, and defaults other than the zero value", () => {
  const text = usage("webhook");
  assert.match(text, /^Usage of webhook:\n {2}-cert string\n {4}\tpath to the HTTPS certificate pem file \(default "cert.pem"\)\n/);
  assert.match(text, /\n {2}-max-queue int\n {4}\t[^\n]* \(default 100\)\n/);
  assert.match(text, /\n {2}-shutdown-timeout duration\n {4}\t[^\n]* \(default 30s\)\n/);
  assert.match(text, /\n {2}-hooks value\n {4}\t[^\n(]*\n/);
  assert.match(text, /\n {2}-verbose\n {4}\tshow verbose output\n/);
});

test("parseFlags reads Go's syntaxes and stops where Go stops", () => {
  const o = parseFlags([
    "-port",
    "8080",
    "--verbose",
    "-hooks=a.json",
    "-hooks",
    "b.json",
    "-header",
    "X=1=2",
    "-debug=false",
    "-max-queue",
    "0x10",
    "-command-timeout",
    "1m30s",
    "rest",
    "-nopanic",
  ]);
  assert.equal(o.port, 8080);
  assert.equal(o.verbose, true);
  assert.deepEqual(o.hooks, ["a.json", "b.json"]);
  assert.deepEqual(o.headers, [{ name: "X", value: "1=2" }]);
  assert.equal(o.debug, false);
  assert.equal(o.maxQueue, 16);
  assert.equal(o.commandTimeoutMs, 90_000);
  assert.equal(o.nopanic, false);
  assert.equal(parseFlags(["--", "-verbose"]).verbose, false);
  assert.equal(parseFlags(["-log-format=json"]).logFormat, "json");
});

test("parseFlags refuses with Go's messages and exit codes", () => {
  assert.deepEqual(refused(["-nope"]), [2, "flag provided but not defined: -nope"]);
  assert.deepEqual(refused(["-h"]), [0, ""]);
  assert.deepEqual(refused(["-port"]), [2, "flag needs an argument: -port"]);
  assert.deepEqual(refused(["-debug=maybe"]), [2, 'invalid boolean value "maybe" for -debug: parse error']);
  assert.deepEqual(refused(["-max-queue", "-1"]), [2, 'invalid value "-1" for flag -max-queue: must be 0 or more']);
  assert.deepEqual(refused(["-header", "noeq"]), [2, 'invalid value "noeq" for flag -header: header flag must be in name=value format']);
  assert.deepEqual(refused(["-log-format", "xml"]), [2, 'invalid value "xml" for flag -log-format: must be "text" or "json"']);
  assert.deepEqual(refused(["---x"]), [2, "bad flag syntax: ---x"]);
});
