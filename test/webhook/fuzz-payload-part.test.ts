// Seeded fuzzing of payloadPart, what the XML thread sends back of a large payload: for random payloads (maps,
// arrays, keys with dots) and random dot paths, reading any of the paths in the part gives what reading it in the
// whole payload gives, a missing node included, and parse-parameters-as-json replaces the same nodes.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { HookRequest } from "../../src/webhook/hooks/hook.js";
import { getArgument, payloadPart, replaceParameter } from "../../src/webhook/hooks/values.js";
import { fuzzCases, fuzzSeed, seeded, type Random } from "../fuzz/random.js";

const KEYS = ["a", "b", "a.b", "0", "1", "b.0", "-x", "#text"];

function tree(rnd: Random, depth: number): unknown {
  const kind = depth === 0 ? 0 : rnd.int(3);
  if (kind === 0) return rnd.pick(["v", "w", ""]);
  if (kind === 1) return Array.from({ length: rnd.int(4) }, () => tree(rnd, depth - 1));
  const o: Record<string, unknown> = {};
  for (let i = rnd.int(4); i > 0; i--) o[rnd.pick(KEYS)] = tree(rnd, depth - 1);
  return o;
}

const path = (rnd: Random): string => Array.from({ length: 1 + rnd.int(4) }, () => rnd.pick([...KEYS, "2", "9"])).join(".");

function read(payload: Record<string, unknown>, name: string): string {
  const req = { payload } as HookRequest;
  try {
    return `value ${getArgument({ source: "payload", name }, req)}`;
  } catch (e) {
    return `error ${(e as Error).message}`;
  }
}

test("a payload's part answers every path read in it as the whole payload does", () => {
  const seed = fuzzSeed(20261128);
  const rnd = seeded(seed);
  const cases = fuzzCases(3000);
  for (let n = 0; n < cases; n++) {
    const whole = { r: tree(rnd, 4) } as Record<string, unknown>;
    const paths = Array.from({ length: 1 + rnd.int(3) }, () => `r.${path(rnd)}`);
    const part = payloadPart(whole, paths);
    for (const p of paths) {
      assert.equal(read(part, p), read(whole, p), `seed ${seed} case ${n}: ${p} in ${JSON.stringify(whole)}`);
      const replacedWhole = structuredClone(whole);
      const replacedPart = structuredClone(part);
      assert.equal(replaceParameter(p, replacedPart, { json: 1 }), replaceParameter(p, replacedWhole, { json: 1 }), `seed ${seed} case ${n}: replace ${p}`);
      for (const q of paths) assert.equal(read(replacedPart, q), read(replacedWhole, q), `seed ${seed} case ${n}: ${q} after replacing ${p}`);
    }
  }
});
