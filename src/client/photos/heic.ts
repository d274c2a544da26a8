// HEIC decoding (HEVC inside, which sharp's prebuilt libvips cannot read), each photo in a worker thread of its
// own. libheif (WebAssembly) holds about 16 bytes a pixel while it decodes, outside the JS heap that a worker's
// resourceLimits bound (measured with the worker: up to 200 MB for 12 MP, 630 MB for 48 MP), so
// the decodes share a memory budget: a 12 MP photo waits while three others are decoded, a 48 MP one runs alone,
// and a photo above MAX_HEIC_PIXELS is refused before it is decoded (convert.ts).
import { Worker } from "node:worker_threads";
import { FrameFiError } from "../errors.js";

export interface Pixels {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel. */
  data: Uint8Array;
}

/** The largest HEIC decoded: 60 MP (iPhones take 12, 24 or 48 MP; 50 MP phones). */
export const MAX_HEIC_PIXELS = 60_000_000;
const BYTES_PER_PIXEL = 16;
const WORKER_BYTES = 64 * 1024 ** 2;

/** What decoding a photo of `pixels` holds in memory, at most. */
function decodeCost(pixels: number): number {
  return WORKER_BYTES + BYTES_PER_PIXEL * pixels;
}

/** All decodes at once hold at most this: one of the largest photo, about 1 GB. */
const BUDGET = decodeCost(MAX_HEIC_PIXELS);

/** The decoder could not turn the photo into pixels: the reason as libheif gives it. */
export class HeicDecodeError extends FrameFiError {
  override name = "HeicDecodeError";
}

/** What the worker posts back. */
type WorkerReply = { pixels: Pixels } | { error: string };

export class HeicDecoder {
  /** Bytes the running decodes may hold. */
  private used = 0;
  private readonly waiting: { cost: number; start: () => void }[] = [];

  /**
   * Decodes `photo` (width × height = `pixels`, from its header) and hands the pixels to `use`; the memory stays
   * reserved until `use` is done with them.
   */
  async decode<T>(photo: Uint8Array, pixels: number, use: (image: Pixels) => Promise<T>): Promise<T> {
    const cost = Math.min(decodeCost(pixels), BUDGET);
    await this.reserve(cost);
    try {
      return await use(await this.run(photo));
    } finally {
      this.release(cost);
    }
  }

  /** First come, first served: a large photo waiting is not overtaken by small ones. */
  private reserve(cost: number): Promise<void> {
    if (this.waiting.length === 0 && this.used + cost <= BUDGET) {
      this.used += cost;
      return Promise.resolve();
    }
    return new Promise((start) => this.waiting.push({ cost, start }));
  }

  private release(cost: number): void {
    this.used -= cost;
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.cost <= BUDGET) {
      const next = this.waiting.shift()!;
      this.used += next.cost;
      next.start();
    }
  }

  private run(photo: Uint8Array): Promise<Pixels> {
    return new Promise<Pixels>((resolve, reject) => {
      const worker = new Worker(new URL("./heic-worker.js", import.meta.url), {
        workerData: photo,
        // The JS heap holds only libheif's glue (some 6 MB); the pixels live in WebAssembly memory and ArrayBuffers.
        resourceLimits: { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 },
        // Whatever the decoder prints stays out of the user's output: failures come back as messages.
        stdout: true,
        stderr: true,
      });
      worker.stdout.resume();
      worker.stderr.resume();
      worker.once("message", (reply: WorkerReply) => {
        if ("pixels" in reply) resolve(reply.pixels);
        else reject(new HeicDecodeError("FRAMEFI_HEIC_UNDECODABLE", { reason: reply.error }));
      });
      worker.once("error", (e: NodeJS.ErrnoException) => {
        reject(e.code === "ERR_WORKER_OUT_OF_MEMORY" ? new HeicDecodeError("FRAMEFI_HEIC_OUT_OF_MEMORY", {}, { cause: e }) : e);
      });
      worker.once("exit", (code) => reject(new HeicDecodeError("FRAMEFI_HEIC_STOPPED", { status: code })));
    });
  }
}
