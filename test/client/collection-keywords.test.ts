// A collection's KEYWORDS: `framefi collection use` sends only the photos tagged with one of them (IPTC Keywords
// in a JPEG's APP13, XMP dc:subject), through bin/framefi to a running bin/framefi-device; and the readers of
// keywords take a photo's bytes as they come (seeded fuzz).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp from "sharp";
import { removeDir, startDevice, tempDir } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";
import { metadataKeywords } from "../../src/client/photos/keywords.js";

/** An IIM dataset of record 2: 0x1C, 2, dataset, 16-bit length, data. */
function dataset(id: number, data: Buffer): Buffer {
  const head = Buffer.from([0x1c, 2, id, 0, 0]);
  head.writeUInt16BE(data.length & 0xffff, 3);
  return Buffer.concat([head, data]);
}

/** `jpeg` with IPTC datasets in an APP13 Photoshop IRB (resource 0x0404), as photo managers write them. */
function withIptc(jpeg: Buffer, iim: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt32BE(iim.length);
  const body = Buffer.concat([Buffer.from("Photoshop 3.0\0"), Buffer.from("8BIM"), Buffer.from([0x04, 0x04, 0, 0]), size, iim, Buffer.alloc(iim.length % 2)]);
  const marker = Buffer.alloc(4);
  marker.writeUInt16BE(0xffed, 0);
  marker.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), marker, body, jpeg.subarray(2)]);
}

const xmpSubject = (words: string[]): string =>
  '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
  '<rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:subject><rdf:Bag>' +
  words.map((w) => `<rdf:li>${w}</rdf:li>`).join("") +
  "</rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>";

test("collection use with KEYWORDS: only the photos tagged with one of them reach the card", async (t) => {
  const dev = await startDevice();
  t.after(() => dev.stop());
  const photos = await tempDir("framefi-keywords-");
  t.after(() => removeDir(photos));
  const plain = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#468" } })
    .jpeg()
    .toBuffer();
  await writeFile(join(photos, "iptc.jpg"), withIptc(plain, Buffer.concat([dataset(25, Buffer.from("Family")), dataset(25, Buffer.from("Snow"))])));
  const tagged = (words: string[]): Promise<Buffer> => sharp(plain).withXmp(xmpSubject(words)).jpeg().toBuffer();
  await writeFile(join(photos, "xmp.jpg"), await tagged(["Winter &amp; ice"]));
  await writeFile(join(photos, "summer.jpg"), await tagged(["beach"]));
  await writeFile(join(photos, "untagged.jpg"), plain);
  await writeFile(join(photos, "notes.txt"), "snow");

  const cwd = await tempDir("framefi-keywords-cwd-");
  t.after(() => removeDir(cwd));
  await writeFile(join(cwd, ".env"), `[collection winter]\nSOURCE=${photos}\nKEYWORDS="snow, Winter & ice"\n`);
  const env = { FRAMEFI_DEVICE: `127.0.0.1:${dev.port}`, FRAMEFI_FTP_PORT: String(dev.ftpPort), XDG_CACHE_HOME: join(cwd, "cache") };
  const r = await framefi(["collection", "use", "winter"], { cwd, env });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual((await readdir(dev.card)).sort(), ["iptc.jpg", "xmp.jpg"]);

  await writeFile(join(cwd, ".env"), `[collection winter]\nSOURCE=${photos}\nKEYWORDS=snow,,ice\n`);
  const bad = await framefi(["collection", "use", "winter"], { cwd, env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /\[collection winter\]: KEYWORDS is a comma-separated list of keywords of 1 to 64 characters, got ""; fix it\./);
});

test("fuzz: the keyword readers give short printable lower-case keywords, a bounded number, and never throw", () => {
  assert.deepEqual(
    [
      ...metadataKeywords(
        Buffer.concat([dataset(25, Buffer.from(" Snow ")), dataset(5, Buffer.from("title"))]),
        Buffer.from(xmpSubject(["A&amp;B", "x\u0007y"])),
      ),
    ],
    ["snow", "a&b", "xy"],
  );
  const seed = fuzzSeed(36);
  const rnd = seeded(seed);
  const XMP = ["<dc:subject>", "</dc:subject>", "<rdf:li>", "</rdf:li>", "<rdf:Bag>", "&amp;", "&lt;", "<", ">", "Snow", "\u202e", "\0", " "];
  for (let n = 0, cases = fuzzCases(2000); n < cases; n++) {
    const iptc = Buffer.concat(
      Array.from({ length: rnd.int(8) }, () => (rnd.int(2) ? dataset(rnd.pick([25, 25, 90, 0]), rnd.bytes(rnd.int(90))) : rnd.bytes(rnd.int(8)))),
    );
    const xmp = Buffer.from(Array.from({ length: rnd.int(20) }, () => rnd.pick(XMP)).join(""));
    const words = metadataKeywords(iptc, xmp);
    assert.ok(words.size <= 256, `seed ${seed} case ${n}`);
    for (const w of words) assert.match(w, /^[^\0-\x1f\x7f-\x9f]{1,64}$/u, `seed ${seed} case ${n}: ${JSON.stringify(w)}`);
    for (const w of words) assert.equal(w, w.toLowerCase());
  }
});
