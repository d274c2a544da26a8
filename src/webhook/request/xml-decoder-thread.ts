// The thread of XmlDecoder: decodes each body it is sent and answers with the parts of the payload asked for, or the error's message.
import { parentPort } from "node:worker_threads";
import { payloadPart } from "../hooks/values.js";
import { parseXmlPayload } from "./request.js";
import type { DecodeRequest } from "./xml-decoder.js";

parentPort!.on("message", ({ body, reads }: DecodeRequest) => {
  try {
    const payload = parseXmlPayload(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    parentPort!.postMessage({ payload: payload === undefined || reads === "whole" ? payload : payloadPart(payload, reads) });
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
  }
});
