// File transfers: downloads stream from disk; uploads go into a card write (a temp file under an internal name)
// that lands by an atomic rename once complete. In stream mode the data connection carries one file and its end
// ends the file; in block mode (MODE B) the file ends with the EOF block and the connection stays for the next.
// A transfer is stopped early (ABOR, the session closing) by destroying its data connection: every step here
// watches the socket, so no abort signal is needed (one cost as much CPU as the rest of a small file's bookkeeping).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { finished } from "node:stream/promises";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { BlockDecoder, BlockFormatError, END_BLOCK, toBlocks } from "../../shared/ftp-blocks.js";
import { CardError, type CardFileSystem, type CardWrite } from "../card/card.js";
import type { DataSocket } from "./data.js";
import { DeviceError } from "../errors.js";
import { Reply } from "./replies.js";
import { writeAll } from "../../shared/socket-write.js";

const DRAIN_LIMIT = 16 * 1024 * 1024;
/**
 * How long an upload that replaces a file waits, after its data connection ended, for the control connection
 * to close too. A client killed mid-upload closes both, but its control close arrives up to a few
 * milliseconds after the end of data (measured with curl and lftp, kill -9).
 */
const REPLACE_GRACE_MS = 25;

/** Bytes read from the file at once; a download alternates between two such buffers. */
const READ_CHUNK = 1024 * 1024;
/** native/sendfile-helper.c, built at install where there is a C compiler. */
const SENDFILE_HELPER = fileURLToPath(new URL("../../../native/sendfile-helper", import.meta.url));
/** Downloads from this size on go through the sendfile helper: starting it costs about what copying 4 MiB does. */
const KERNEL_SEND_MIN = 8 * 1024 * 1024;

/**
 * Sends the card's file at `real`, of `size` bytes, from `offset`. In stream mode a large file goes through the sendfile helper
 * (the kernel sends it, as vsftpd's does); otherwise each chunk is read while the one before it goes out, into two
 * buffers used in turn (a fresh buffer per chunk made the kernel fault in new pages for every megabyte, most of a
 * download's time here). Resolves once the client has all of it; a connection closed or destroyed first rejects
 * (the reply is 426).
 */
export async function sendFile(card: CardFileSystem, real: string, size: number, offset: number, socket: Socket, blocks: boolean): Promise<void> {
  if (!blocks && size - offset >= KERNEL_SEND_MIN && existsSync(SENDFILE_HELPER) && (await sendByKernel(real, offset, socket))) {
    return endConnection(socket);
  }
  const buffers: Buffer[] = [];
  const file = await card.openRead(real);
  let sending: Promise<void> = Promise.resolve();
  try {
    for (let position = offset, turn = 0; ; turn ^= 1) {
      const buffer = (buffers[turn] ??= Buffer.allocUnsafeSlow(READ_CHUNK));
      const { bytesRead } = await file.read(buffer, 0, READ_CHUNK, position);
      // The other buffer is free again once its bytes are with the kernel.
      await sending;
      if (socket.destroyed) throw new Reply(426, "Data connection lost; transfer aborted.");
      if (bytesRead === 0) break;
      position += bytesRead;
      const chunk = buffer.subarray(0, bytesRead);
      sending = sendBuffers(socket, blocks ? toBlocks(chunk) : [chunk]);
      sending.catch(() => undefined); // seen by the next await; a read failure meanwhile must not leave it unhandled
    }
  } finally {
    await file.close();
  }
  return blocks ? sendBuffers(socket, [END_BLOCK]) : endConnection(socket);
}

/**
 * Runs the sendfile helper with the data connection as its fd 3; resolves with true once it sent the file from
 * `offset` to its end, with false when it could not start (not executable, built for another machine): nothing was
 * sent then, and Node sends the file. The connection closed or destroyed meanwhile (ABOR, the session ending) kills
 * it: it holds the socket open otherwise.
 */
function sendByKernel(real: string, offset: number, socket: Socket): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn(SENDFILE_HELPER, [real, String(offset), String(process.pid)], { stdio: ["ignore", "ignore", "pipe", socket] });
    let why = "";
    child.stderr?.setEncoding("utf8").on("data", (text: string) => (why = (why + text).slice(-300)));
    const stop = (): boolean => child.kill("SIGKILL");
    socket.once("close", stop);
    child.once("error", (e) => {
      socket.off("close", stop);
      if (child.pid === undefined) resolve(false);
      else reject(e);
    });
    child.once("close", (code) => {
      socket.off("close", stop);
      if (code === 0 && !socket.destroyed) resolve(true);
      else if (code === 1) reject(new Reply(451, `Cannot read the file from the card (${why.trim().split("\n").at(-1)}); transfer aborted.`));
      else reject(new Reply(426, "Data connection lost; transfer aborted."));
    });
  });
}

/** A listing's text: the whole connection in stream mode, blocks ending with EOF in block mode. */
export function sendText(text: string, socket: Socket, blocks: boolean): Promise<void> {
  return blocks ? sendBuffers(socket, [...toBlocks(Buffer.from(text)), END_BLOCK]) : endConnection(socket, text);
}

/**
 * Stream mode: the end of the connection ends the file. Resolves once the end has gone out; a socket destroyed
 * before (the client hung up, the transfer was stopped) rejects — end()'s own callback never comes then.
 */
