// `npm run bench -- queue`: the shared queue (-queue, NATS JetStream) against the in-process one.
// A fire-and-forget hook (max-concurrency 8) whose command appends "<id> <start time ns>" to a
// file gets QUEUE_BENCH_TRIGGERS triggers (default 2000) from 16 concurrent clients, spread over
// the instances. Reported per case: triggers answered per second (accepted: stored in the queue),
// jobs run per second (until the last one started), and trigger-to-start latency (p50, p99), the
// start being the command's own clock reading (so both include starting /bin/sh and date).
// Cases: in-process queue (1 instance, no -queue), -queue with 1 instance, -queue with 3 instances.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, tempDir } from "../test/helpers.js";
import { send, startServer, type Server } from "../test/webhook/fixtures/harness.js";
import { startNats } from "../test/webhook/fixtures/nats.js";

const TRIGGERS = Number(process.env["QUEUE_BENCH_TRIGGERS"] ?? 2000);
const CLIENTS = 16;
/** Triggers sent one at a time, 20 ms apart: latency without a backlog. */
const PACED = 200;

interface Result {
  name: string;
  acceptPerS: number;
  runPerS: number;
  p50Ms: number;
  p99Ms: number;
}

/** Sends `count` triggers from `clients` clients, each pausing `gapMs` between its triggers. */
async function measure(name: string, servers: Server[], log: string, count: number, clients: number, gapMs: number): Promise<Result> {
  const sent = new Map<string, bigint>();
  let next = 0;
  const began = process.hrtime.bigint();
  const wallBegan = BigInt(Date.now()) * 1_000_000n - began;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) {
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        const i = next++;
        const id = `${name.replace(/\W/g, "")}-${i}`;
        sent.set(id, wallBegan + process.hrtime.bigint());
        const r = await send(`${servers[i % servers.length]!.base}/hooks/bench`, { method: "POST", headers: { "X-Id": id } });
        if (r.status !== 200) throw new Error(`trigger ${i}: ${r.status} ${r.text}`);
      }
    }),
  );
  const answered = Number(process.hrtime.bigint() - began) / 1e9;
  let started: string[][] = [];
  for (;;) {
    started = (await readFile(log, "utf8").catch(() => ""))
      .split("\n")
      .filter((l) => l.startsWith(`${name.replace(/\W/g, "")}-`))
      .map((l) => l.split(" "));
    if (started.length >= count) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const latencies = started.map(([id, at]) => Number(BigInt(at!) - sent.get(id!)!) / 1e6).sort((a, b) => a - b);
  const last = started.reduce((m, [, at]) => (BigInt(at!) > m ? BigInt(at!) : m), 0n);
  const ran = Number(last - (wallBegan + began)) / 1e9;
  return {
    name,
    acceptPerS: count / answered,
    runPerS: count / ran,
    p50Ms: latencies[Math.floor(latencies.length * 0.5)]!,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)]!,
  };
}

export async function run(): Promise<void> {
  const dir = await tempDir("webhook-queue-bench-");
  const log = join(dir, "starts.log");
  const file = join(dir, "hooks.json");
  await writeFile(
    file,
    JSON.stringify([
      {
        id: "bench",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'echo "$1 $(date +%s%N)" >> "$2"' },
          { source: "string", name: "sh" },
          { source: "header", name: "X-Id" },
          { source: "string", name: log },
        ],
        "max-concurrency": 8,
        "max-queue": TRIGGERS,
      },
    ]),
  );
  const nats = await startNats();
  const results: Result[] = [];
  const paced: Result[] = [];
  try {
    for (const [name, count, queue] of [
      ["in-process", 1, false],
      ["queue-1", 1, true],
      ["queue-3", 3, true],
    ] as const) {
      const servers: Server[] = [];
      for (let i = 0; i < count; i++) servers.push(await startServer(["-hooks", file, ...(queue ? ["-queue", nats.url] : [])]));
      try {
        results.push(await measure(name, servers, log, TRIGGERS, CLIENTS, 0));
        paced.push(await measure(`${name}-paced`, servers, log, PACED, 1, 20));
      } finally {
        await Promise.all(servers.map((s) => s.stop()));
      }
    }
  } finally {
    await nats.close();
    await removeDir(dir);
  }
  console.log(`${TRIGGERS} triggers, ${CLIENTS} clients, hook max-concurrency 8, command: sh -c 'echo id $(date +%s%N) >> file'`);
  console.log("                                     trigger-to-start      trigger-to-start, paced (1 client, 20 ms apart)");
  console.log("case         accepted/s   run/s       p50      p99              p50      p99");
  for (const r of results) {
    const p = paced.find((x) => x.name === `${r.name}-paced`)!;
    console.log(
      `${r.name.padEnd(12)} ${r.acceptPerS.toFixed(0).padStart(10)} ${r.runPerS.toFixed(0).padStart(7)} ${r.p50Ms.toFixed(1).padStart(9)} ms ${r.p99Ms.toFixed(1).padStart(6)} ms ${p.p50Ms.toFixed(1).padStart(12)} ms ${p.p99Ms.toFixed(1).padStart(6)} ms`,
    );
  }
}
