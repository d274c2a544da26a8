// Device service benchmarks:
//  1. GET / median latency with 100 000 files on the card (target: under 5 ms).
//  2. Upload of a 1 GB file with curl -F: MB/s and the service's peak RSS, next to `cp` of the same file into the
//     card folder in the same run (target: at least half of cp's rate), and curl -F into a server that discards
//     the body (how fast the client can send at all).
// BENCH_DEVICE_FILES=N changes the number of files for a quick run.
import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { once } from "node:events";
import { bin, freePort, run as runProgram, start, tempDir, type RunningProgram } from "../test/helpers.js";

const FILES = Number(process.env.BENCH_DEVICE_FILES ?? 100_000);
const PER_DIR = 1_000;
const GET_SAMPLES = 3_000;
const UPLOAD_BYTES = 1024 ** 3;

interface Device {
  program: RunningProgram;
  url: string;
  port: number;
}

async function startDevice(card: string, state: string, extra: string[] = []): Promise<Device> {
  const port = await freePort();
  const program = start(bin("framefi-device"), [
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--card",
    card,
    "--state",
    state,
    "--setup-port",
    String(await freePort()),
    "--ftp-port",
    String(await freePort()),
    ...extra,
  ]);
  await program.waitFor(/web API listening/, 120_000);
  return { program, url: `http://127.0.0.1:${port}`, port };
}

function get(agent: Agent, port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent }, (res) => {
      let body = "";
      res
        .setEncoding("utf8")
        .on("data", (d: string) => (body += d))
        .on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.end();
  });
}

async function makeCard(dir: string): Promise<void> {
  for (let d = 0; d < FILES / PER_DIR; d++) {
    const sub = join(dir, `album-${String(d).padStart(3, "0")}`);
    await mkdir(sub, { recursive: true });
    const writes: Promise<void>[] = [];
    for (let f = 0; f < PER_DIR; f++) writes.push(writeFile(join(sub, `photo-${f}.jpg`), "x"));
    await Promise.all(writes);
  }
}

async function measureGets(port: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = JSON.parse(await get(agent, port, "/")) as { sd_card: { file_count: number } };
    if (first.sd_card.file_count !== FILES) throw new Error(`file_count ${first.sd_card.file_count}, expected ${FILES}`);
    for (let i = 0; i < 300; i++) await get(agent, port, "/");
    const samples: number[] = [];
    for (let i = 0; i < GET_SAMPLES; i++) {
      const s = process.hrtime.bigint();
      await get(agent, port, "/");
      samples.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    return samples.sort((a, b) => a - b);
  } finally {
    agent.destroy();
  }
}

async function latency(): Promise<void> {
  const card = await tempDir("framefi-bench-card-");
  const state = await tempDir("framefi-bench-state-");
  try {
    const t0 = Date.now();
    await makeCard(card);
    console.log(`card with ${FILES} files in ${FILES / PER_DIR} folders made in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`GET / with ${FILES} files, ${GET_SAMPLES} sequential requests on one keep-alive connection (target: median < 5 ms):`);
    for (const [label, extra] of [
      ["--card-size 8GiB", ["--card-size", "8GiB"]],
      ["filesystem size", []],
    ] as const) {
      const t1 = Date.now();
      const dev = await startDevice(card, state, [...extra]);
      const up = ((Date.now() - t1) / 1000).toFixed(1);
      try {
        const samples = await measureGets(dev.port);
        const q = (p: number): string => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]!.toFixed(3);
        console.log(`  ${label.padEnd(17)} median ${q(0.5)} ms   p90 ${q(0.9)} ms   p99 ${q(0.99)} ms   (service up, inventory taken, in ${up} s)`);
      } finally {
        await dev.program.stop();
      }
    }
  } finally {
    await rm(card, { recursive: true, force: true });
    await rm(state, { recursive: true, force: true });
  }
}

async function rssKiB(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
}

async function timed(command: string, args: string[]): Promise<number> {
  const t = process.hrtime.bigint();
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  const [code] = (await once(child, "exit")) as [number];
  if (code !== 0) throw new Error(`${command} exited ${code}: ${out}`);
  if (command === "curl" && !out.includes('"success"')) throw new Error(`upload failed: ${out}`);
  return Number(process.hrtime.bigint() - t) / 1e9;
}

async function upload(): Promise<void> {
  const work = await tempDir("framefi-bench-upload-");
  const card = join(work, "card");
  const state = join(work, "state");
  let dev: Device | undefined;
  try {
    const source = join(work, "big.bin");
    const out = createWriteStream(source);
    const block = Buffer.alloc(4 << 20);
    for (let i = 0; i < block.length; i += 4) block.writeUInt32LE((i * 2654435761) >>> 0, i);
    for (let written = 0; written < UPLOAD_BYTES; written += block.length) {
      if (!out.write(block)) await once(out, "drain");
    }
    out.end();
    await once(out, "finish");

    dev = await startDevice(card, state);
    const pid = dev.program.child.pid!;
    await runProgram("curl", ["-s", "-X", "POST", `${dev.url}/mode/ftp`]);
    await new Promise((r) => setTimeout(r, 300));
    const baseline = await rssKiB(pid, "VmRSS");
    let peak = baseline;
    const sampler = setInterval(
      () =>
        void rssKiB(pid, "VmRSS").then(
          (k) => (peak = Math.max(peak, k)),
          () => undefined,
        ),
      20,
    );
    // Each measurement starts with no dirty pages waiting, so none pays for the previous one's writeback.
    await runProgram("sync", []);
    const ours = await timed("curl", ["-s", "-F", `file=@${source};filename=uploaded.bin`, `${dev.url}/upload`]);
    clearInterval(sampler);
    peak = Math.max(peak, await rssKiB(pid, "VmHWM"));
    await runProgram("sync", []);
    const copy = await timed("cp", [source, join(card, "copied.bin")]);
    await runProgram("sync", []);
    const ceiling = await curlCeiling(source);
    const mb = UPLOAD_BYTES / 1e6;
    console.log(`upload of a 1 GiB file (${mb.toFixed(0)} MB), same disk, same run:`);
    console.log(`  POST /upload (curl -F)  ${(mb / ours).toFixed(0)} MB/s  (${ours.toFixed(2)} s)`);
    console.log(`  cp into the card folder ${(mb / copy).toFixed(0)} MB/s  (${copy.toFixed(2)} s)`);
    console.log(`  ratio ${(copy / ours).toFixed(2)} of cp (target: at least 0.5)`);
    console.log(`  reference: curl -F into a server that discards the body: ${(mb / ceiling).toFixed(0)} MB/s (${ceiling.toFixed(2)} s)`);
    console.log(`  service RSS: ${(baseline / 1024).toFixed(0)} MiB before, peak ${(peak / 1024).toFixed(0)} MiB during the upload`);
  } finally {
    await dev?.program.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** How fast curl -F can send at all: the same upload into a bare server that discards the body. */
async function curlCeiling(source: string): Promise<number> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end('{"status":"success"}'));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  try {
    return await timed("curl", ["-s", "-F", `file=@${source}`, `http://127.0.0.1:${port}/`]);
  } finally {
    server.close();
  }
}

export async function run(): Promise<void> {
  await latency();
  await upload();
}
