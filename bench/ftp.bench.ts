// FTP throughput with real lftp: a 1 GB upload and download, and a mirror of 1 000 files of 200 KB,
// against bin/framefi-device in FTP mode and against vsftpd serving the same card folder in the same run. The
// download is timed twice: into a file, as a user gets it, and to /dev/null (lftp's cat), the server's part alone:
// writing the gigabyte costs lftp more than receiving it, and swings with the machine (see README).
// BENCH_FTP_ROUNDS=N runs N rounds instead of two (this VM's speed swings by half from one minute to the next:
// medians over more rounds tell a small difference from the swings). BENCH_FTP_FILES=N mirrors N files instead of
// 1 000 (issue 37 measured 600), and BENCH_FTP_STEPS=mirror leaves out the 1 GB steps. Each server first runs
// BENCH_FTP_WARMUP mirrors (default 1) that are not measured. Each step also reports the CPU time of all
// the server's processes together (vsftpd's session processes, our sendfile helper), which swings less: on two
// cores, with lftp busy too, the two programs' CPU added up is most of a step's time.
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { bin, freePort, removeDir, run as runProgram, start, tempDir, type RunningProgram } from "../test/helpers.js";

const GB = 1024 ** 3;
const ROUNDS = Number(process.env.BENCH_FTP_ROUNDS ?? 2);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`BENCH_FTP_ROUNDS must be a whole number of rounds, 1 or more; got "${process.env.BENCH_FTP_ROUNDS}"`);
/** Files of the mirror, in folders of 100. */
const FILES = Number(process.env.BENCH_FTP_FILES ?? 1000);
if (!Number.isInteger(FILES) || FILES < 1 || FILES % 100 !== 0)
  throw new Error(`BENCH_FTP_FILES must be a whole number of hundreds; got "${process.env.BENCH_FTP_FILES}"`);
/** Unmeasured mirrors each server runs before the rounds (BENCH_FTP_WARMUP, default 1). */
const WARMUP = Number(process.env.BENCH_FTP_WARMUP ?? 1);
if (!Number.isInteger(WARMUP) || WARMUP < 0) throw new Error(`BENCH_FTP_WARMUP must be a whole number, 0 or more; got "${process.env.BENCH_FTP_WARMUP}"`);
const STEPS = process.env.BENCH_FTP_STEPS ?? "all";
if (STEPS !== "all" && STEPS !== "mirror") throw new Error(`BENCH_FTP_STEPS must be "all" or "mirror"; got "${STEPS}"`);
const BIG = STEPS === "all";

async function listFiles(dir: string): Promise<number> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile()).length;
}

interface Target {
  name: string;
  /** The server's CPU seconds so far (see cpuMeter). */
  cpu(): Promise<number>;
  port: number;
  user: string;
  password: string;
  /** The card folder as the server's clients see it. */
  remoteCard: string;
  stop(): Promise<unknown>;
}

/**
 * The CPU seconds a server has spent so far, all its processes together (vsftpd's session processes, our
 * sendfile helper). Read from a cgroup v2 of its own where the bench may make one (root): it counts a process
 * that ended after being reparented away from the server, as vsftpd's session processes are when their privileged
 * parent ends first. Else summed over the server's process tree in /proc, which misses those.
 */
