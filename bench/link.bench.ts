// FTP over a link like the frame's (issue 37): 4 ms round trip, 20 Mbit/s each way, as a 2.4 GHz Wi-Fi link.
// This machine's kernel lacks sch_netem; Debian's, which the USB gadget test already boots under qemu, has it. So
// the case runs in that VM (test/gadget/fixtures/vm.ts, here with two CPUs), and bench/link-scenario.sh puts bin/framefi-device and vsftpd in a
// network namespace behind a veth pair with tc netem on both ends. In the same run, alternating: `framefi sync`
// against `lftp mirror -R --parallel=4` into the same device, and lftp --parallel=1 into our device against vsftpd.
// BENCH_LINK ("RTT_MS:FILES ...", default "4:300"), BENCH_LINK_ROUNDS (default 2), BENCH_LINK_RATE (Mbit/s,
// default 20) change the link and the work. The VM runs under software emulation (this machine's nested KVM hangs
// the guest at boot): its CPUs are several times slower than the host's, about a Pi Zero 2 W's, for the device and
// the clients alike. The scenario times a Node start-up in the VM too: framefi pays it, lftp does not.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { removeDir, repoRoot, tempDir } from "../test/helpers.js";
import { bootVm, buildInitramfs, kernel, missingForVm } from "../test/gadget/fixtures/vm.js";

const SIZE = 200 * 1000;
const FOLDERS = 3;
const LINKS = (process.env.BENCH_LINK ?? "4:300").trim().split(/\s+/);
const ROUNDS = Number(process.env.BENCH_LINK_ROUNDS ?? 2);
const RATE_MBIT = Number(process.env.BENCH_LINK_RATE ?? 20);
if (LINKS.some((l) => !/^\d+(\.\d+)?:\d+$/.test(l))) throw new Error(`BENCH_LINK must be "RTT_MS:FILES ..."; got "${process.env.BENCH_LINK}"`);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_LINK_ROUNDS must be a whole number, 1 or more`);
if (!(RATE_MBIT > 0)) throw new Error(`BENCH_LINK_RATE must be a rate in Mbit/s`);

const CASES: Record<string, string> = {
  sync4: "framefi sync --stay (4 connections)",
  ours4: "lftp mirror -R --parallel=4 → ours",
  ours1: "lftp mirror -R --parallel=1 → ours",
  vsftpd1: "lftp mirror -R --parallel=1 → vsftpd",
};

/** Why the case cannot run here, or undefined. */
function cannotRun(): string | undefined {
  const missing = missingForVm();
  if (missing) return "skip" in missing ? missing.skip : missing.fail;
  if (process.getuid?.() !== 0) return "needs root (qemu's 9p share of / must read every file, vsftpd runs as root)";
  return undefined;
}

export async function run(): Promise<void> {
  const why = cannotRun();
  if (why) {
    console.log(`  link case skipped: ${why}`);
    return;
  }
  const work = await tempDir("framefi-link-bench-");
  try {
    const out = join(work, "out");
    for (const files of new Set(LINKS.map((l) => Number(l.split(":")[1])))) {
      for (let i = 0; i < files; i++) {
        const dir = join(out, `tree-${files}`, `album-${i % FOLDERS}`);
        await mkdir(dir, { recursive: true });
        await writeFile(join(dir, `photo-${String(i).padStart(4, "0")}.jpg`), randomBytes(SIZE));
      }
    }
    await writeFile(join(out, "config"), `LINKS="${LINKS.join(" ")}"\nROUNDS=${ROUNDS}\nRATE=${RATE_MBIT}mbit\n`);
    const k = kernel()!;
    const initramfs = await buildInitramfs(work, k.version, join(repoRoot, "bench/link-scenario.sh"));
    // The slowest case moves every byte at the link's rate, plus a few round trips a file; the emulated CPU makes
    // that several times longer (up to six seen): allow 8× and more.
    const budget = LINKS.reduce((ms, l) => ms + Number(l.split(":")[1]) * ((SIZE * 8) / (RATE_MBIT * 1e3) + 20), 0);
    const vm = await bootVm(k.image, initramfs, out, 120_000 + 8 * budget * ROUNDS * Object.keys(CASES).length, {
      cpus: 2,
      memory: "2G",
    });
    const lines = (await readFile(join(out, "results.txt"), "utf8").catch(() => "")).split("\n").filter(Boolean);
    if (!lines.includes("done yes")) {
      const log = await readFile(join(out, "console.log"), "utf8").catch(() => "");
      throw new Error(`the VM did not finish (qemu exit ${vm.exitCode}):\n${lines.join("\n")}\n${log.slice(-2000)}\n${vm.console.slice(-1500)}`);
    }
    report(lines);
  } finally {
    await removeDir(work);
  }
}

function report(lines: string[]): void {
  const times = new Map<string, number[]>();
  for (const line of lines) {
    if (line.startsWith("startup ")) console.log(`  in the VM, \`framefi --version\` takes ${Number(line.split(" ")[2]).toFixed(2)} s (Node's start-up)`);
    const [kind, rtt, files, c, , seconds] = line.split(" ");
    if (kind !== "time") continue;
    const key = `${rtt} ${files} ${c}`;
    times.set(key, [...(times.get(key) ?? []), Number(seconds)]);
  }
  console.log(`${SIZE / 1000} KB files over a veth with tc netem (${RATE_MBIT} Mbit/s each way), best of ${ROUNDS} rounds, all rounds in brackets:`);
  console.log("| RTT | files | case | best | per file | rounds |\n|---|---|---|---|---|---|");
  for (const link of LINKS) {
    const [rtt, files] = link.split(":") as [string, string];
    const best = (c: string): number => Math.min(...(times.get(`${rtt} ${files} ${c}`) ?? [Number.NaN]));
    for (const [c, label] of Object.entries(CASES)) {
      const all = times.get(`${rtt} ${files} ${c}`) ?? [];
      console.log(
        `| ${rtt} ms | ${files} | ${label} | ${best(c).toFixed(2)} s | ${((best(c) / Number(files)) * 1000).toFixed(1)} ms | ${all.map((t) => t.toFixed(2)).join(", ")} |`,
      );
    }
    const limit = (Number(files) * SIZE * 8) / (RATE_MBIT * 1e6);
    console.log(
      `  ${rtt} ms, ${files} files: the link's limit ${limit.toFixed(2)} s (the bytes at ${RATE_MBIT} Mbit/s); lftp --parallel=4 / framefi sync ${(best("ours4") / best("sync4")).toFixed(2)}×; ours / vsftpd per file ${(best("ours1") / best("vsftpd1")).toFixed(2)}×`,
    );
  }
}
