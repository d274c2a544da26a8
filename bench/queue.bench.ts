// `npm run bench -- queue`: the shared queue (-queue, NATS JetStream) against the in-process one.
// A fire-and-forget hook (max-concurrency 8) whose command appends "<id> <start time ns>" to a
// file gets QUEUE_BENCH_TRIGGERS triggers (default 2000) from 16 concurrent clients, spread over
// the instances. Reported per case: triggers answered per second (accepted: stored in the queue),
// jobs run per second (until the last one started), and trigger-to-start latency (p50, p99), the
// start being the command's own clock reading (so both include starting /bin/sh and date).
// Cases: in-process queue (1 instance, no -queue), -queue with 1 instance, -queue with 3 instances.
// Then the same three cases with each instance held to a quarter of one core (its commands
// included) by a cgroup v1 cpu controller (cpu.cfs_quota_us under /sys/fs/cgroup/cpu; needs root):
// QUEUE_BENCH_CAPPED fire-and-forget triggers (default 600) of a hook running sh -c 'echo x >> file',
// jobs run per second and CPU per job, best of QUEUE_BENCH_ROUNDS rounds (default 3, the order of
// the cases alternating), each against one in-process instance measured in the same round; each
// case's servers first run QUEUE_BENCH_WARMUP triggers (default 3000) without the cap. Then the same
// with a dearer command (a shell loop first, a few ms of CPU): the queue's cost is per job, so its
// share shrinks as the command's grows.
// Last, the floors: the CPU a job's NATS traffic alone costs a client of JetStream (nats.js in this
// process; without and with the job's records), and the most one -queue instance could then run
// against an in-process one.
// QUEUE_BENCH_ONLY_CAPPED=1 runs the capped cases and the floors alone.
import { readFile, writeFile } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import { AckPolicy, connect, headers as natsHeaders, type JsMsg, nanos, RetentionPolicy, StorageType } from "nats";
import { JetStreamPublisher } from "../src/webhook/queue/js-publish.js";
import { join } from "node:path";
import { removeDir, tempDir } from "../test/helpers.js";
import { send, startServer, type Server, writeHooks } from "../test/webhook/fixtures/harness.js";
import { startNats, type Nats } from "../test/webhook/fixtures/nats.js";
import { type CpuCap, cpuCap, NO_CGROUP } from "./cgroup.js";
import { SLOW_LOOPS } from "./webhook.bench.js";
import { processTree, treeCpuUs } from "./wrk.js";

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

const CAPPED = Number(process.env["QUEUE_BENCH_CAPPED"] ?? 600);
/** Triggers each case's servers run without the cap before it is measured. */
const WARMUP = Number(process.env["QUEUE_BENCH_WARMUP"] ?? 3000);
const ROUNDS = Number(process.env["QUEUE_BENCH_ROUNDS"] ?? 3);
/** Each instance's share of one core. */
const SHARE = 0.25;

interface CappedResult {
  jobsPerS: number;
  cpuMsPerJob: number;
}