async function cpuMeter(name: string, pid: number): Promise<{ read: () => Promise<number>; close: () => Promise<void> }> {
  const mounts = await readFile("/proc/self/mounts", "utf8").catch(() => "");
  // Mount points escape spaces and the like as octal (\040).
  const root = /^\S+ (\S+) cgroup2 /m.exec(mounts)?.[1]?.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  if (root) {
    const group = join(root, `framefi-bench-${name}-${pid}`);
    const read = async (): Promise<number> => Number(/^usage_usec (\d+)$/m.exec(await readFile(join(group, "cpu.stat"), "utf8"))?.[1]) / 1e6;
    const close = async (): Promise<void> => {
      // Whatever the server left running (a session process reparented away) goes too, so the group can go.
      await writeFile(join(group, "cgroup.kill"), "1").catch(() => undefined);
      for (let i = 0; i < 50 && /^populated 1$/m.test(await readFile(join(group, "cgroup.events"), "utf8").catch(() => "")); i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      await rmdir(group).catch((e: Error) => console.log(`  (cannot remove the cgroup ${group}: ${e.message})`));
    };
    try {
      await mkdir(group);
      await writeFile(join(group, "cgroup.procs"), String(pid));
      if (Number.isFinite(await read())) return { read, close };
    } catch {
      // no cgroup of our own here (not root, say): the process tree below
    }
    await rmdir(group).catch(() => undefined);
  }
  const ticks = Number((await runProgram("getconf", ["CLK_TCK"])).stdout.trim()) || 100;
  return { read: async () => (await treeTicks(pid)) / ticks, close: async () => undefined };
}

/** Clock ticks spent by `pid` and its live descendants, each with its reaped children's (stat(5) fields 14-17). */
async function treeTicks(pid: number): Promise<number> {
  const procs: { pid: number; ppid: number; ticks: number }[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => undefined);
    if (stat === undefined) continue;
    // After the name's ") ": state, ppid, … utime, stime, cutime, cstime at 11-14.
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    procs.push({ pid: Number(name), ppid: Number(fields[1]), ticks: fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) });
  }
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs) {
      if (tree.has(p.pid) || !tree.has(p.ppid)) continue;
      tree.add(p.pid);
      grew = true;
    }
  }
  return procs.filter((p) => tree.has(p.pid)).reduce((sum, p) => sum + p.ticks, 0);
}

interface Timed {
  /** Wall-clock seconds. */
  wall: number;
  /** The server's CPU seconds. */
  cpu: number;
}

/**
 * Times `f` after flushing dirty pages, so one run's writeback does not land in the next one's time; with a
 * server, also its CPU time, read again a moment after `f`: the server's last work (its session ending) counts.
 */
async function time(label: string, f: () => Promise<void>, t?: Target): Promise<Timed> {
  await runProgram("sync", []);
  const cpu0 = (await t?.cpu()) ?? 0;
  const t0 = performance.now();
  await f();
  const wall = (performance.now() - t0) / 1000;
  if (!t) {
    console.log(`  ${label}: ${wall.toFixed(2)} s`);
    return { wall, cpu: 0 };
  }
  await new Promise((r) => setTimeout(r, 200));
  const cpu = (await t.cpu()) - cpu0;
  console.log(`  ${label}: ${wall.toFixed(2)} s (server CPU ${cpu.toFixed(2)} s)`);
  return { wall, cpu };
}

async function lftp(t: Target, script: string, cwd: string): Promise<void> {
  const r = await runProgram(
    "lftp",
    ["-c", `set ftp:ssl-allow no; set net:max-retries 1; open -u '${t.user}','${t.password}' -p ${t.port} 127.0.0.1; ${script}`],
    { cwd, timeoutMs: 600_000 },
  );
  if (r.code !== 0) throw new Error(`lftp against ${t.name} failed (${r.code}): ${r.stderr}`);
}

