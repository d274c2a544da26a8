// Seeded, bounded fuzzing of the XML payload decoding (the first element, as the reference's mxj reads it): bodies
// pieced together from markup fragments either decode to an object or fail with "error parsing XML payload: …",
// never another exception. FUZZ_SEED replays a run; `npm run fuzz` runs many more cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseXmlPayload } from "../../src/webhook/request/request.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";

const PIECES = [
  "<a>",
  "</a>",
  "<b x='1>2'>",
  "</b>",
  "<c/>",
  "<!--",
  "-->",
  "<![CDATA[",
  "]]>",
  '<?xml version="1.0"?>',
  "<?xml encoding='latin1'?>",
  "<?pi",
  "?>",
  "<!DOCTYPE a [",
  '<!ENTITY e "v">',
  "]>",
  "<",
  ">",
  "/",
  '"',
  "'",
  "&amp;",
  "&bogus;",
  "&#x41;",
  "text",
  " ",
  "\n",
  "\ufeff",
  "\u00e9",
  "<ns:a xmlns:ns='u'>",
  "</ns:a>",
  "=",
];

test("XML payloads: every body decodes or fails with a clear error", () => {
  const seed = fuzzSeed(20261128);
  const rnd = seeded(seed);
  const cases = fuzzCases(2000);
  for (let n = 0; n < cases; n++) {
    const parts = Array.from({ length: 1 + rnd.int(24) }, () => (rnd.int(10) === 0 ? rnd.bytes(1 + rnd.int(4)).toString("latin1") : rnd.pick(PIECES)));
    const body = Buffer.from(parts.join(""), "utf8");
    try {
      const payload = parseXmlPayload(body);
      assert.equal(typeof payload, "object", `seed ${seed} case ${n}`);
    } catch (e) {
      assert.ok(
        e instanceof Error && e.message.startsWith("error parsing XML payload"),
        `seed ${seed} case ${n}: ${JSON.stringify(body.toString())} threw ${String(e)}`,
      );
    }
  }
});