/** Sends `count` triggers from 16 clients over the servers, then waits until `out` has a line for each. */
async function trigger(servers: Server[], out: string, count: number, round: number): Promise<void> {
  await writeFile(out, "");
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < count) {
        const i = next++;
        const r = await send(`${servers[i % servers.length]!.base}/hooks/capped`, { method: "POST" });
        if (r.status !== 200) throw new Error(`capped trigger ${i} (round ${round}): ${r.status} ${r.text}`);
      }
    }),
  );
  for (;;) {
    const lines = (await readFile(out, "utf8")).length / 2;
    if (lines >= count) break;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** One capped case: `instances` servers, each in a cgroup of its own, CAPPED triggers from 16 clients; jobs/s until the last line is written. */
async function cappedCase(hooksFile: string, out: string, nats: Nats | undefined, instances: number, round: number): Promise<CappedResult | undefined> {
  const servers: Server[] = [];
  const caps: CpuCap[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      const cap = await cpuCap(`webhook-queue-bench-${process.pid}-${i}`, SHARE);
      if (!cap) return undefined;
      caps.push(cap);
      servers.push(await startServer(["-hooks", hooksFile, ...(nats ? ["-queue", nats.url] : [])]));
    }
    // Warmed up without the cap, then capped with everything they started (the spawn helpers): the
    // steady state of a long-running instance. Capped from the start, the first thousands of jobs
    // are mostly V8 compiling the server's code, more of it with -queue (nats.js).
    if (WARMUP > 0) await trigger(servers, out, WARMUP * servers.length, round);
    for (const [i, s] of servers.entries()) for (const pid of processTree(s.proc.child.pid!)) await caps[i]!.add(pid).catch(() => undefined);
    await writeFile(out, "");
    const cpu = (): number =>
      servers.reduce((t, s) => {
        const c = treeCpuUs(s.proc.child.pid!);
        return t + c.own + c.children;
      }, 0);
    const cpuBefore = cpu();
    const began = process.hrtime.bigint();
    await trigger(servers, out, CAPPED, round);
    const seconds = Number(process.hrtime.bigint() - began) / 1e9;
    return { jobsPerS: CAPPED / seconds, cpuMsPerJob: (cpu() - cpuBefore) / 1000 / CAPPED };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    for (const c of caps) await c.remove();
  }
}

/** The capped cases' commands: `script` appends a line to `out` when the job is done. */
const CAPPED_COMMANDS = [
  { label: "sh -c 'echo x >> file'", script: (out: string) => `echo x >> ${out}` },
  {
    label: `sh -c 'a loop of ${SLOW_LOOPS} turns; echo x >> file'`,
    script: (out: string) => `i=0; while [ $i -lt ${SLOW_LOOPS} ]; do i=$((i+1)); done; echo x >> ${out}`,
  },
];

/** The capped cases with each command of CAPPED_COMMANDS, then the floors against the light command's in-process CPU a job. */
async function capped(dir: string, nats: Nats): Promise<void> {
  let light: CappedResult | undefined;
  for (const command of CAPPED_COMMANDS) {
    const inProcess = await cappedWith(dir, nats, command);
    if (!inProcess) return;
    light ??= inProcess;
  }
  const c = light!.cpuMsPerJob;
  console.log(`floors: the CPU a job's NATS traffic alone costs a client of JetStream (nats.js in this process, uncapped, ${FLOOR_CLIENTS} publishers,`);
  console.log(`max-concurrency ${FLOOR_CONCURRENCY}, best of 3 × ${FLOOR_JOBS}), and the most one capped -queue instance could then run against an`);
  console.log(`in-process one with the light command (${c.toFixed(2)} ms a job in process): c / (c + floor)`);
  for (const records of [false, true]) {
    const { cpuMs, pullsPerJob } = await floor(nats, records);
    const what = records ? "with the job's records (create, attempt, final) and the ack confirmed" : "publish answered, pull, plain ack; nothing else";
    console.log(
      `  ${what.padEnd(72)} ${(cpuMs * 1000).toFixed(0).padStart(4)} µs  ${(c / (c + cpuMs)).toFixed(2)}x  (${pullsPerJob.toFixed(2)} pull requests a job)`,
    );
  }
}

const FLOOR_JOBS = 4000;
/** As the capped hook: its max-concurrency, and the clients triggering it. */
const FLOOR_CONCURRENCY = 8;
const FLOOR_CLIENTS = CLIENTS;

/**
 * The least CPU a job costs a client of JetStream, ms a job, best of 3, and the pull requests a job: FLOOR_CLIENTS
 * publishers each publish a job (with a header naming it, as a job message) to a work-queue stream and wait for its
 * answer (with the hook server's own publisher, its cheapest), while a puller asks for as many jobs as it has free
 * slots of FLOOR_CONCURRENCY and acks each with a plain publish. With no command between pull and ack, a pull
 * request finds more jobs than in the hook server. With `records` also what a -queue job's guarantees add: its record created (answered,
 * before the job is published), its attempt's record (plain) and final record (answered) stored, and the ack
 * confirmed by a PING. No HTTP, no command, no bookkeeping: the NATS traffic alone.
 */
