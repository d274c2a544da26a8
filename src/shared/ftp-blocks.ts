// FTP block mode (RFC 959 §3.4.2, `MODE B`): each block is a descriptor byte, a 16-bit big-endian byte count and
// that many bytes; a block whose descriptor has the EOF bit ends the file. Unlike stream mode, where closing the
// data connection is the end of a file, the connection stays open for the next transfer, and an end of file is
// never mistaken for a client that died mid-upload.

/** Descriptor bits (RFC 959): end of record, end of file, suspected errors, restart marker. */
export const EOR = 128;
export const EOF = 64;
export const SUSPECT = 32;
export const RESTART = 16;
const KNOWN = EOR | EOF | SUSPECT | RESTART;
const MAX_BLOCK = 0xffff;

/** The closing block: no bytes, EOF set. */
export const END_BLOCK: Buffer = Buffer.from([EOF, 0, 0]);

/** `data` as blocks (headers and slices of `data`, no copy), none with EOF set. */
export function toBlocks(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += MAX_BLOCK) {
    const piece = data.subarray(at, Math.min(at + MAX_BLOCK, data.length));
    out.push(Buffer.from([0, piece.length >> 8, piece.length & 0xff]), piece);
  }
  return out;
}

/** A block whose descriptor has bits RFC 959 does not define: the sender is not speaking block mode. */
export class BlockFormatError extends Error {
  override readonly name = "BlockFormatError";
}

/** Reads a block-mode byte stream chunk by chunk: the file's bytes, until the EOF block. */
export class BlockDecoder {
  private readonly header = Buffer.alloc(3);
  private headerBytes = 0;
  private descriptor = 0;
  /** Bytes of the current block still to come; undefined while its header is being read. */
  private left: number | undefined;
  ended = false;

  /**
   * The file bytes in `chunk` (slices, no copy; restart markers left out) and, once the EOF block is complete,
   * whatever followed it. Throws BlockFormatError on a descriptor with undefined bits.
   */
  push(chunk: Buffer): { data: Buffer[]; rest: Buffer | undefined } {
    const data: Buffer[] = [];
    let at = 0;
    while (at < chunk.length && !this.ended) {
      if (this.left === undefined) {
        this.header[this.headerBytes++] = chunk[at++]!;
        if (this.headerBytes < 3) continue;
        this.headerBytes = 0;
        this.descriptor = this.header[0]!;
        if ((this.descriptor & ~KNOWN) !== 0)
          throw new BlockFormatError(`Malformed block-mode data: descriptor ${this.descriptor} is not one RFC 959 defines.`);
        this.left = this.header.readUInt16BE(1);
      } else {
        const n = Math.min(this.left, chunk.length - at);
        if ((this.descriptor & RESTART) === 0) data.push(chunk.subarray(at, at + n));
        this.left -= n;
        at += n;
      }
      if (this.left === 0) {
        this.left = undefined;
        if (this.descriptor & EOF) this.ended = true;
      }
    }
    return { data, rest: this.ended && at < chunk.length ? chunk.subarray(at) : undefined };
  }
}
