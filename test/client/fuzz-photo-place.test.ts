// The readers of a photo's place and caption take the photo's bytes as they come: IPTC IIM datasets, XMP text,
// EXIF GPS tags. Seeded fuzz: each gives a short printable name or undefined, never throws; and a caption is
// bounded and printable whatever the metadata holds (caption.ts escapes it for Pango).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";
import { gpsPosition, iptcPlace, nearestTown, xmpPlace } from "../../src/client/photos/place.js";
import { captionText } from "../../src/client/photos/caption.js";

const PRINTABLE_SHORT = /^[^\0-\x1f\x7f-\x9f]{1,200}$/;

/** An IIM dataset: 0x1C, record, dataset, 16-bit length, data. */
function dataset(record: number, id: number, data: Buffer): Buffer {
  const head = Buffer.from([0x1c, record, id, 0, 0]);
  head.writeUInt16BE(data.length & 0xffff, 3);
  return Buffer.concat([head, data]);
}

test("the place: IPTC City and Country, XMP photoshop:City, the town nearest a GPS position", async () => {
  assert.equal(
    iptcPlace(Buffer.concat([dataset(2, 5, Buffer.from("title")), dataset(2, 90, Buffer.from("Kraków")), dataset(2, 101, Buffer.from("Poland"))])),
    "Kraków, Poland",
  );
  assert.equal(xmpPlace(Buffer.from('<rdf:Description photoshop:City="Lyon"><photoshop:Country>France</photoshop:Country>')), "Lyon, France");
  assert.deepEqual(
    gpsPosition({ bigEndian: false, GPSInfo: { GPSLatitude: [45, 45, 0], GPSLatitudeRef: "N", GPSLongitude: [4, 50, 0], GPSLongitudeRef: "E" } }),
    { lat: 45.75, lon: 4 + 50 / 60 },
  );
  assert.equal(await nearestTown({ lat: 45.75, lon: 4.84 }), "Lyon, FR");
  assert.equal(await nearestTown({ lat: 0, lon: -30 }), undefined, "mid-Atlantic: no town");
});

test("fuzz: IPTC, XMP and GPS readers give a short printable name or nothing, and never throw", async () => {
  const seed = fuzzSeed(35);
  const rnd = seeded(seed);
  const cases = fuzzCases(3000);
  const XMP = ['photoshop:City="', "<photoshop:City>", "</photoshop:City>", 'photoshop:Country="', '"', "&amp;", "&lt;", "<", ">", "Paris", "\u202e", "\0"];
  for (let n = 0; n < cases; n++) {
    const what = `seed ${seed} case ${n}`;
    const parts = Array.from({ length: rnd.int(6) }, () =>
      rnd.int(2) ? dataset(rnd.pick([1, 2, 2, 2]), rnd.pick([90, 101, 5, 0]), rnd.bytes(rnd.int(80))) : rnd.bytes(rnd.int(8)),
    );
    const iptc = iptcPlace(Buffer.concat(parts));
    assert.ok(iptc === undefined || PRINTABLE_SHORT.test(iptc), `${what}: IPTC ${JSON.stringify(iptc)}`);
    const xmp = xmpPlace(Buffer.from(Array.from({ length: rnd.int(12) }, () => rnd.pick(XMP)).join("")));
    assert.ok(xmp === undefined || PRINTABLE_SHORT.test(xmp), `${what}: XMP ${JSON.stringify(xmp)}`);
    const num = (): unknown => rnd.pick([rnd.int(200), -1, Number.NaN, Number.POSITIVE_INFINITY, "12", null]);
    const gps = gpsPosition({
      bigEndian: false,
      GPSInfo: {
        GPSLatitude: rnd.int(4) ? [num(), num(), num()] : num(),
        GPSLatitudeRef: rnd.pick(["N", "S", "X", 1]),
        GPSLongitude: [num(), num(), num()],
        GPSLongitudeRef: rnd.pick(["E", "W"]),
      },
    } as never);
    if (gps) {
      assert.ok(Math.abs(gps.lat) <= 90 && Math.abs(gps.lon) <= 180, `${what}: GPS ${JSON.stringify(gps)}`);
      const town = await nearestTown(gps);
      assert.ok(town === undefined || PRINTABLE_SHORT.test(town), `${what}: town ${town}`);
    }
    const caption = captionText(
      { date: true, place: true, format: "%e %B %Y" },
      rnd.int(2) ? rnd.int(4e12) : undefined,
      rnd.bytes(rnd.int(300)).toString("utf8"),
    );
    assert.ok(caption === undefined || ([...caption].length <= 80 && PRINTABLE_SHORT.test(caption)), `${what}: caption ${JSON.stringify(caption)}`);
  }
});