async function floor(nats: Nats, records: boolean): Promise<{ cpuMs: number; pullsPerJob: number }> {
  const nc = await connect({ servers: nats.url, noAsyncTraces: true });
  const jsm = await nc.jetstreamManager();
  const stream = "BENCH_FLOOR";
  const kv = "KV_BENCH_FLOOR";
  const publisher = new JetStreamPublisher(nc);
  let pulls = 0;
  try {
    await jsm.streams.add({ name: stream, subjects: ["bench.floor"], retention: RetentionPolicy.Workqueue, storage: StorageType.File });
    await jsm.streams.add({ name: kv, subjects: ["$KV.BENCH_FLOOR.>"], max_msgs_per_subject: 1, storage: StorageType.File });
    await jsm.consumers.add(stream, { durable_name: "run", ack_policy: AckPolicy.Explicit, ack_wait: nanos(30_000), max_ack_pending: FLOOR_CONCURRENCY });
    const consumer = await nc.jetstream().consumers.get(stream, "run");
    const record = { id: randomUUID(), hook: "capped", state: "queued", created: new Date().toISOString(), attempts: [] };
    const recordData = Buffer.from(JSON.stringify(record));
    const data = Buffer.from(JSON.stringify({ id: record.id, hook: "capped", req: {}, record }));
    const put = (key: string, expectLastSubjectSeq?: number): Promise<unknown> =>
      publisher.publish(`$KV.BENCH_FLOOR.${key}`, recordData, { timeoutMs: 5000, ...(expectLastSubjectSeq === undefined ? {} : { expectLastSubjectSeq }) });
    // As a job message: a header naming the job, read on delivery with the delivery's count.
    const publishJob = (): Promise<unknown> => {
      const headers = natsHeaders();
      headers.set("Webhook-Job", record.id);
      return publisher.publish("bench.floor", data, { headers, timeoutMs: 5000 });
    };
    const finish = async (m: JsMsg): Promise<void> => {
      if (m.headers?.get("Webhook-Job") !== record.id || m.info.deliveryCount < 1) throw new Error("not the job published");
      const key = randomUUID();
      if (records) {
        nc.publish(`$KV.BENCH_FLOOR.${key}`, recordData);
        await put(key);
      }
      m.ack();
      if (records) await nc.flush();
    };
    const jobs = async (count: number): Promise<void> => {
      // A publish or ack that fails ends the measurement with its error (instead of an unhandled rejection).
      let failed: unknown;
      let slotFreed: (() => void) | undefined;
      const fail = (e: unknown): void => {
        failed ??= e;
        slotFreed?.();
      };
      let sent = 0;
      const publishing = Promise.all(
        Array.from({ length: FLOOR_CLIENTS }, async () => {
          while (sent < count) {
            sent++;
            if (records) await put(randomUUID(), 0);
            await publishJob();
          }
        }),
      ).catch(fail);
      let done = 0;
      let running = 0;
      while (done < count) {
        if (failed !== undefined) throw failed;
        const want = Math.min(FLOOR_CONCURRENCY - running, count - done - running);
        if (want <= 0) {
          await new Promise<void>((resolve) => (slotFreed = resolve));
          continue;
        }
        pulls++;
        for await (const m of await consumer.fetch({ max_messages: want, expires: 1000 })) {
          running++;
          finish(m).then(() => {
            running--;
            done++;
            slotFreed?.();
          }, fail);
        }
      }
      await publishing;
      if (failed !== undefined) throw failed;
      await nc.flush();
    };
    await jobs(FLOOR_JOBS); // V8 compiles the client's code first
    pulls = 0;
    let best = Infinity;
    for (let round = 0; round < 3; round++) {
      const before = process.cpuUsage();
      await jobs(FLOOR_JOBS);
      const used = process.cpuUsage(before);
      best = Math.min(best, (used.user + used.system) / 1000 / FLOOR_JOBS);
    }
    return { cpuMs: best, pullsPerJob: pulls / (3 * FLOOR_JOBS) };
  } finally {
    publisher.close();
    await jsm.streams.delete(stream).catch(() => undefined);
    await jsm.streams.delete(kv).catch(() => undefined);
    await nc.close();
  }
}