/** lftp's `cat` of `remote` into /dev/null: the bytes are received and dropped. */
async function lftpToNull(t: Target, remote: string): Promise<void> {
  const script = `set ftp:ssl-allow no; set net:max-retries 1; open -u '${t.user}','${t.password}' -p ${t.port} 127.0.0.1; cat ${remote}`;
  const r = await runProgram("sh", ["-c", 'exec lftp -c "$0" > /dev/null', script], { timeoutMs: 600_000 });
  if (r.code !== 0) throw new Error(`lftp cat against ${t.name} failed (${r.code}): ${r.stderr}`);
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** bin/framefi-device on the card, switched into FTP mode. */
async function startOurs(card: string, state: string): Promise<Target> {
  const [port, setupPort, ftpPort] = [await freePort(), await freePort(), await freePort()];
  const p = start(bin("framefi-device"), [
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--setup-port",
    String(setupPort),
    "--ftp-port",
    String(ftpPort),
    "--card",
    card,
    "--state",
    state,
    "--boot-delay",
    "0",
  ]);
  try {
    await p.waitFor(/web API listening/, 15_000);
    const res = await fetch(`http://127.0.0.1:${port}/mode/ftp`, { method: "POST" });
    if (res.status !== 200) throw new Error(`POST /mode/ftp: ${res.status} ${await res.text()}`);
    await p.waitFor(/ftp: listening/, 15_000);
  } catch (e) {
    await p.stop();
    throw e;
  }
  const meter = await cpuMeter("ours", p.child.pid!);
  return { name: "ours", cpu: meter.read, port: ftpPort, user: "user", password: "password", remoteCard: "/", stop: () => p.stop().finally(meter.close) };
}

/** vsftpd with anonymous write access; chroot rules want a root-owned top folder, so the card sits below it. */
async function startVsftpd(dir: string, top: string): Promise<Target | string> {
  if (process.getuid?.() !== 0) return "needs root to start vsftpd with a chroot";
  if ((await runProgram("sh", ["-c", "command -v vsftpd"])).code !== 0) return "vsftpd is not installed";
  const port = await freePort();
  const pasv = await freePort();
  const conf = join(dir, "vsftpd.conf");
  await writeFile(
    conf,
    [
      "listen=YES",
      "listen_ipv6=NO",
      "listen_address=127.0.0.1",
      `listen_port=${port}`,
      "background=NO",
      "anonymous_enable=YES",
      "local_enable=NO",
      `anon_root=${top}`,
      "no_anon_password=YES",
      "write_enable=YES",
      "anon_upload_enable=YES",
      "anon_mkdir_write_enable=YES",
      "anon_other_write_enable=YES",
      "anon_umask=022",
      "seccomp_sandbox=NO",
      `pasv_min_port=${pasv}`,
      `pasv_max_port=${Math.min(pasv + 50, 65535)}`,
      "xferlog_enable=NO",
      "secure_chroot_dir=/var/run/vsftpd/empty",
      "",
    ].join("\n"),
  );
  await mkdir("/var/run/vsftpd/empty", { recursive: true });
  const p: RunningProgram = start("vsftpd", [conf]);
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (Date.now() > deadline) {
      await p.stop();
      return `vsftpd did not start: ${p.stderr()}`;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const meter = await cpuMeter("vsftpd", p.child.pid!);
  return { name: "vsftpd", cpu: meter.read, port, user: "anonymous", password: "bench", remoteCard: "/card", stop: () => p.stop().finally(meter.close) };
}

/** The 1 GB steps: upload, download into a file, download to /dev/null. */
async function bigSteps(t: Target, card: string, src: string, dir: string): Promise<[Timed, Timed, Timed]> {
  const remote = `${t.remoteCard}/big-${t.name}.bin`.replace("//", "/");
  const up = await time("upload 1 GB", () => lftp(t, `put big.bin -o ${remote}`, src), t);
  if ((await stat(join(card, `big-${t.name}.bin`))).size !== GB) throw new Error(`${t.name}: uploaded size differs`);
  const down = await time("download 1 GB", () => lftp(t, `get ${remote} -o down.bin`, dir), t);
  if ((await stat(join(dir, "down.bin"))).size !== GB) throw new Error(`${t.name}: downloaded size differs`);
  await rm(join(dir, "down.bin"));
  const toNull = await time("download 1 GB to /dev/null", () => lftpToNull(t, remote), t);
  await rm(join(card, `big-${t.name}.bin`));
  return [up, down, toNull];
}

export async function run(): Promise<void> {
  const dir = await tempDir("framefi-ftp-bench-");
  try {
    // Top folder (root-owned, for vsftpd's chroot) → card (served by both) ; src holds the local files.
    const top = join(dir, "top");
    const card = join(top, "card");
    const src = join(dir, "src");
    await mkdir(card, { recursive: true });
    await mkdir(join(src, "tree"), { recursive: true });
    const block = randomBytes(16 * 1024 * 1024);
    const big = join(src, "big.bin");
    await writeFile(big, Buffer.alloc(0));
    for (let i = 0; BIG && i < GB / block.length; i++) await writeFile(big, block, { flag: "a" });
    for (let d = 0; d < FILES / 100; d++) {
      await mkdir(join(src, "tree", `album${d}`));
      for (let f = 0; f < 100; f++) await writeFile(join(src, "tree", `album${d}`, `photo${f}.jpg`), randomBytes(200 * 1024));
    }
    // vsftpd's anonymous user writes into the card.
    await runProgram("chown", ["ftp:ftp", card]);

    if (BIG) {
      await time("cp of the 1 GB file into the card folder (reference)", async () => {
        await runProgram("cp", [big, join(card, "cp.bin")], { timeoutMs: 600_000 });
      });
      await rm(join(card, "cp.bin"));
    }

    const ours = await startOurs(card, join(dir, "state"));
    const vs = await startVsftpd(dir, top);
    const targets = typeof vs === "string" ? [ours] : [ours, vs];
    if (typeof vs === "string") console.log(`  vsftpd column skipped: ${vs}`);

    // Rounds alternate between the servers, each round in the other order (the first to run after a pause finds
    // the machine in another state), and the best time counts: other work on the machine (this box is shared)
    // then weighs on both columns alike.
    const times: Record<string, { up: Timed[]; down: Timed[]; toNull: Timed[]; mirror: Timed[] }> = {};
    try {
      // One mirror each, not measured, first: a device runs for days, and V8 compiles the FTP server's code in
      // its first hundreds of files (vsftpd, compiled ahead, gets the same turn).
      for (let i = 0; i < WARMUP; i++) {
        for (const t of targets)
          await lftp(t, `mirror -R --only-missing --no-perms --parallel=1 tree ${t.remoteCard}/warm-${t.name}-${i}`.replace("//", "/"), src);
      }
      for (let round = 1; round <= ROUNDS; round++) {
        for (const t of round % 2 === 1 ? targets : [...targets].reverse()) {
          console.log(`${t.name}, round ${round}:`);
          const none: Timed = { wall: Number.NaN, cpu: Number.NaN };
          const [up, down, toNull] = BIG ? await bigSteps(t, card, src, dir) : [none, none, none];
          // Into a new folder each round, the earlier ones kept until the end: on ext4 without a journal (this VM's
          // disk) each new file's inode search steps over every inode deleted in the last minutes, so a mirror just
          // after the last one's 1 000 files were deleted paid for those deletes, which made up a third of the
          // device's samples; the first mirror of a run paid nothing.
          const tree = `tree-${t.name}-${round}`;
          const mirror = await time(
            `mirror -R ${FILES} files of 200 KB`,
            () => lftp(t, `mirror -R --only-missing --no-perms --parallel=1 tree ${t.remoteCard}/${tree}`.replace("//", "/"), src),
            t,
          );
          if ((await listFiles(join(card, tree))) !== FILES) throw new Error(`${t.name}: mirror incomplete`);
          const r = (times[t.name] ??= { up: [], down: [], toNull: [], mirror: [] });
          r.up.push(up);
          r.down.push(down);
          r.toNull.push(toNull);
          r.mirror.push(mirror);
        }
      }
    } finally {
      for (const t of targets) await t.stop();
    }
    // Without the 1 GB steps (BENCH_FTP_STEPS=mirror) their columns say "—".
    const mbps = (s: number): string => (Number.isNaN(s) ? "—" : `${(GB / 1e6 / s).toFixed(0)} MB/s`);
    const seconds = (s: number): string => (Number.isNaN(s) ? "—" : `${s.toFixed(2)} s`);
    const median = (xs: number[]): number => {
      const sorted = [...xs].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    };
    for (const [label, pick] of [
      ["best", (xs: number[]) => Math.min(...xs)],
      ["median", median],
    ] as const) {
      if (label === "median" && ROUNDS < 3) continue;
      const wall = (xs: Timed[]): number => pick(xs.map((x) => x.wall));
      const cpu = (xs: Timed[]): string => seconds(pick(xs.map((x) => x.cpu)));
      console.log(`\n${label} of ${ROUNDS} rounds (wall time; below, the server's CPU time, each column's ${label === "best" ? "lowest" : "median"})`);
      console.log(`| server | upload 1 GB | download 1 GB | download 1 GB to /dev/null | mirror ${FILES} × 200 KB |\n|---|---|---|---|---|`);
      for (const [name, r] of Object.entries(times)) {
        console.log(`| ${name} | ${mbps(wall(r.up))} | ${mbps(wall(r.down))} | ${mbps(wall(r.toNull))} | ${wall(r.mirror).toFixed(2)} s |`);
      }
      for (const [name, r] of Object.entries(times)) {
        console.log(`| ${name}, CPU | ${cpu(r.up)} | ${cpu(r.down)} | ${cpu(r.toNull)} | ${cpu(r.mirror)} |`);
      }
      const [ours, vsftpd] = [times.ours, times.vsftpd];
      if (ours && vsftpd) {
        const perFile = (r: typeof ours): string => `${((wall(r.mirror) / FILES) * 1000).toFixed(2)} ms`;
        console.log(`mirror, ours / vsftpd: ${(wall(ours.mirror) / wall(vsftpd.mirror)).toFixed(2)}× (a file: ${perFile(ours)} against ${perFile(vsftpd)})`);
      }
    }
  } finally {
    await removeDir(dir);
  }
}
