// File transfers: downloads stream from disk; uploads go into a card write (a temp file under an internal name)
// that lands by an atomic rename once complete.
import { createReadStream } from "node:fs";
import type { Socket } from "node:net";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { CardError, type CardWrite } from "../card/card.js";

const DRAIN_LIMIT = 16 * 1024 * 1024;
/**
 * How long an upload that replaces a file waits, after its data connection ended, for the control connection
 * to close too. A client killed mid-upload closes both, but its control close arrives up to a few
 * milliseconds after the end of data (measured with curl and lftp, kill -9).
 */
const REPLACE_GRACE_MS = 25;

/** The data connection closed before the size the client announced with ALLO had arrived (reply 426). */
export class ShortUploadError extends Error {
  override readonly name = "ShortUploadError";
  readonly code = "short-upload";
}

/**
 * A pass-through that claims each chunk's bytes on the card and fails with CardError once the upload does not fit
 * (on the card, or in the largest file it holds). It first discards up to DRAIN_LIMIT more bytes so that a client
 * still sending (curl does not read replies while it sends) finishes and sees the 552 reply rather than a reset
 * connection. `count` hears of every byte kept.
 */
function meter(write: CardWrite, count: (bytes: number) => void): Transform {
  let refused: CardError | undefined;
  let discarded = 0;
  const full = (): CardError =>
    new CardError(refused!.code, refused!.code === "too-big" ? "The card cannot hold a file this big (FAT32: under 4 GiB)." : "Not enough space on the card.", { cause: refused });
  return new Transform({
    transform: (chunk: Buffer, _enc, done) => {
      if (!refused) {
        try {
          write.grow(chunk.length);
          count(chunk.length);
          return done(null, chunk);
        } catch (e) {
          if (!(e instanceof CardError)) return done(e as Error);
          refused = e;
        }
      }
      discarded += chunk.length;
      done(discarded > DRAIN_LIMIT ? full() : null);
    },
    flush: (done) => done(refused ? full() : null),
  });
}

export async function sendFile(real: string, offset: number, socket: Socket, signal: AbortSignal): Promise<void> {
  await pipeline(createReadStream(real, { start: offset, highWaterMark: 256 * 1024 }), socket, { signal });
}

export interface Receive {
  /** Whether a file is already there: then the upload waits REPLACE_GRACE_MS before replacing it. */
  replaces: boolean;
  /** Bytes the client announced it would send (ALLO); fewer arriving means it died mid-upload. */
  announced?: number | undefined;
}

/**
 * Receives an upload into `write` and commits it when complete; the caller aborts the write on failure, so the
 * target is untouched. No fsync before the rename: it cost 3–4× on many small files (see bench/ftp.bench.ts),
 * and vsftpd does not sync either.
 */
export async function receiveFile(write: CardWrite, socket: Socket, signal: AbortSignal, opts: Receive): Promise<number> {
  let received = 0;
  const both = AbortSignal.any([signal, write.signal]);
  await pipeline(socket, meter(write, (n) => (received += n)), write.sink(1024 * 1024), { signal: both });
  // In stream mode the end of data means "complete", but a client that died also closes its data connection; its
  // control connection closes just after, which aborts us. A new file only waits for one more poll of the sockets
  // (a mirror of many files must not pay the grace); a replacement waits longer.
  if (opts.replaces) await sleep(REPLACE_GRACE_MS, undefined, { signal: both });
  else await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
  both.throwIfAborted();
  if (opts.announced !== undefined && received !== opts.announced) {
    throw new ShortUploadError(`Upload incomplete: ${received} of the ${opts.announced} bytes announced with ALLO arrived; the file was not changed.`);
  }
  await write.commit();
  return received;
}