/**
 * The capped cases of one command, best of ROUNDS; the order alternates from round to round. Returns the in-process
 * case's best, or undefined when there is no cgroup to cap with.
 */
async function cappedWith(dir: string, nats: Nats, command: (typeof CAPPED_COMMANDS)[number]): Promise<CappedResult | undefined> {
  const out = join(dir, "capped.out");
  const hooksFile = await writeHooks(
    dir,
    [
      {
        id: "capped",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: command.script(out) },
        ],
        "max-concurrency": 8,
        "max-queue": Math.max(CAPPED, WARMUP * 3),
      },
    ],
    "capped.json",
  );
  const cases = [
    { name: "in-process", instances: 1, queue: false },
    { name: "queue-1", instances: 1, queue: true },
    { name: "queue-3", instances: 3, queue: true },
  ];
  const best = new Map<string, CappedResult>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of round % 2 === 0 ? cases : [...cases].reverse()) {
      const r = await cappedCase(hooksFile, out, c.queue ? nats : undefined, c.instances, round);
      if (!r) {
        console.log(`no capped cases: ${NO_CGROUP}`);
        return undefined;
      }
      const b = best.get(c.name);
      if (!b || r.jobsPerS > b.jobsPerS) best.set(c.name, r);
      console.log(`  round ${round + 1} ${c.name.padEnd(11)} ${r.jobsPerS.toFixed(1).padStart(7)} jobs/s ${r.cpuMsPerJob.toFixed(2).padStart(6)} ms CPU/job`);
    }
  }
  const base = best.get("in-process")!.jobsPerS;
  console.log(
    `${CAPPED} fire-and-forget triggers, 16 clients, each instance capped at ${SHARE} of a core (commands included), command: ${command.label}; best of ${ROUNDS}`,
  );
  console.log("case          jobs/s   CPU/job   x in-process");
  for (const c of cases) {
    const r = best.get(c.name)!;
    console.log(
      `${c.name.padEnd(11)} ${r.jobsPerS.toFixed(1).padStart(8)} ${r.cpuMsPerJob.toFixed(2).padStart(6)} ms ${(r.jobsPerS / base).toFixed(2).padStart(8)}x`,
    );
  }
  return best.get("in-process");
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
    // QUEUE_BENCH_ONLY_CAPPED=1: the capped cases alone.
    if (process.env["QUEUE_BENCH_ONLY_CAPPED"] === "1") return await capped(dir, nats);
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
    console.log(`${TRIGGERS} triggers, ${CLIENTS} clients, hook max-concurrency 8, command: sh -c 'echo id $(date +%s%N) >> file'`);
    console.log("                                     trigger-to-start      trigger-to-start, paced (1 client, 20 ms apart)");
    console.log("case         accepted/s   run/s       p50      p99              p50      p99");
    for (const r of results) {
      const p = paced.find((x) => x.name === `${r.name}-paced`)!;
      console.log(
        `${r.name.padEnd(12)} ${r.acceptPerS.toFixed(0).padStart(10)} ${r.runPerS.toFixed(0).padStart(7)} ${r.p50Ms.toFixed(1).padStart(9)} ms ${r.p99Ms.toFixed(1).padStart(6)} ms ${p.p50Ms.toFixed(1).padStart(12)} ms ${p.p99Ms.toFixed(1).padStart(6)} ms`,
      );
    }
    console.log("\ncapped:");
    await capped(dir, nats);
  } finally {
    await nats.close();
    await removeDir(dir);
  }
}
