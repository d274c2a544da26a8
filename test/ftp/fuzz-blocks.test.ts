// Seeded fuzz of the block-mode reader (src/shared/ftp-blocks.ts) that FTP uploads in MODE B go through: files cut
// into blocks of random sizes, with restart markers, arriving in random pieces, come out byte for byte, and what
// follows the EOF block is handed back; random bytes either decode or fail with BlockFormatError, never anything
// else. A failure names its seed: FUZZ_SEED=<seed> npm test replays it; npm run fuzz runs many more cases.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BlockDecoder, BlockFormatError, EOF, EOR, RESTART, SUSPECT, toBlocks } from "../../src/shared/ftp-blocks.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";

function header(descriptor: number, length: number): Buffer {
  return Buffer.from([descriptor, length >> 8, length & 0xff]);
}

/** `file` as blocks of random sizes and flags, with restart markers between them, ending with an EOF block. */
function encode(r: Random, file: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < file.length) {
    if (r.int(8) === 0) {
      const marker = r.bytes(r.int(8));
      out.push(header(RESTART, marker.length), marker);
    }
    const n = Math.min(file.length - at, 1 + r.int(r.int(4) === 0 ? 0xffff : 300));
    const last = at + n === file.length && r.int(2) === 0;
    out.push(header((last ? EOF : 0) | r.pick([0, EOR, SUSPECT]), n), file.subarray(at, at + n));
    at += n;
    if (last) return Buffer.concat(out);
  }
  out.push(header(EOF, 0));
  return Buffer.concat(out);
}

/** Feeds `stream` to a fresh decoder in random pieces. */
function decode(r: Random, stream: Buffer): { data: Buffer; rest: Buffer; ended: boolean } {
  const decoder = new BlockDecoder();
  const data: Buffer[] = [];
  let rest: Buffer = Buffer.alloc(0);
  for (let at = 0; at < stream.length && !decoder.ended; ) {
    const n = 1 + r.int(r.int(3) === 0 ? 5 : 70_000);
    const out = decoder.push(stream.subarray(at, at + n));
    data.push(...out.data);
    if (out.rest) rest = out.rest;
    at += n;
    if (decoder.ended) rest = Buffer.concat([rest, stream.subarray(at)]);
  }
  return { data: Buffer.concat(data), rest, ended: decoder.ended };
}

describe("FTP block-mode reader fuzz", () => {
  const seed = fuzzSeed(0xb10c);

  it(`decodes files cut in random blocks and pieces exactly (seed ${seed})`, () => {
    const r = seeded(seed);
    for (let i = 0; i < fuzzCases(300); i++) {
      const file = r.bytes(r.int(4) === 0 ? r.int(200_000) : r.int(2_000));
      const after = r.bytes(r.int(20));
      const { data, rest, ended } = decode(r, Buffer.concat([encode(r, file), after]));
      assert.ok(ended, `case ${i}: the EOF block ends the file`);
      assert.ok(data.equals(file), `case ${i}: the file's bytes, no more, no less`);
      assert.ok(rest.equals(after), `case ${i}: what follows the EOF block is handed back`);
    }
  });

  it(`the sender's own framing (toBlocks) reads back (seed ${seed})`, () => {
    const r = seeded(seed + 1);
    for (let i = 0; i < fuzzCases(50); i++) {
      const file = r.bytes(r.int(300_000));
      const { data, ended } = decode(r, Buffer.concat([...toBlocks(file), header(EOF, 0)]));
      assert.ok(ended && data.equals(file), `case ${i}`);
    }
  });

  it(`random bytes decode or fail with BlockFormatError, never more bytes than came in (seed ${seed})`, () => {
    const r = seeded(seed + 2);
    for (let i = 0; i < fuzzCases(2_000); i++) {
      const input = r.bytes(r.int(600));
      try {
        const { data } = decode(r, input);
        assert.ok(data.length <= input.length, `case ${i}`);
      } catch (e) {
        assert.ok(e instanceof BlockFormatError, `case ${i}: ${String(e)}`);
      }
    }
  });
});
