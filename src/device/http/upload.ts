// POST /upload (multipart, as the firmware) and PUT /upload?filename= (raw body, as the firmware's docs show).
// Streamed to a temp file on the card and renamed into place only when the whole request arrived.
// Any failure, a dropped connection or a switch to MSC mode removes what was written.
import busboy from "busboy";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { bodies, errors } from "../../shared/firmware.js";
import { CardError, type Card, type CardWrite } from "../card/card.js";
import { acceptBody, sendErrorAndClose, sendJson } from "./answers.js";

const CHUNK = 1 << 20;
/**
 * Files one multipart upload may carry. Each is held as a temp file until all land (one descriptor open at a time),
 * so this bounds what one request, unauthenticated too, makes the card hold; larger batches go in several uploads.
 */
const MAX_FILES = 1000;

/** The multipart body could not be parsed. */
class MalformedUpload extends Error {}
const MSC_MESSAGE = errors.uploadInMsc;
const UPLOAD_SUCCESS = bodies.uploaded;

/** The upload carries more than MAX_FILES files. */
class TooManyFiles extends Error {}

/** The body stopped before its end: the client went away or was too slow. */
class UploadCut extends Error {
  override name = "UploadCut";
  readonly code = "upload-cut";
}

function statusFor(e: unknown): { status: number; message: string } {
  if (e instanceof CardError) {
    if (e.code === "no-space" || e.code === "too-big") return { status: 507, message: e.message };
    return { status: 400, message: e.message };
  }
  if (e instanceof UploadCut) return { status: 400, message: `The upload was cut off: ${e.message}; nothing was stored.` };
  if (e instanceof TooManyFiles)
    return { status: 413, message: `Too many files in one upload: at most ${MAX_FILES}; send them in several uploads. Nothing was stored.` };
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOSPC") return { status: 507, message: "Not enough free space on the card's filesystem: the upload was stopped and nothing was stored." };
  if (code === "EDQUOT") return { status: 507, message: "The disk quota is used up: the upload was stopped and nothing was stored." };
  if (code === "ENAMETOOLONG") return { status: 400, message: "Invalid file name: it is too long." };
  if (code === "EACCES" || code === "EPERM" || code === "EROFS")
    return { status: 500, message: `The card folder cannot be written (${code}): check its permissions; nothing was stored.` };
  if (code === "EMFILE" || code === "ENFILE") return { status: 503, message: "The device has too many files open: try again in a moment; nothing was stored." };
  // The system's message names the card's absolute path and the temp file: the code alone is shown.
  return { status: 500, message: `Failed to write the file (${code ?? (e as Error).name}); nothing was stored.` };
}

/** Claims space for each chunk as it passes, so a card that fills up stops the write at once. */
function spaceMeter(write: CardWrite, prepaid: number): Transform {
  let credit = prepaid;
  return new Transform({
    highWaterMark: CHUNK,
    transform(chunk: Buffer, _enc, done) {
      try {
        if (chunk.length > credit) {
          write.grow(chunk.length - credit);
          credit = 0;
        } else credit -= chunk.length;
        done(null, chunk);
      } catch (e) {
        done(e as Error);
      }
    },
  });
}

/**
 * Streams `source` into the write's temp file. The source is piped, not part of the pipeline: a failure (card
 * full, say) stops reading it but leaves the request whole, so it can still be answered.
 */
async function store(source: Readable, write: CardWrite, prepaid: number): Promise<void> {
  const meter = spaceMeter(write, prepaid);
  const cut = (): void => {
    if (!source.readableEnded) meter.destroy(new UploadCut("the connection closed before the whole file arrived"));
  };
  source.once("close", cut);
  source.once("error", cut);
  source.pipe(meter);
  try {
    await pipeline(meter, write.sink(CHUNK), { signal: write.signal });
  } finally {
    source.unpipe(meter);
    source.off("close", cut);
    source.off("error", cut);
  }
}

/** Why a write failed: the card was taken back (a switch to MSC mode, a restart) or `e`. */
function failureOf(cutByCard: boolean, e: unknown): unknown {
  return cutByCard ? new CardError("not-writable", MSC_MESSAGE) : e;
}

/** PUT /upload?filename=NAME with the raw file as the body. */
export async function handleRawUpload(req: IncomingMessage, res: ServerResponse, card: Card, filename: string | null): Promise<void> {
  if (!filename) {
    sendErrorAndClose(req, res, 400, "Missing file name: add ?filename=NAME to the URL.");
    return;
  }
  const length = Number(req.headers["content-length"] ?? NaN);
  let write: CardWrite;
  try {
    write = await card.beginWrite(await card.uploadTarget(filename), { expectedBytes: Number.isFinite(length) ? length : 0 });
  } catch (e) {
    const { status, message } = statusFor(e);
    sendErrorAndClose(req, res, status, message);
    return;
  }
  acceptBody(req, res);
  try {
    await store(req, write, Number.isFinite(length) ? length : 0);
    if (!req.complete) throw new UploadCut("the connection closed before the whole file arrived");
    await card.commitAll([write]);
    sendJson(res, 200, UPLOAD_SUCCESS);
  } catch (e) {
    const cutByCard = write.signal.aborted;
    await write.abort();
    const { status, message } = statusFor(failureOf(cutByCard, e));
    if (!res.destroyed && !req.socket.destroyed) sendErrorAndClose(req, res, status, message);
    else req.socket.destroy();
  }
}

