// Switching the device's mode and waiting until it is done: the API answers at once and completes just after.
import { MODE_NAMES, type Mode } from "../../shared/firmware.js";
import type { FrameFiClient } from "../api/index.js";
import { FrameFiError } from "../errors.js";

async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}

/** Switches the device's mode (if needed) and waits until it reports the new one. */
export async function switchMode(client: FrameFiClient, to: Mode, waitMs: number, signal?: AbortSignal): Promise<void> {
  const want = MODE_NAMES[to];
  if ((await client.mode()).mode === want) return;
  await client.setMode(to);
  const deadline = Date.now() + waitMs;
  while ((await client.mode()).mode !== want) {
    if (signal?.aborted) throw signal.reason;
    if (Date.now() > deadline) throw new FrameFiError("FRAMEFI_MODE_SWITCH_TIMEOUT", { mode: want, seconds: Math.round(waitMs / 1000) });
    await sleep(100, signal);
  }
}
