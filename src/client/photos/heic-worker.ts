// Decodes one HEIC photo off the main thread (libheif in WebAssembly is synchronous and takes seconds): the
// photo's bytes in, RGBA pixels out.
import { parentPort, workerData } from "node:worker_threads";
import decode from "heic-decode";

const image = await decode({ buffer: workerData as Uint8Array });
const data = new Uint8Array(image.data.buffer, image.data.byteOffset, image.data.byteLength);
parentPort!.postMessage({ width: image.width, height: image.height, data }, [data.buffer as ArrayBuffer]);
