// `npm start`: the whole system on built-in defaults. Starts the device service (its card a local folder with a
// few sample pictures on first start) and the hook server with examples/hooks.json, prints the addresses and a
// curl line to try, and stops both cleanly on Ctrl-C. Every default can be changed with an environment variable.
import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdir, readdir, stat } from "node:fs/promises";
import { delimiter, join, relative, resolve } from "node:path";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { surviveClosedOutput } from "./shared/closed-output.js";

const root = resolve(fileURLToPath(import.meta.url), "../../..");

export interface StartConfig {
  /** Holds sdcard/ (the device's card), photos/ (what sync-frame copies to it) and state/ (settings). */
  demoDir: string;
  devicePort: number;
  hooksPort: number;
  ftpPort: number;
  /** The device's Wi-Fi setup page, served after a Wi-Fi reset (holding the panel's button). */
  setupPort: number;
  hookSecret: string;
  githubSecret: string;
}

/** The environment variables the launcher reads, with their defaults (the README lists them). */
export const DEFAULTS = {
  FRAMEFI_DEMO_DIR: "demo",
  FRAMEFI_DEVICE_PORT: "8080",
  FRAMEFI_HOOKS_PORT: "9000",
  FRAMEFI_FTP_PORT: "2121",
  FRAMEFI_SETUP_PORT: "8081",
  FRAMEFI_HOOK_SECRET: "frame-demo-secret",
  FRAMEFI_GITHUB_SECRET: "github-demo-secret",
} as const;

class StartError extends Error {}

function port(name: keyof typeof DEFAULTS, env: NodeJS.ProcessEnv): number {
  const text = env[name] ?? DEFAULTS[name];
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new StartError(`${name} must be a port number from 1 to 65535, got "${text}"`);
  return n;
}

export function configFrom(env: NodeJS.ProcessEnv): StartConfig {
  const secret = (name: "FRAMEFI_HOOK_SECRET" | "FRAMEFI_GITHUB_SECRET"): string => {
    const value = env[name] ?? DEFAULTS[name];
    if (value.length < 8) throw new StartError(`${name} must be at least 8 characters long (the hooks refuse shorter secrets)`);
    return value;
  };
  return {
    demoDir: resolve(env.FRAMEFI_DEMO_DIR ?? DEFAULTS.FRAMEFI_DEMO_DIR),
    devicePort: port("FRAMEFI_DEVICE_PORT", env),
    hooksPort: port("FRAMEFI_HOOKS_PORT", env),
    ftpPort: port("FRAMEFI_FTP_PORT", env),
    setupPort: port("FRAMEFI_SETUP_PORT", env),
    hookSecret: secret("FRAMEFI_HOOK_SECRET"),
    githubSecret: secret("FRAMEFI_GITHUB_SECRET"),
  };
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** On first start: a card with two sample pictures, and a photos folder with all of them (for sync-frame). */
async function prepareDemo(demoDir: string): Promise<{ card: string; photos: string; state: string }> {
  const pictures = join(root, "examples", "pictures");
  const card = join(demoDir, "sdcard");
  const photos = join(demoDir, "photos");
  const state = join(demoDir, "state");
  if (!(await exists(card))) {
    await mkdir(card, { recursive: true });
    for (const name of ["sunset.jpg", "sea.jpg"]) await cp(join(pictures, name), join(card, name));
  }
  if (!(await exists(photos))) await cp(pictures, photos, { recursive: true });
  await mkdir(state, { recursive: true });
  return { card, photos, state };
}

/** Copies a child's output to ours, each line tagged with the program's name. */
function relay(child: ChildProcess, tag: string): void {
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream })
      .on("line", (line) => process.stdout.write(`[${tag}] ${line}\n`))
      .on("error", () => undefined); // a pipe read error ends the relay, and the child's exit is reported anyway
  }
}

