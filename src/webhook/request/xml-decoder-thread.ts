// The thread of XmlDecoder: decodes each body it is sent and answers with the payload or the error's message.
import { parentPort } from "node:worker_threads";
import { parseXmlPayload } from "./request.js";

parentPort!.on("message", ({ id, body }: { id: number; body: Uint8Array }) => {
  try {
    parentPort!.postMessage({ id, payload: parseXmlPayload(Buffer.from(body.buffer, body.byteOffset, body.byteLength)) });
  } catch (e) {
    parentPort!.postMessage({ id, error: (e as Error).message });
  }
});
