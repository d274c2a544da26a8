// `framefi sync` of 1 000 files of 200 KB (in 10 folders) to a running bin/framefi-device over loopback, next to
// `lftp mirror -R` of the same tree against the same device in the same run. Every run goes to a new, empty folder
// on the card: deleting the last run's files just before would make ext4 skip their inodes, freed seconds ago,
// when it makes the new files (see README), a cost of the emulated card's filesystem that would swamp the FTP.
// ours, from MSC: the whole command (switch to FTP, wait for the server, mirror, switch back).
// ours, in FTP:   the device already in FTP mode, --stay (like for like with lftp, which needs FTP mode on).
// lftp:           the firmware's sync.sh mirror (--parallel=1), and with --parallel=4.
// Then the photo pipeline (issue 18): 500 × 12-megapixel JPEGs (BENCH_PHOTOS to change the count) synced with
// --fit 1024x600 from a cold cache (convert while uploading), again with the cache warm onto an empty card, and
// copied as they are; time and the client's peak RSS; the picture options on (--background blur --caption date),
// cold and warm. Then conversion alone, side by side with libvips' own vipsthumbnail on the same photos (issue 35).
// Then (issue 36) 1 000 photos from a WebDAV and an SFTP share synced again unchanged (BENCH_ONLY_REMOTE), and
// 50 000 tiny files synced and synced again, with the peak RSS (BENCH_ONLY_LISTING).
import { randomBytes } from "node:crypto";
import { appendFile, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import sharp from "sharp";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { bin, removeDir, run as runProgram, startDevice, tempDir, type RunningDevice } from "../test/helpers.js";
import { FrameFiClient } from "../src/client/api/index.js";
import { switchMode } from "../src/client/sync/modes.js";
import { convertPhoto } from "../src/client/photos/convert.js";
import { HeicDecoder } from "../src/client/photos/heic.js";
import { photoOptions, type PhotoSettings } from "../src/client/photos/profile.js";
import { forEachLimited, WORKERS } from "../src/client/photos/queue.js";

const FILES = 1_000;
const SIZE = 200 * 1000;
const FOLDERS = 10;
/** Rounds of the mirror cases (BENCH_CLIENT_ROUNDS): this VM's speed swings by half from minute to minute. */
const ROUNDS = Number(process.env.BENCH_CLIENT_ROUNDS ?? 3);

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

async function check(folder: string, label: string, files = FILES): Promise<void> {
  const n = await countFiles(folder);
  if (n !== files) throw new Error(`${label}: ${n} of ${files} files on the card`);
}

/** Runs a program and gives its peak resident memory (bytes), measured by the kernel (getrusage of the child). */
const PEAK_RSS = `import resource, subprocess, sys
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(code)`;

async function photoPipeline(): Promise<void> {
  const count = Number(process.env.BENCH_PHOTOS ?? 500);
  const dir = await tempDir("framefi-bench-photos-");
  const cache = await tempDir("framefi-bench-cache-");
  const dev = await startDevice();
  const api = new FrameFiClient({ host: dev.url });
  try {
    // A few distinct 4000 × 3000 photos (blurred noise, a photo's texture); each file gets its own trailing
    // bytes after the JPEG's end, so every file has its own hash (no cache hit) and decodes the same.
    const bases: Buffer[] = [];
    for (let i = 0; i < 4; i++) {
      const noise = sharp({
        create: { width: 4000, height: 3000, channels: 3, background: "#000", noise: { type: "gaussian", mean: 128 + i * 10, sigma: 60 } },
      });
      bases.push(
        await sharp(await noise.png({ compressionLevel: 0 }).toBuffer())
          .blur(1.2)
          .jpeg({ quality: 88 })
          .toBuffer(),
      );
    }
    let total = 0;
    for (let i = 0; i < count; i++) {
      const file = join(dir, `IMG_${String(i).padStart(4, "0")}.jpg`);
      await writeFile(file, bases[i % bases.length]!);
      await appendFile(file, randomBytes(16));
      total += (await stat(file)).size;
    }
    const framefi = async (args: string[]): Promise<{ seconds: number; rss: number; out: string }> => {
      const argv = ["-c", PEAK_RSS, bin("framefi"), "--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--stay", ...args];
      const t0 = performance.now();
      const r = await runProgram("python3", argv, { timeoutMs: 1_800_000 });
      const seconds = (performance.now() - t0) / 1000;
      if (r.code !== 0) throw new Error(`framefi sync failed (${r.code}): ${r.stderr}`);
      return { seconds, rss: Number(r.stdout.trim().split("\n").at(-1)), out: r.stdout };
    };
    const mb = (n: number): string => (n / 1e6).toFixed(0);
    console.log(`${count} JPEGs of 4000 × 3000 (12 MP, ${mb(total)} MB), empty card each time, ${availableParallelism()} cores:`);
    const rows: [string, string[]][] = [
      ["--fit 1024x600, cold cache: convert and upload", ["--fit", "1024x600", "--cache", cache]],
      ["--fit 1024x600, warm cache: upload only", ["--fit", "1024x600", "--cache", cache]],
      ["--fit 1024x600 --background blur --caption date, cold cache", ["--fit", "1024x600", "--background", "blur", "--caption", "date", "--cache", cache]],
      ["--fit 1024x600 --background blur --caption date, warm cache", ["--fit", "1024x600", "--background", "blur", "--caption", "date", "--cache", cache]],
      ["no profile: copy the originals", []],
    ];
    for (const [label, args] of rows) {
      await emptyCard(dev, api);
      const r = await framefi(args);
      await check(dev.card, label, count);
      let cardBytes = 0;
      for (const name of await readdir(dev.card)) cardBytes += (await stat(join(dev.card, name))).size;
      console.log(
        `  ${label}: ${r.seconds.toFixed(1)} s (${(count / r.seconds).toFixed(1)} photos/s, ${mb(total / r.seconds)} MB/s read), peak RSS ${mb(r.rss)} MB, card ${mb(cardBytes)} MB`,
      );
    }
    await conversionSideBySide(dir, count);
  } finally {
    await dev.stop();
    await removeDir(dir);
    await removeDir(cache);
  }
}

/** Rounds of the side-by-side conversion (BENCH_VIPS_ROUNDS): interleaved, so a burst of load hits all alike. */
const VIPS_ROUNDS = Number(process.env.BENCH_VIPS_ROUNDS ?? 3);

/**
 * Conversion alone, side by side: vipsthumbnail (libvips' own tool, one process per core, each its share of the
 * files, to a local folder) and our convertPhoto (read, convert, keep in memory; one per core; no hash, no upload),
 * without and with the picture options, in interleaved rounds; the best and the median round of each.
 */
async function conversionSideBySide(dir: string, count: number): Promise<void> {
  const names = (await readdir(dir)).sort();
  const cores = availableParallelism();
  const heic = new HeicDecoder();
  const ours = (settings: PhotoSettings) => {
    const profile = photoOptions(settings, (k) => k, {}, "/tmp").profile!;
    return () => forEachLimited(names, WORKERS, async (n) => void (await convertPhoto(await readFile(join(dir, n)), profile, 0, heic)));
  };
  const vips = async (): Promise<void> => {
    const out = await tempDir("framefi-bench-vips-");
    try {
      await Promise.all(
        Array.from({ length: cores }, async (_, i) => {
          const mine = names.filter((_, n) => n % cores === i).map((n) => join(dir, n));
          const r = await runProgram("vipsthumbnail", ["-s", "1024x600", "-o", `${out}/%s.jpg[Q=85,strip]`, ...mine], { timeoutMs: 1_800_000 });
          if (r.code !== 0) throw new Error(`vipsthumbnail failed (${r.code}): ${r.stderr}`);
        }),
      );
      await check(out, "vipsthumbnail", count);
    } finally {
      await removeDir(out);
    }
  };
  const cases: [string, () => Promise<void>][] = [
    [`vipsthumbnail -s 1024x600 (Q=85), ${cores} processes`, vips],
    [`convertPhoto --fit 1024x600, ${WORKERS} at once`, ours({ fit: "1024x600" })],
    [`convertPhoto --fit 1024x600 --background blur --caption date, ${WORKERS} at once`, ours({ fit: "1024x600", background: "blur", caption: "date" })],
  ];
  const times = cases.map((): number[] => []);
  for (let round = 0; round < VIPS_ROUNDS; round++) for (const [i, [, f]] of cases.entries()) times[i]!.push(await timed(f));
  console.log(`  conversion alone, ${VIPS_ROUNDS} interleaved rounds (best, median):`);
  for (const [i, [label]] of cases.entries()) {
    const t = times[i]!.sort((a, b) => a - b);
    const best = t[0]!;
    const median = t[Math.floor(t.length / 2)]!;
    console.log(`    ${label}: ${best.toFixed(1)} s, ${median.toFixed(1)} s (${(count / best).toFixed(1)} photos/s at best)`);
  }
}

export async function run(): Promise<void> {
  if (process.env.BENCH_ONLY_REMOTE) return remoteUnchanged(process.env.BENCH_ONLY_REMOTE);
  if (process.env.BENCH_ONLY_LISTING) return bigListing();
  if (!process.env.BENCH_ONLY_PHOTOS) await mirror();
  await photoPipeline();
  await remoteUnchanged();
  await bigListing();
}

/**
 * 50 000 tiny files in 50 folders synced from a local folder into a running device (--parallel 4), then again
 * unchanged: time and peak RSS (the largest of framefi and its children), to show the listing is not held twice
 * over. From a folder, not a share: filling a share this size takes rclone's WebDAV server half an hour here.
 */
async function bigListing(): Promise<void> {
  const files = 50_000;
  const dir = await tempDir("framefi-bench-listing-");
  const dev = await startDevice();
  try {
    for (let f = 0; f < 50; f++) {
      await mkdir(join(dir, `f${f}`));
      await Promise.all(Array.from({ length: files / 50 }, (_, i) => writeFile(join(dir, `f${f}`, `n${i}.txt`), `${f}/${i}`)));
    }
    const sync = async (): Promise<{ seconds: number; rss: number; out: string }> => {
      const argv = ["-c", PEAK_RSS, bin("framefi"), "--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(dev.ftpPort), dir, "--parallel", "4"];
      const t0 = performance.now();
      const r = await runProgram("python3", argv, { timeoutMs: 600_000 });
      if (r.code !== 0) throw new Error(`framefi sync failed (${r.code}): ${r.stderr}`);
      return { seconds: (performance.now() - t0) / 1000, rss: Number(r.stdout.trim().split("\n").at(-1)), out: r.stdout };
    };
    const mib = (n: number): string => (n / 2 ** 20).toFixed(0);
    const first = await sync();
    await check(dev.card, "50 000 files", files);
    const again = await sync();
    console.log(
      `${files} files in 50 folders from a folder, --parallel 4: first sync ${first.seconds.toFixed(1)} s, peak RSS ${mib(first.rss)} MiB; unchanged sync ${again.seconds.toFixed(1)} s, peak RSS ${mib(again.rss)} MiB`,
    );
  } finally {
    await dev.stop();
    await removeDir(dir);
  }
}

/**
 * Issue 36: `framefi sync` of 1 000 photos from a share (WebDAV and SFTP servers of test/client/fixtures/shares.ts)
 * with --fit, once to fill the card, then again with nothing changed: the time of the second, and that it
 * downloaded nothing (every file of the local mirror is the same inode) and uploaded nothing.
 */
async function remoteUnchanged(only?: string): Promise<void> {
  const { startSftp, startWebdav } = await import("../test/client/fixtures/shares.js");
  const dir = await tempDir("framefi-bench-share-");
  const base = await sharp({ create: { width: 320, height: 240, channels: 3, background: "#468" } })
    .jpeg()
    .toBuffer();
  for (let f = 0; f < FOLDERS; f++) {
    await mkdir(join(dir, `album${f}`));
    for (let i = 0; i < FILES / FOLDERS; i++) {
      const file = join(dir, `album${f}`, `IMG_${i}.jpg`);
      await writeFile(file, base);
      await appendFile(file, randomBytes(16));
    }
  }
  const inodes = async (root: string): Promise<string> =>
    (
      await Promise.all(
        (
          await readdir(root, { recursive: true, withFileTypes: true })
        )
          .filter((d) => d.isFile())
          .map(async (d) => (await stat(join(d.parentPath, d.name))).ino),
      )
    ).join();
  try {
    for (const [kind, startShare] of [
      // The WebDAV server keeps its listings (nothing changes here): without, rclone serve reads a folder per file.
      ["WebDAV", (d: string) => startWebdav(d, true)],
      ["SFTP", startSftp],
    ] as const) {
      if (only && only !== "1" && only.toLowerCase() !== kind.toLowerCase()) continue;
      const share = await startShare(dir);
      const dev = await startDevice();
      const cache = await tempDir("framefi-bench-cache-");
      try {
        const sync = () =>
          runProgram(bin("framefi"), ["--host", dev.url, "sync", "--ftp-port", String(dev.ftpPort), share.source, "--fit", "1024x600", "--cache", cache], {
            env: { ...process.env, ...share.env },
            timeoutMs: 600_000,
          });
        let first!: Awaited<ReturnType<typeof sync>>;
        const firstS = await timed(async () => void (first = await sync()));
        if (first.code !== 0) throw new Error(`${kind}: first sync failed: ${first.stderr}`);
        await check(dev.card, `${kind} first sync`);
        const mirror = join(cache, "sources", (await readdir(join(cache, "sources")))[0]!);
        const before = await inodes(mirror);
        for (let round = 0; round < ROUNDS; round++) {
          let again!: Awaited<ReturnType<typeof sync>>;
          const s = await timed(async () => void (again = await sync()));
          if (again.code !== 0 || !/Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 1000 unchanged/.test(again.stdout)) {
            throw new Error(`${kind}: the unchanged sync did something: ${again.stdout}${again.stderr}`);
          }
          if ((await inodes(mirror)) !== before) throw new Error(`${kind}: the unchanged sync downloaded files again`);
          console.log(`${kind}, ${FILES} photos: first sync ${firstS.toFixed(1)} s; unchanged sync ${s.toFixed(2)} s (0 downloaded, 0 uploaded)`);
        }
      } finally {
        await Promise.all([share.stop(), dev.stop(), removeDir(cache)]);
      }
    }
  } finally {
    await removeDir(dir);
  }
}

async function mirror(): Promise<void> {
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
    /** The card folder of the run under way. */
    let folder = "";
    const framefi = async (args: string[]): Promise<void> => {
      const r = await runProgram(bin("framefi"), [...host, "sync", ...ftpPort, tree, "--to", `/${folder}`, ...args], { timeoutMs: 600_000 });
      if (r.code !== 0) throw new Error(`framefi sync failed (${r.code}): ${r.stderr}`);
    };
    const lftp = async (parallel: number): Promise<void> => {
      const r = await runProgram(
        "lftp",
        [
          "-c",
          `set ftp:ssl-allow no; set net:max-retries 1; open -u 'user','password' -p ${dev.ftpPort} 127.0.0.1; mirror -R --delete --only-missing --no-perms --parallel=${parallel} '${tree}' '/${folder}'`,
        ],
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
      { label: "framefi sync, from MSC (switch + mirror + switch back), 4 connections", prepare: () => switchMode(api, "msc", 15_000), go: () => framefi([]) },
      { label: "framefi sync --stay, already in FTP mode, 4 connections", prepare: toFtp, go: () => framefi(["--stay"]) },
      { label: "framefi sync --stay --parallel 1, already in FTP mode", prepare: toFtp, go: () => framefi(["--stay", "--parallel", "1"]) },
      { label: "lftp mirror -R --parallel=1 (the firmware's sync.sh), in FTP mode", prepare: toFtp, go: () => lftp(1) },
      { label: "lftp mirror -R --parallel=4, in FTP mode", prepare: toFtp, go: () => lftp(4) },
    ];
    // Rounds interleave the cases, so a burst of load from elsewhere on the machine hits them alike, and each round
    // starts one case later than the one before, so each case runs first, second… in turn.
    console.log(`${FILES} files of ${SIZE / 1000} KB in ${FOLDERS} folders (${(FILES * SIZE) / 1e6} MB), ${ROUNDS} rounds, a new card folder each time:`);
    const times = cases.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < cases.length; k++) {
        const i = (round + k) % cases.length;
        const c = cases[i]!;
        folder = `run-${round}-${i}`;
        await c.prepare();
        await runProgram("sync", []);
        times[i]!.push(await timed(c.go));
        await check(join(dev.card, folder), c.label);
      }
    }
    for (const [i, c] of cases.entries()) {
      const sorted = [...times[i]!].sort((a, b) => a - b);
      const best = sorted[0]!;
      const median = sorted[Math.floor(sorted.length / 2)]!;
      console.log(
        `  ${c.label}: best ${best.toFixed(2)} s (${((FILES * SIZE) / 1e6 / best).toFixed(1)} MB/s, ${(FILES / best).toFixed(0)} files/s), median ${median.toFixed(2)} s (all: ${sorted.map((t) => t.toFixed(2)).join(", ")})`,
      );
    }
  } finally {
    await dev.stop();
    await removeDir(tree);
  }
}
