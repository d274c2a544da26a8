// HEIC decoding (HEVC inside, which sharp's prebuilt libvips cannot read), each photo in a worker thread of its
// own, at most `limit` at once: a 12 MP photo takes about 2 s and some 300 MB while it is decoded.
import { Worker } from "node:worker_threads";

export interface Pixels {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel. */
  data: Uint8Array;
}

export class HeicDecoder {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async decode(photo: Uint8Array): Promise<Pixels> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await new Promise<Pixels>((resolve, reject) => {
        const worker = new Worker(new URL("./heic-worker.js", import.meta.url), { workerData: photo });
        worker.once("message", (pixels: Pixels) => resolve(pixels));
        worker.once("error", reject);
        worker.once("exit", (code) => reject(new Error(`the HEIC decoder stopped (exit code ${code})`)));
      });
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}
