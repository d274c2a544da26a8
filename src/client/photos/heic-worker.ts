// Decodes one HEIC photo off the main thread (libheif in WebAssembly is synchronous and takes seconds): the
// photo's bytes in, RGBA pixels or libheif's reason out. libheif-js logs its reason ("Decoding image failed",
// an object with a `message`) and then fails with a bare "HEIF processing error": the logged reason is kept.
import { parentPort, workerData } from "node:worker_threads";
import decode from "heic-decode";

let logged: string | undefined;
console.log = (...args: unknown[]): void => {
  for (const a of args) {
    const message = (a as { message?: unknown } | null)?.message;
    if (typeof message === "string") logged = message;
  }
};

try {
  const image = await decode({ buffer: workerData as Uint8Array });
  const data = new Uint8Array(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  parentPort!.postMessage({ pixels: { width: image.width, height: image.height, data } }, [data.buffer as ArrayBuffer]);
} catch (e) {
  parentPort!.postMessage({ error: logged ?? (e as Error).message });
}
