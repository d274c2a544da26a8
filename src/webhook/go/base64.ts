// Go's base64.StdEncoding.DecodeString, as the reference decodes `base64decode` file contents:
// padding required, CR and LF skipped, anything else outside the alphabet an error; on an error
// the bytes decoded before it are kept (Go returns them along with the error).

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DECODE = new Int16Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

export interface Base64Result {
  data: Buffer;
  /** Go's error text ("illegal base64 data at input byte 4"), when the input is not valid. */
  error?: string;
}

export function goBase64Decode(src: Buffer): Base64Result {
  const out: number[] = [];
  let si = 0;
  const corrupt = (at: number): Base64Result => ({ data: Buffer.from(out), error: `illegal base64 data at input byte ${at}` });
  const skipNewlines = (): void => {
    while (si < src.length && (src[si] === 0x0a || src[si] === 0x0d)) si++;
  };
  while (si < src.length) {
    const q = [0, 0, 0, 0];
    let dlen = 4;
    let trailing: number | undefined;
    for (let j = 0; j < 4; j++) {
      if (si === src.length) {
        if (j === 0) return { data: Buffer.from(out) };
        return corrupt(si - j);
      }
      const c = src[si++]!;
      const v = DECODE[c]!;
      if (v !== -1) {
        q[j] = v;
        continue;
      }
      if (c === 0x0a || c === 0x0d) {
        j--;
        continue;
      }
      if (c !== 0x3d || j < 2) return corrupt(si - 1);
      if (j === 2) {
        skipNewlines();
        if (si === src.length) return corrupt(src.length);
        if (src[si] !== 0x3d) return corrupt(si - 1);
        si++;
      }
      skipNewlines();
      if (si < src.length) trailing = si;
      dlen = j;
      break;
    }
    const val = (q[0]! << 18) | (q[1]! << 12) | (q[2]! << 6) | q[3]!;
    const bytes = [(val >> 16) & 0xff, (val >> 8) & 0xff, val & 0xff];
    out.push(...bytes.slice(0, dlen - 1));
    if (trailing !== undefined) return corrupt(trailing);
  }
  return { data: Buffer.from(out) };
}
