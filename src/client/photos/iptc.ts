// IPTC IIM, record 2 (the application record photo managers write): the values of chosen datasets. sharp gives the
// whole Photoshop IRB, so each 0x1C tag marker is tried in turn; a dataset whose length runs past the end, or uses
// the extended-length form, is skipped. The bytes are untrusted: nothing here throws.

/** The values of `datasets` in record 2, in the file's order (a repeatable dataset, such as Keywords, gives several). */
export function iptcValues(iptc: Buffer | undefined, datasets: readonly number[]): { dataset: number; text: string }[] {
  const out: { dataset: number; text: string }[] = [];
  if (!iptc) return out;
  for (let i = iptc.indexOf(0x1c); i >= 0 && i + 5 <= iptc.length; i = iptc.indexOf(0x1c, i + 1)) {
    const record = iptc[i + 1]!;
    const dataset = iptc[i + 2]!;
    const length = iptc.readUInt16BE(i + 3);
    if (record !== 2 || !datasets.includes(dataset) || length & 0x8000 || i + 5 + length > iptc.length) continue;
    out.push({ dataset, text: iptc.subarray(i + 5, i + 5 + length).toString("utf8") });
  }
  return out;
}
