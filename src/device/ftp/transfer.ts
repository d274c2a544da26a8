// File transfers: downloads stream from disk; uploads land under a hidden temp name, are synced, then renamed.
import { constants, createReadStream } from "node:fs";
import { copyFile, open, rename, rm } from "node:fs/promises";
import type { Socket } from "node:net";
import { basename, dirname, join } from "node:path";
import { Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { partialName } from "./paths.js";
import type { SpaceClaim } from "./types.js";

const DRAIN_LIMIT = 16 * 1024 * 1024;
/**
 * How long an upload that replaces a file waits, after its data connection ended, for the control connection
 * to close too. A client killed mid-upload closes both, but its control close arrives up to a few
 * milliseconds after the end of data (measured with curl and lftp, kill -9).
 */
const REPLACE_GRACE_MS = 25;

/** The card has no room for the upload (reply 552). */
export class SpaceError extends Error {
  override readonly name = "SpaceError";
  readonly code = "no-space";
}

/** The data connection closed before the size the client announced with ALLO had arrived (reply 426). */
export class ShortUploadError extends Error {
  override readonly name = "ShortUploadError";
  readonly code = "short-upload";
}

/**
 * A pass-through that claims each chunk's bytes on the card and fails with SpaceError once the upload does not
 * fit, on the card or in the largest file it holds (`maxBytes`). It first discards up to DRAIN_LIMIT more bytes so
 * that a client still sending (curl does not read replies while it sends) finishes and sees the 552 reply rather
 * than a reset connection.
 */
function meter(claim: SpaceClaim, maxBytes: number): Transform {
  let total = 0;
  let discarded = -1;
  const full = (): SpaceError =>
    new SpaceError(total > maxBytes ? "The card cannot hold a file this big (FAT32: under 4 GiB)." : "Not enough space on the card.");
  return new Transform({
    transform: (chunk: Buffer, _enc, done) => {
      total += chunk.length;
      if (discarded < 0 && (total > maxBytes || !claim.grow(chunk.length))) discarded = 0;
      if (discarded < 0) return done(null, chunk);
      discarded += chunk.length;
      done(discarded > DRAIN_LIMIT ? full() : null);
    },
    flush: (done) => done(discarded >= 0 ? full() : null),
  });
}

export async function sendFile(real: string, offset: number, socket: Socket, signal: AbortSignal): Promise<void> {
  await pipeline(createReadStream(real, { start: offset, highWaterMark: 256 * 1024 }), socket, { signal });
}

export interface Upload {
  /** Where the finished file goes (its parent folder is inside the card). */
  target: string;
  /** The existing file whose first `keep` bytes are kept (the target, or where its symlink leads). */
  source: string;
  /** Existing bytes to keep at the start: the REST offset for STOR, the current size for APPE; 0 for a new file. */
  keep: number;
  /** The largest file the card holds (Infinity when unlimited). */
  maxBytes: number;
  /** Whether a file is already there: then the upload waits REPLACE_GRACE_MS before replacing it. */
  replaces: boolean;
  /** Bytes the client announced it would send (ALLO); fewer arriving means it died mid-upload. */
  announced?: number | undefined;
}

/**
 * Receives an upload into a hidden temp file next to the target and renames it into place when complete.
 * On any failure or abort the temp file is removed and the target is untouched. No fsync before the rename:
 * it cost 3–4× on many small files (see bench/ftp.bench.ts), and vsftpd does not sync either.
 */
export async function receiveFile(up: Upload, socket: Socket, claim: SpaceClaim, signal: AbortSignal): Promise<number> {
  const temp = join(dirname(up.target), partialName(basename(up.target)));
  try {
    if (up.keep > 0) await copyFile(up.source, temp, constants.COPYFILE_EXCL);
    const fh = await open(temp, up.keep > 0 ? "r+" : "wx");
    let received = 0;
    try {
      if (up.keep > 0) await fh.truncate(up.keep);
      let position = up.keep;
      const onError = (e: NodeJS.ErrnoException): Error => (e.code === "ENOSPC" ? new SpaceError("The card's filesystem is full.") : e);
      // writev: chunks that arrive while a write is on disk go out together in one system call.
      const sink = new Writable({
        highWaterMark: 1024 * 1024,
        writev: (chunks, done) => {
          const buffers = chunks.map((c) => c.chunk as Buffer);
          const length = buffers.reduce((n, b) => n + b.length, 0);
          fh.writev(buffers, position).then(
            () => {
              position += length;
              received += length;
              done();
            },
            (e: NodeJS.ErrnoException) => done(onError(e)),
          );
        },
      });
      await pipeline(socket, meter(claim, up.maxBytes - up.keep), sink, { signal });
      // In stream mode the end of data means "complete", but a client that died also closes its data
      // connection; its control connection closes just after, which aborts us. A new file only waits for one
      // more poll of the sockets (a mirror of many files must not pay the grace); a replacement waits longer.
      if (up.replaces) await sleep(REPLACE_GRACE_MS, undefined, { signal });
      else await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
      signal.throwIfAborted();
      if (up.announced !== undefined && received !== up.announced) {
        throw new ShortUploadError(`Upload incomplete: ${received} of the ${up.announced} bytes announced with ALLO arrived; the file was not changed.`);
      }
    } finally {
      await fh.close();
    }
    await rename(temp, up.target);
    return received;
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
}
