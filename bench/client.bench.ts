// `framefi sync` of 1 000 files of 200 KB (in 10 folders) to a running bin/framefi-device over loopback, next to
// `lftp mirror -R` of the same tree against the same device in the same run. Every run starts from an empty card.
// ours, from MSC: the whole command (switch to FTP, wait for the server, mirror, switch back).
// ours, in FTP:   the device already in FTP mode, --stay (like for like with lftp, which needs FTP mode on).
// lftp:           the firmware's sync.sh mirror (--parallel=1), and with --parallel=4.
import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, removeDir, run as runProgram, startDevice, tempDir, type RunningDevice } from "../test/helpers.js";
import { FrameFiClient } from "../src/client/api.js";
import { switchMode } from "../src/client/modes.js";

const FILES = 1_000;
const SIZE = 200 * 1000;
const FOLDERS = 10;
const ROUNDS = 3;

async function emptyCard(dev: RunningDevice, api: FrameFiClient): Promise<void> {
  await switchMode(api, "msc", 15_000);
  for (const name of await readdir(dev.card)) await rm(join(dev.card, name), { recursive: true, force: true });
  await runProgram("sync", []);
}

async function countFiles(dir: string): Promise<number> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile()).length;
}

async function timed(f: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await f();
  return (performance.now() - t0) / 1000;
}

async function check(dev: RunningDevice, label: string): Promise<void> {
  const n = await countFiles(dev.card);
  if (n !== FILES) throw new Error(`${label}: ${n} of ${FILES} files on the card`);
}

export async function run(): Promise<void> {
  const tree = await tempDir("framefi-bench-tree-");
  const dev = await startDevice();
  const api = new FrameFiClient({ host: dev.url });
  try {
    for (let i = 0; i < FILES; i++) {
      const dir = join(tree, `album-${i % FOLDERS}`);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, `photo-${i}.jpg`), randomBytes(SIZE));
    }
    const host = ["--host", `127.0.0.1:${dev.port}`];
    const ftpPort = ["--ftp-port", String(dev.ftpPort)];
    const framefi = async (args: string[]): Promise<void> => {
      const r = await runProgram(bin("framefi"), [...host, "sync", ...ftpPort, tree, ...args], { timeoutMs: 600_000 });
      if (r.code !== 0) throw new Error(`framefi sync failed (${r.code}): ${r.stderr}`);
    };
    const lftp = async (parallel: number): Promise<void> => {
      const r = await runProgram(
        "lftp",
        ["-c", `set ftp:ssl-allow no; set net:max-retries 1; open -u 'user','password' -p ${dev.ftpPort} 127.0.0.1; mirror -R --delete --only-missing --no-perms --parallel=${parallel} '${tree}' '/'`],
        { timeoutMs: 600_000 },
      );
      if (r.code !== 0) throw new Error(`lftp failed (${r.code}): ${r.stderr}`);
    };
    const toFtp = async (): Promise<void> => {
      await switchMode(api, "ftp", 15_000);
      // Wait until the FTP server answers: an empty framefi sync (dry run) connects, then stays in FTP mode.
      const r = await runProgram(bin("framefi"), [...host, "sync", ...ftpPort, "--stay", "--dry-run", tree], { timeoutMs: 60_000 });
      if (r.code !== 0) throw new Error(`FTP mode not reached: ${r.stderr}`);
    };

    const cases: { label: string; prepare: () => Promise<void>; go: () => Promise<void> }[] = [
      { label: "framefi sync, from MSC (switch + mirror + switch back), 4 connections", prepare: async () => undefined, go: () => framefi([]) },
      { label: "framefi sync --stay, already in FTP mode, 4 connections", prepare: toFtp, go: () => framefi(["--stay"]) },
      { label: "framefi sync --stay --parallel 1, already in FTP mode", prepare: toFtp, go: () => framefi(["--stay", "--parallel", "1"]) },
      { label: "lftp mirror -R --parallel=1 (the firmware's sync.sh), in FTP mode", prepare: toFtp, go: () => lftp(1) },
      { label: "lftp mirror -R --parallel=4, in FTP mode", prepare: toFtp, go: () => lftp(4) },
    ];
    // Rounds interleave the cases, so a burst of load from elsewhere on the machine hits them alike.
    console.log(`${FILES} files of ${SIZE / 1000} KB in ${FOLDERS} folders (${(FILES * SIZE) / 1e6} MB), ${ROUNDS} rounds, empty card each time:`);
    const times = cases.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, c] of cases.entries()) {
        await emptyCard(dev, api);
        await c.prepare();
        times[i]!.push(await timed(c.go));
        await check(dev, c.label);
      }
    }
    for (const [i, c] of cases.entries()) {
      const sorted = [...times[i]!].sort((a, b) => a - b);
      const best = sorted[0]!;
      const median = sorted[Math.floor(sorted.length / 2)]!;
      console.log(`  ${c.label}: best ${best.toFixed(2)} s (${((FILES * SIZE) / 1e6 / best).toFixed(1)} MB/s, ${(FILES / best).toFixed(0)} files/s), median ${median.toFixed(2)} s`);
    }
  } finally {
    await dev.stop();
    await removeDir(tree);
  }
}
