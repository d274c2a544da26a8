// The device's log on stdout, one line per event, batched (see shared/batched-lines.ts).
import { batchedLines } from "../shared/batched-lines.js";

export type DeviceLog = ((message: string) => void) & { flush(): void };

export function deviceLog(out: { write(text: string): unknown } = process.stdout): DeviceLog {
  const lines = batchedLines(out);
  return Object.assign((message: string) => lines(`framefi-device: ${message}`), { flush: lines.flush });
}
