// The firmware's text font: font 1 of TFT_eSPI, the classic 5x7 "GLCD" font of Adafruit GFX (glcdfont.c), drawn
// in 6x8 cells. Only printable ASCII is kept (the screens show nothing else); any other character draws as "?".
// Each glyph is 5 bytes, 40 bits read row by row from the most significant bit: 8 rows of 5 pixels.

export const GLYPH_WIDTH = 5;
export const GLYPH_HEIGHT = 8;

const FIRST = 32;
const LAST = 126;

const GLYPHS =
  "00000000002108420080529400000052beafa94023e8e2f880c644444c6045288ac9a03188800000" +
  "11108410404104211100255df754800109f2100000000318880001f0000000000018c00044444000" +
  "74675cc5c023084211c07442e843e0f84460c5c011952f8840fc3c10c5c03a21e8c5c0f842222200" +
  "7462e8c5c07462f08b80000802000000080211000888820820003e0f800041041111007442620080" +
  "746b7b41e022a31fc620f463e8c7c074610845c0f46318c7c0fc21e843e0fc21e842007c6109c5e0" +
  "8c63f8c62071084211c038842149808ca98a4a2084210843e08eeb5ac6208c7359c620746318c5c0" +
  "f463e8420074631ac9a0f463ea4a207460e0c5c0fd484210808c6318c5c08c6318a8808c635ad540" +
  "8c544546208c54421080f844e443e07a108421e0041041040078421085e022a200000000000003e0" +
  "630820000000182749e0842d98e6c0001d1845c0085b38cda0001d1fc1c01148e21080001d39b42e" +
  "842d98c62020184211c0100421498084254c524061084211c000355ad6a0002d98c620001d18c5c0" +
  "002d9cda10001b39b421002d984200001f0707c0213e421440002318cda0002318a88000231ad540" +
  "0022a22a20002317862e003e2223e01108821040210802108041082211004544000000";

/** Every glyph's lit pixels as [x, y] pairs (x 0-4, y 0-7), decoded once. */
const PIXELS: ReadonlyArray<ReadonlyArray<readonly [number, number]>> = Array.from({ length: LAST - FIRST + 1 }, (_, i) => {
  const bits = BigInt(`0x${GLYPHS.slice(i * 10, i * 10 + 10)}`);
  const pixels: Array<readonly [number, number]> = [];
  for (let n = 0; n < GLYPH_WIDTH * GLYPH_HEIGHT; n++) {
    if ((bits >> BigInt(39 - n)) & 1n) pixels.push([n % GLYPH_WIDTH, Math.floor(n / GLYPH_WIDTH)]);
  }
  return pixels;
});

/** The lit pixels of `ch`'s glyph as [x, y] pairs, x 0-4 and y 0-7. */
export function glyphPixels(ch: string): ReadonlyArray<readonly [number, number]> {
  const code = ch.charCodeAt(0);
  return PIXELS[code >= FIRST && code <= LAST ? code - FIRST : "?".charCodeAt(0) - FIRST]!;
}
