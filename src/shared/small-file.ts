// Reading a file the user names that should be small (a secret-file, an ip-list-file, a
// -test-request file): a regular file only, at most `max` bytes. readFileSync reads a device such
// as /dev/zero until memory runs out, and blocks on a FIFO with no writer for ever; this does neither.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/** The file's bytes; throws an Error saying why not (the system's, or "not a regular file", or too large). */
export function readSmallFile(path: string, max: number): Buffer {
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused just below).
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error("not a regular file");
    if (st.size > max) throw new Error(`${st.size} bytes, more than ${max}`);
    // In pieces, counted: the file may grow while it is read.
    const parts: Buffer[] = [];
    let got = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 16, max + 1 - got));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return Buffer.concat(parts, got);
      parts.push(chunk.subarray(0, n));
      got += n;
      if (got > max) throw new Error(`more than ${max} bytes`);
    }
  } finally {
    closeSync(fd);
  }
}