/** POST /upload, multipart/form-data: every part with a filename is a file to store. */
export async function handleMultipartUpload(req: IncomingMessage, res: ServerResponse, card: Card): Promise<void> {
  if (!card.isWritable) {
    sendErrorAndClose(req, res, 400, MSC_MESSAGE);
    return;
  }
  const type = req.headers["content-type"] ?? "";
  if (!/^multipart\/form-data\s*;.*boundary=/i.test(type)) {
    sendErrorAndClose(req, res, 400, "The upload must be multipart/form-data with the file in a part that has a filename (curl -F 'file=@photo.jpg').");
    return;
  }
  const length = Number(req.headers["content-length"] ?? NaN);
  // The body holds the file plus a few hundred bytes of multipart framing: refuse at once what cannot fit.
  if (Number.isFinite(length) && length - 64 * 1024 > card.available()) {
    sendErrorAndClose(req, res, 507, `Not enough free space on the card: ${Math.max(0, card.available())} bytes free, the upload carries about ${length}.`);
    return;
  }

  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, preservePath: true, defParamCharset: "utf8", highWaterMark: CHUNK, fileHwm: CHUNK });
  } catch (e) {
    sendErrorAndClose(req, res, 400, `Malformed multipart request: ${(e as Error).message}.`);
    return;
  }

  const writes: CardWrite[] = [];
  const stored: Promise<void>[] = [];
  let files = 0;
  let failure: unknown;
  let finished = false;
  let chain: Promise<void> = Promise.resolve();
  let signalFailure: () => void = () => undefined;
  const failed = new Promise<"failed">((resolve) => {
    signalFailure = () => resolve("failed");
  });

  const fail = (e: unknown): void => {
    if (failure === undefined) failure = e;
    req.unpipe(parser);
    signalFailure();
  };

  parser.on("file", (_field, stream, info) => {
    // busboy also destroys the file stream with its own error (a body cut before its closing boundary): the
    // parser's "error" below reports it, but the stream needs a listener from its first moment, or that error
    // ends the process while this file still waits for the one before it.
    stream.on("error", () => undefined);
    if (++files > MAX_FILES) {
      stream.resume();
      fail(new TooManyFiles());
      return;
    }
    // Files are stored one after the other, in the order they arrive.
    const done = chain.then(async () => {
      if (failure !== undefined) {
        stream.resume();
        return;
      }
      let write: CardWrite;
      try {
        write = await card.beginWrite(await card.uploadTarget(info.filename ?? ""));
      } catch (e) {
        stream.resume();
        fail(e);
        return;
      }
      if (finished) {
        // The request already ended in an error; this file must not stay behind.
        stream.resume();
        await write.abort();
        return;
      }
      writes.push(write);
      try {
        await store(stream, write, 0);
      } catch (e) {
        stream.resume();
        fail(failureOf(write.signal.aborted, e));
      }
    });
    chain = done;
    stored.push(done);
  });

  const parsed = new Promise<void>((resolve, reject) => {
    parser.on("close", resolve);
    parser.on("error", (e: Error) => reject(new MalformedUpload(e.message)));
  });
  const closedEarly = new Promise<void>((resolve) => {
    req.on("close", () => {
      if (!req.complete) resolve();
    });
  });

  acceptBody(req, res);
  req.pipe(parser);

  try {
    const outcome = await Promise.race([parsed.then(() => "parsed" as const), closedEarly.then(() => "closed" as const), failed]);
    if (outcome === "closed") throw new UploadCut("the connection closed before the whole upload arrived");
    if (outcome === "parsed") await Promise.all(stored);
    if (failure !== undefined) throw failure;
    if (writes.length === 0) {
      sendErrorAndClose(req, res, 400, "No file in the upload: send a multipart/form-data part with a filename (curl -F 'file=@photo.jpg').");
      return;
    }
    await card.commitAll(writes);
    sendJson(res, 200, UPLOAD_SUCCESS);
  } catch (e) {
    finished = true;
    const cutByCard = writes.some((w) => w.signal.aborted);
    await Promise.all(writes.map((w) => w.abort()));
    if (res.destroyed || req.socket.destroyed) {
      req.socket.destroy();
      return;
    }
    if (cutByCard && failure === undefined) failure = new CardError("not-writable", MSC_MESSAGE);
    const err = failure ?? e;
    if (err instanceof MalformedUpload) sendErrorAndClose(req, res, 400, `Malformed multipart request: ${(err as Error).message}.`);
    else {
      const { status, message } = statusFor(err);
      sendErrorAndClose(req, res, status, message);
    }
  }
}
