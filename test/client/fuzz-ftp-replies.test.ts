// Seeded fuzz of the sync's FTP reply parser (src/client/ftp-control.ts): random replies, single- and multi-line,
// cut into random pieces, must come out whole and in order; random bytes must give replies or one clear error,
// never a crash, and the parser never holds more than its bound. A failure names its seed: FUZZ_SEED=<seed>
// replays it; npm run fuzz runs many more cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FtpConnectionError, ReplyParser, type FtpReply } from "../../src/client/ftp-control.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";

const seed = fuzzSeed(0x5eed_f7c1);
const cases = fuzzCases(300);

function text(r: Random): string {
  const chars = "abc XYZ 0123456789-;=|()., é漢🙂\t";
  return Array.from({ length: r.int(40) }, () => r.pick([...chars])).join("");
}

/** A random reply and how a server might write it (CRLF or a bare LF). */
function reply(r: Random): { reply: FtpReply; wire: string } {
  const code = 100 + r.int(500);
  const eol = r.int(4) === 0 ? "\n" : "\r\n";
  if (r.int(3) > 0) {
    const line = `${code}${r.int(5) === 0 ? "" : " " + text(r)}`;
    return { reply: { code, text: line }, wire: line + eol };
  }
  const lines = [`${code}-${text(r)}`];
  for (let i = r.int(6); i > 0; i--) {
    // Inner lines: free text, a feature line, another code, or this code followed by "-" (none ends the reply).
    const other = 100 + r.int(500);
    lines.push(r.pick([` ${text(r)}`, text(r).replace(/^\d{3}[ -]?/, "x"), `${other === code ? other + 1 : other} ${text(r)}`, `${code}-${text(r)}`]));
  }
  lines.push(`${code} ${text(r)}`);
  return { reply: { code, text: lines.join("\n") }, wire: lines.join(eol) + eol };
}

/** `wire` cut at random places (inside characters' UTF-16 units never: the socket decodes UTF-8 first). */
function pieces(r: Random, wire: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < wire.length) {
    const n = 1 + r.int(r.int(3) === 0 ? 4 : 64);
    out.push(wire.slice(at, at + n));
    at += n;
  }
  return out;
}

describe(`FTP reply parser fuzz (seed ${seed}, ${cases} cases)`, () => {
  it("replies cut anywhere come out whole and in order", () => {
    const r = seeded(seed);
    for (let c = 0; c < cases; c++) {
      const sent = Array.from({ length: 1 + r.int(8) }, () => reply(r));
      const parser = new ReplyParser();
      const got: FtpReply[] = [];
      for (const piece of pieces(r, sent.map((s) => s.wire).join(""))) got.push(...parser.push(piece));
      assert.deepEqual(got, sent.map((s) => s.reply), `case ${c} of seed ${seed}`);
    }
  });

  it("random bytes: replies or one clear one-line error, within the size bound", () => {
    const r = seeded(seed + 1);
    for (let c = 0; c < cases; c++) {
      const parser = new ReplyParser();
      const junk = r.int(2) === 0 ? r.bytes(r.int(2000)).toString("utf8") : `${100 + r.int(500)}-` + r.bytes(r.int(3000)).toString("latin1");
      try {
        for (const piece of pieces(r, junk)) for (const got of parser.push(piece)) assert.ok(got.code >= 100 && got.code <= 599);
      } catch (e) {
        assert.ok(e instanceof FtpConnectionError, `case ${c} of seed ${seed + 1}: ${String(e)}`);
        assert.doesNotMatch(e.message, /\n/);
      }
    }
  });

  it("a reply that never ends is refused once it passes 64 KB", () => {
    const parser = new ReplyParser();
    parser.push("211-start\r\n");
    assert.throws(() => {
      for (let i = 0; i < 10_000; i++) parser.push(" a feature line of some length\r\n");
    }, /longer than 64 KB; it does not speak FTP/);
    assert.throws(() => new ReplyParser().push("2".repeat(70_000)), /longer than 64 KB/);
  });
});
