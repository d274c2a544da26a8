// POST /upload (multipart, as the firmware) and PUT /upload?filename= (raw body, as the firmware's docs show).
// Streamed to a temp file on the card and renamed into place only when the whole request arrived.
// Any failure, a dropped connection or a switch to MSC mode removes what was written.
import busboy from "busboy";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { bodies, errors } from "../../shared/firmware.js";
import { CardError, type Card, type CardWrite } from "../card/card.js";
import { DeviceError, messageOf, toHttp } from "../errors.js";
import { acceptBody, sendErrorAndClose, sendJson } from "./answers.js";

const CHUNK = 1 << 20;
/**
 * Files one multipart upload may carry. Each is held as a temp file until all land (one descriptor open at a time),
 * so this bounds what one request, unauthenticated too, makes the card hold; larger batches go in several uploads.
 */
const MAX_FILES = 1000;

const MSC_MESSAGE = errors.uploadInMsc;
const UPLOAD_SUCCESS = bodies.uploaded;

/** The body stopped before its end: the client went away or was too slow. */
const cut = (what: "file" | "upload"): DeviceError => new DeviceError("DEVICE_UPLOAD_CUT", { what });

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
  const stop = (): void => {
    if (!source.readableEnded) meter.destroy(cut("file"));
  };
  source.once("close", stop);
  source.once("error", stop);
  source.pipe(meter);
  try {
    await pipeline(meter, write.sink(CHUNK), { signal: write.signal });
  } finally {
    source.unpipe(meter);
    source.off("close", stop);
    source.off("error", stop);
  }
}

/** Why a write failed: the card was taken back (a switch to MSC mode, a restart) or `e`. */
function failureOf(cutByCard: boolean, e: unknown): unknown {
  return cutByCard ? new CardError("DEVICE_IN_MSC_MODE", {}) : e;
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
    const { status, message } = toHttp(e);
    sendErrorAndClose(req, res, status, message);
    return;
  }
  acceptBody(req, res);
  try {
    await store(req, write, Number.isFinite(length) ? length : 0);
    if (!req.complete) throw cut("file");
    await card.commitAll([write]);
    sendJson(res, 200, UPLOAD_SUCCESS);
  } catch (e) {
    const cutByCard = write.signal.aborted;
    await write.abort();
    const { status, message } = toHttp(failureOf(cutByCard, e));
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
    sendErrorAndClose(req, res, 400, messageOf("DEVICE_MALFORMED_UPLOAD", { reason: (e as Error).message }));
    return;
  }

  const writes: CardWrite[] = [];
  const stored: Promise<void>[] = [];
  let files = 0;
  let failure: unknown;
  let finished = false;
  let chain: Promise<void> = Promise.resolve();
  /** Temp files being opened: an upload that fails meanwhile removes them too before it answers. */
  const opening = new Set<Promise<CardWrite>>();
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
      fail(new DeviceError("DEVICE_TOO_MANY_FILES", { max: MAX_FILES }));
      return;
    }
    // Files are stored one after the other, in the order they arrive.
    const done = chain.then(async () => {
      // The request may have ended in an error (a body cut short) while this file waited its turn: its answer is
      // sent once the temp files being opened are gone, so none may be begun after it.
      if (failure !== undefined || finished) {
        stream.resume();
        return;
      }
      let write: CardWrite;
      const begun = card.uploadTarget(info.filename ?? "").then((target) => card.beginWrite(target));
      opening.add(begun);
      try {
        write = await begun;
      } catch (e) {
        stream.resume();
        fail(e);
        return;
      } finally {
        opening.delete(begun);
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
    parser.on("error", (e: Error) => reject(new DeviceError("DEVICE_MALFORMED_UPLOAD", { reason: e.message })));
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
    if (outcome === "closed") throw cut("upload");
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
    const opened = (await Promise.allSettled([...opening])).flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    await Promise.all([...writes, ...opened].map((w) => w.abort()));
    if (res.destroyed || req.socket.destroyed) {
      req.socket.destroy();
      return;
    }
    if (cutByCard && failure === undefined) failure = new CardError("DEVICE_IN_MSC_MODE", {});
    const { status, message } = toHttp(failure ?? e);
    sendErrorAndClose(req, res, status, message);
  }
}