/** The ports the launcher gives out, with the variable that sets each and what it is for. */
function portsOf(config: StartConfig): { port: number; variable: string; what: string }[] {
  return [
    { port: config.devicePort, variable: "FRAMEFI_DEVICE_PORT", what: "the device API" },
    { port: config.hooksPort, variable: "FRAMEFI_HOOKS_PORT", what: "the hook server" },
    { port: config.ftpPort, variable: "FRAMEFI_FTP_PORT", what: "the device's FTP server" },
    { port: config.setupPort, variable: "FRAMEFI_SETUP_PORT", what: "the device's setup page after a Wi-Fi reset" },
  ];
}

/** Whether something already listens on host:port (a first `npm start`, say). */
function taken(host: string, port: number): Promise<boolean> {
  return new Promise((res) => {
    const probe = createServer();
    probe.once("error", () => res(true));
    probe.listen(port, host, () => probe.close(() => res(false)));
  });
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

interface Program {
  name: string;
  child: ChildProcess;
  exited: Promise<number | string>;
}

function launch(name: string, args: string[], env: NodeJS.ProcessEnv): Program {
  // Own process group: a Ctrl-C reaches only the launcher, which then stops each program once, in order.
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  relay(child, name);
  const exited = new Promise<number | string>((res) => {
    child.once("close", (code, signal) => res(code ?? signal ?? -1));
    // A program that could not be started at all (EAGAIN, ENOMEM) ends like one that exited.
    child.once("error", (e: NodeJS.ErrnoException) => res(e.code ?? e.message));
  });
  return { name, child, exited };
}

/** How long the hook server may let a running command (a sync) finish on Ctrl-C; the launcher waits a little longer. */
const HOOKS_SHUTDOWN_S = 30;

async function main(): Promise<number> {
  const config = configFrom(process.env);
  const host = "127.0.0.1";
  const ports = portsOf(config);
  for (const [i, p] of ports.entries()) {
    const twin = ports.slice(0, i).find((q) => q.port === p.port);
    if (twin) throw new StartError(`${twin.variable} and ${p.variable} are both ${p.port}; give each its own port.`);
    if (await taken(host, p.port)) {
      throw new StartError(`port ${p.port} (${p.what}) is already in use; is FrameFi already running? Stop it, or set ${p.variable} to a free port.`);
    }
  }
  const { card, photos, state } = await prepareDemo(config.demoDir);
  const cardFiles = (await readdir(card, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).length;
  const deviceUrl = `http://${host}:${config.devicePort}`;
  const hooksUrl = `http://${host}:${config.hooksPort}`;

  const device = launch(
    "device",
    [
      join(root, "bin", "framefi-device"),
      "--host",
      host,
      "--port",
      String(config.devicePort),
      "--card",
      card,
      "--state",
      state,
      "--ftp-port",
      String(config.ftpPort),
      "--setup-port",
      String(config.setupPort),
    ],
    // An 8 GiB card unless FRAMEFI_CARD_SIZE says otherwise: the screen's figures and capacity bar look like a frame's.
    { ...process.env, FRAMEFI_CARD_SIZE: process.env.FRAMEFI_CARD_SIZE ?? "8GiB" },
  );
  // The hook server's commands run the client (`framefi`, found on PATH) against this device.
  const hooksEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(root, "bin")}${delimiter}${process.env.PATH ?? ""}`,
    FRAMEFI_DEVICE: `${host}:${config.devicePort}`,
    FRAMEFI_PHOTOS: photos,
    FRAMEFI_HOOK_SECRET: config.hookSecret,
    FRAMEFI_GITHUB_SECRET: config.githubSecret,
  };
  const hooksFile = join(root, "examples", "hooks.json");
  const hooks = launch(
    "hooks",
    [
      join(root, "bin", "webhook"),
      "-hooks",
      hooksFile,
      "-template",
      "-ip",
      host,
      "-port",
      String(config.hooksPort),
      "-verbose",
      "-shutdown-timeout",
      `${HOOKS_SHUTDOWN_S}s`,
    ],
    hooksEnv,
  );
  const programs = [device, hooks];

  let stopping = false;
  const alive = (p: Program): boolean => p.child.exitCode === null && p.child.signalCode === null;
  /** Hook server first: its graceful shutdown lets a running sync finish and put the device back in MSC mode. */
  const stopAll = async (): Promise<void> => {
    stopping = true;
    for (const p of [...programs].reverse()) {
      if (alive(p)) p.child.kill("SIGTERM");
      const timer = setTimeout(() => p.child.kill("SIGKILL"), (HOOKS_SHUTDOWN_S + 5) * 1000);
      await p.exited;
      clearTimeout(timer);
    }
  };
  let signals = 0;
  const interrupted = new Promise<"interrupted">((res) => {
    const onSignal = (): void => {
      // A second Ctrl-C stops everything at once.
      if (++signals > 1) {
        process.stdout.write("Stopping at once.\n");
        for (const p of programs) if (alive(p)) p.child.kill("SIGKILL");
      }
      res("interrupted");
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    // A supervisor that stops `npm start` may signal npm alone; the launcher, orphaned, then stops too.
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) res("interrupted");
    }, 1_000).unref();
  });
  // Should the launcher die some other way, take the programs with it.
  process.once("exit", () => {
    for (const p of programs) if (p.child.exitCode === null) p.child.kill("SIGTERM");
  });
  const died = Promise.race(programs.map((p) => p.exited.then((code) => ({ program: p.name, code }))));

  const ready = (async (): Promise<"ready"> => {
    const deadline = Date.now() + 30_000;
    while (!(await answers(`${deviceUrl}/`)) || !(await answers(`${hooksUrl}/`))) {
      if (stopping) return "ready";
      if (Date.now() > deadline) throw new StartError("the device or the hook server did not answer within 30 s; see their output above");
      await sleep(100);
    }
    return "ready";
  })();

  const first = await Promise.race([ready, interrupted, died]);
  if (first === "interrupted") {
    await stopAll();
    return 0;
  }
  if (first !== "ready") {
    process.stderr.write(
      `framefi start: the ${first.program === "device" ? "device service" : "hook server"} stopped (exit ${first.code}) before it was ready; its output above says why. The FRAMEFI_* variables in the README change its settings.\n`,
    );
    await stopAll();
    return 1;
  }

  const rel = (p: string): string => relative(process.cwd(), p) || ".";
  process.stdout.write(
    [
      "",
      "FrameFi is running:",
      `  device API    ${deviceUrl}/   (card: ${rel(card)}, ${cardFiles} files; FTP port ${config.ftpPort} in FTP mode)`,
      `  web panel     ${deviceUrl}/panel/`,
      `  hook server   ${hooksUrl}/hooks/   (${rel(hooksFile)})`,
      "",
      `Try it: sync ${rel(photos)} to the frame (watch the panel):`,
      // Secrets stay out of logs: only the quickstart's well-known default is printed.
      config.hookSecret === DEFAULTS.FRAMEFI_HOOK_SECRET
        ? `  curl -N -X POST '${hooksUrl}/hooks/sync-frame?secret=${config.hookSecret}'`
        : `  curl -N -X POST "${hooksUrl}/hooks/sync-frame?secret=$FRAMEFI_HOOK_SECRET"`,
      "",
      "Ctrl-C stops both.",
      "",
    ].join("\n"),
  );

  const end = await Promise.race([interrupted, died]);
  if (end === "interrupted") {
    process.stdout.write(`Stopping... (a running sync may take up to ${HOOKS_SHUTDOWN_S} s to finish; Ctrl-C again to stop at once)\n`);
    await stopAll();
    process.stdout.write("Stopped.\n");
    return 0;
  }
  if (!stopping)
    process.stderr.write(`framefi start: the ${end.program === "device" ? "device service" : "hook server"} stopped (exit ${end.code}); stopping the other.\n`);
  await stopAll();
  return 1;
}

surviveClosedOutput();
try {
  process.exitCode = await main();
} catch (e) {
  process.stderr.write(`framefi start: ${e instanceof StartError ? e.message : ((e as Error).stack ?? String(e))}\n`);
  process.exitCode = 1;
}
