// File transfers: downloads stream from disk; uploads go into a card write (a temp file under an internal name)
// that lands by an atomic rename once complete.
import { createReadStream } from "node:fs";
import type { Socket } from "node:net";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { CardError, type CardWrite } from "../card/card.js";
import { Reply } from "./replies.js";

const DRAIN_LIMIT = 16 * 1024 * 1024;
/** Bytes gathered from the data connection before they go to the card in one write (a 200 KB photo lands in one). */
const WRITE_BATCH = 256 * 1024;
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
  const received = await receiveData(write, socket, signal);
  // In stream mode the end of data means "complete", but a client that died also closes its data connection; its
  // control connection closes just after, which aborts us. A new file only waits for one more poll of the sockets
  // (a mirror of many files must not pay the grace); a replacement waits longer.
  if (opts.replaces) await sleep(REPLACE_GRACE_MS, undefined, { signal });
  else await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
  signal.throwIfAborted();
  write.signal.throwIfAborted();
  if (opts.announced !== undefined && received !== opts.announced) {
    throw new ShortUploadError(`Upload incomplete: ${received} of the ${opts.announced} bytes announced with ALLO arrived; the file was not changed.`);
  }
  await write.commit();
  return received;
}

/**
 * Reads the data connection to its end into `write`, claiming each chunk's bytes on the card, and resolves with
 * the bytes kept. Chunks are gathered up to WRITE_BATCH and written at once. Once the
 * upload does not fit (on the card, or in the largest file it holds) it fails with CardError, but first discards up
 * to DRAIN_LIMIT more bytes so that a client still sending (curl does not read replies while it sends) finishes
 * and sees the 552 reply rather than a reset connection.
 */
function receiveData(write: CardWrite, socket: Socket, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    let batch: Buffer[] = [];
    let batched = 0;
    let received = 0;
    let refused: CardError | undefined;
    let discarded = 0;
    const flush = (): void => {
      if (batched === 0) return;
      const chunks = batch;
      batch = [];
      batched = 0;
      write.put(chunks);
    };
    const full = (): CardError =>
      new CardError(refused!.code, refused!.code === "too-big" ? "The card cannot hold a file this big (FAT32: under 4 GiB)." : "Not enough space on the card.", { cause: refused });
    const settle = (failure?: unknown): void => {
      socket.off("data", onData).off("end", onEnd).off("error", settle).off("close", onClose);
      signal.removeEventListener("abort", onAbort);
      write.signal.removeEventListener("abort", onAbort);
      if (failure === undefined) return resolve(received);
      socket.destroy();
      reject(failure);
    };
    const onData = (chunk: Buffer): void => {
      if (!refused) {
        try {
          write.grow(chunk.length);
        } catch (e) {
          if (!(e instanceof CardError)) return settle(e);
          refused = e;
        }
      }
      if (refused) {
        discarded += chunk.length;
        if (discarded > DRAIN_LIMIT) settle(full());
        return;
      }
      received += chunk.length;
      batch.push(chunk);
      batched += chunk.length;
      if (batched < WRITE_BATCH) return;
      try {
        flush();
      } catch (e) {
        settle(e);
      }
    };
    const onEnd = (): void => {
      if (refused) return settle(full());
      try {
        flush();
      } catch (e) {
        return settle(e);
      }
      settle();
    };
    const onClose = (): void => settle(new Reply(426, "Data connection lost; transfer aborted."));
    const onAbort = (): void => settle(signal.aborted ? signal.reason : write.signal.reason);
    if (signal.aborted || write.signal.aborted) return onAbort();
    socket.on("data", onData).on("end", onEnd).on("error", settle).on("close", onClose);
    signal.addEventListener("abort", onAbort);
    write.signal.addEventListener("abort", onAbort);
  });
}
