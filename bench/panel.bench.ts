// Web panel benchmark: how soon a change reaches the panel's server-sent events (issue 7 point 4: within 500 ms).
// Measured from sending a POST to the API until the event describing its effect has arrived, with 1 and with
// 50 panels open at once (the time until the last of them has it). BENCH_PANEL_ROUNDS=N changes the rounds.
import { startDevice } from "../test/helpers.js";

const ROUNDS = Number(process.env.BENCH_PANEL_ROUNDS ?? 200);

/** An open event stream whose next "device" event can be awaited. */
async function openStream(url: string): Promise<{ next(): Promise<{ view: { led: { color?: string } } }>; close(): void }> {
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const m = /^data: (.*)$/m.exec(block);
          if (m && block.startsWith("event: device")) {
            queue.push(m[1]!);
            wake?.();
          }
        }
      }
    } catch {
      // closed
    }
  })();
  return {
    next: async () => {
      while (queue.length === 0) await new Promise<void>((r) => (wake = r));
      return JSON.parse(queue.shift()!);
    },
    close: () => controller.abort(),
  };
}

function summary(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): string => s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(1);
  return `median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${s[s.length - 1]!.toFixed(1)} ms`;
}

async function measure(url: string, panels: number): Promise<number[]> {
  const streams = await Promise.all(Array.from({ length: panels }, () => openStream(`${url}/panel/events`)));
  await Promise.all(streams.map((s) => s.next()));
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await (await fetch(`${url}/led/toggle`, { method: "POST" })).arrayBuffer();
    await Promise.all(streams.map((s) => s.next()));
    samples.push(performance.now() - t0);
  }
  for (const s of streams) s.close();
  return samples;
}

export async function run(): Promise<void> {
  const dev = await startDevice();
  try {
    for (const panels of [1, 50]) {
      const samples = await measure(dev.url, panels);
      console.log(`POST /led/toggle → SSE event on ${panels} panel${panels > 1 ? "s" : ""} (${ROUNDS} rounds): ${summary(samples)} (target: under 500 ms)`);
    }
  } finally {
    await dev.stop();
  }
}