async function endConnection(socket: Socket, last?: string): Promise<void> {
  if (last === undefined) socket.end();
  else socket.end(last);
  await finished(socket, { readable: false });
}

/** Writes `buffers` at once; resolves when the kernel has them (which paces a download); a lost connection is 426. */
function sendBuffers(socket: Socket, buffers: Buffer[]): Promise<void> {
  return writeAll(socket, buffers, () => new Reply(426, "Data connection lost; transfer aborted."));
}

export interface Receive {
  /** Whether a file is already there: then the upload waits REPLACE_GRACE_MS before replacing it. */
  replaces: boolean;
  /** Bytes the client announced it would send (ALLO); fewer arriving means it died mid-upload. */
  announced?: number | undefined;
  /** Block mode: the EOF block ends the file, and the connection is left open (paused) for the next transfer. */
  blocks?: boolean;
}

/**
 * Receives an upload into `write` and commits it when complete; the caller aborts the write on failure, so the
 * target is untouched. No fsync before the rename: it cost 3–4× on many small files (see bench/ftp.bench.ts),
 * and vsftpd does not sync either.
 */
export async function receiveFile(write: CardWrite, socket: DataSocket, opts: Receive): Promise<number> {
  const received = await receiveData(write, socket, opts.blocks ? new BlockDecoder() : undefined);
  // In stream mode the end of data means "complete", but a client that died also closes its data connection; its
  // control connection closes just after, which stops the transfer (destroying this socket). A new file only
  // waits for one more poll of the sockets (a mirror of many files must not pay the grace); a replacement waits
  // longer. Block mode's EOF block is explicit.
  if (!opts.blocks) {
    if (opts.replaces) await sleep(REPLACE_GRACE_MS);
    else await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
  }
  if (socket.destroyed) throw new Reply(426, "Data connection lost; transfer aborted.");
  if (opts.announced !== undefined && received !== opts.announced) {
    throw new DeviceError("DEVICE_SHORT_UPLOAD", { received, announced: opts.announced });
  }
  await write.commit();
  return received;
}

/**
 * Reads the file from the data connection into `write` — to the connection's end, or with `blocks` to the EOF
 * block (then the connection is paused with what followed left waiting) — claiming and writing each read's bytes
 * as it comes (a read is valid only until the next), and resolves with the bytes kept. Once the upload does not
 * fit (on the card, or in the largest file it holds) it fails with CardError, but first discards up to
 * DRAIN_LIMIT more bytes so that a client still sending (curl does not read replies while it sends) finishes
 * and sees the 552 reply rather than a reset connection.
 */
function receiveData(write: CardWrite, socket: DataSocket, blocks: BlockDecoder | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let refused: CardError | undefined;
    let discarded = 0;
    const full = (): CardError => new CardError(refused!.code === "DEVICE_TOO_BIG" ? "DEVICE_FILE_TOO_BIG" : "DEVICE_CARD_FULL", {}, { cause: refused });
    const settle = (failure?: unknown): void => {
      socket.intake = undefined;
      socket.off("end", onEnd).off("error", settle).off("close", onClose);
      if (failure === undefined) return resolve(received);
      socket.destroy();
      reject(failure);
    };
    /** Keeps one read's pieces of the file; false once the transfer settled. */
    const keep = (pieces: Buffer[]): boolean => {
      let bytes = 0;
      for (const piece of pieces) bytes += piece.length;
      try {
        if (!refused) {
          try {
            write.grow(bytes);
          } catch (e) {
            if (!(e instanceof CardError)) throw e;
            refused = e;
          }
        }
        if (refused) {
          discarded += bytes;
          if (discarded <= DRAIN_LIMIT) return true;
          throw full();
        }
        received += bytes;
        if (bytes > 0) write.put(pieces);
        return true;
      } catch (e) {
        settle(e);
        return false;
      }
    };
    const onRead = (bytes: Buffer): void => {
      if (!blocks) return void keep([bytes]);
      let decoded: ReturnType<BlockDecoder["push"]>;
      try {
        decoded = blocks.push(bytes);
      } catch (e) {
        return settle(e instanceof BlockFormatError ? new Reply(426, `${e.message} Transfer aborted.`) : e);
      }
      if (!keep(decoded.data) || !blocks.ended) return;
      socket.pause();
      if (decoded.rest) socket.waiting = Buffer.from(decoded.rest);
      finish();
    };
    const finish = (): void => settle(refused ? full() : undefined);
    const onEnd = (): void => (blocks ? settle(new Reply(426, "The data connection ended before the file's EOF block; transfer aborted.")) : finish());
    const onClose = (): void => settle(new Reply(426, "Data connection lost; transfer aborted."));
    if (socket.destroyed) return onClose();
    socket.on("end", onEnd).on("error", settle).on("close", onClose);
    socket.intake = onRead;
    const early = socket.waiting;
    socket.waiting = undefined;
    if (early) onRead(early);
    if (socket.intake !== onRead) return; // the early bytes held the whole file, or failed it
    // 'end' came already if the client closed before the transfer began
    if (socket.readableEnded) onEnd();
    else socket.resume();
  });
}
