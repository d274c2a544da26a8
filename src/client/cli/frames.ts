// Several frames in one .env: `[frame NAME]` sections, and the named sets of photos they show, `[collection NAME]`. `framefi sync --all` runs `framefi sync NAME` for each, at
// once, as child processes (each with its own device lock, mode switches and Ctrl-C), and prints one line per frame
// as it ends. The exit code says which failed: frame n of the file (1-based) sets bit n-1; the 7th and later all
// set bit 6 (64), so the code stays below 128, where shells report signals.
import { type ChildProcess, spawn } from "node:child_process";
import { isAbsolute, join, resolve } from "node:path";
import { UsageError } from "./usage.js";
import { readEnvFile, sectionNames } from "./env-file.js";
import { keyword } from "../photos/keywords.js";

/** The NAMEs of the .env's [frame NAME] sections, in the file's order. */
export async function frameNames(cwd = process.cwd()): Promise<string[]> {
  return sectionNames(await readEnvFile(join(cwd, ".env")), "frame");
}

export interface Collection {
  /** The folder its photos come from: SOURCE, or FOLDER under it. */
  dir: string;
  /** FROM and TO, whole days in UTC (TO included). */
  range: { fromMs?: number | undefined; toMs?: number | undefined };
  /** KEYWORDS: only photos tagged with one of them (as photos/keywords.ts compares them); undefined: all. */
  keywords?: string[] | undefined;
}

/** KEYWORDS=winter, snow: a comma-separated list. */
function keywordList(text: string | undefined, name: string): string[] | undefined {
  if (text === undefined) return undefined;
  const list = text.split(",").map((k) => ({ given: k, k: keyword(k) }));
  const bad = list.find((x) => x.k === undefined);
  if (bad) throw new UsageError("FRAMEFI_BAD_COLLECTION_KEYWORDS", { name, value: bad.given.trim() });
  return [...new Set(list.map((x) => x.k!))];
}

function day(text: string | undefined, key: string, name: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : NaN;
  // Date.parse takes 2023-02-31 as March 3rd: only a day that exists is one.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text) throw new UsageError("FRAMEFI_BAD_COLLECTION_DATE", { name, key, value: text });
  return ms;
}

/** The .env's [collection NAME]; a missing one, or one without SOURCE, is a usage error. */
export async function readCollection(name: string, cwd = process.cwd()): Promise<Collection> {
  const values = await readEnvFile(join(cwd, ".env"));
  const get = (key: string): string | undefined => values[`collection ${name}.${key}`];
  if (!sectionNames(values, "collection").includes(name)) {
    throw new UsageError("FRAMEFI_NO_SUCH_COLLECTION", { name, known: sectionNames(values, "collection").join(", ") || "none" });
  }
  const source = get("SOURCE");
  if (!source) throw new UsageError("FRAMEFI_COLLECTION_NEEDS_SOURCE", { name });
  const folder = get("FOLDER") ?? "";
  // FOLDER narrows SOURCE: it stays inside it.
  if (isAbsolute(folder) || folder.split(/[\\/]/).includes("..")) throw new UsageError("FRAMEFI_BAD_COLLECTION_FOLDER", { name, folder });
  const to = day(get("TO"), "TO", name);
  return {
    dir: resolve(cwd, source, folder),
    range: { fromMs: day(get("FROM"), "FROM", name), toMs: to === undefined ? undefined : to + 86_400_000 },
    keywords: keywordList(get("KEYWORDS"), name),
  };
}

/** What a child said last: the lines kept are its output's last few kilobytes. */
const TAIL = 8192;

interface FrameRun {
  name: string;
  exit: number;
  line: string;
}

function runFrame(name: string, argv: string[], children: Set<ChildProcess>): Promise<FrameRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [process.argv[1]!, ...argv, name], { stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout = (stdout + d.toString()).slice(-TAIL)));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-TAIL)));
    const last = (text: string): string => text.trimEnd().split("\n").at(-1) ?? "";
    child.once("error", (e) => resolve({ name, exit: 1, line: `cannot start framefi: ${e.message}` }));
    child.once("close", (code, signal) => {
      const exit = code ?? 128;
      const line = exit === 0 ? last(stdout) : `${last(stdout).startsWith("Sync done") ? `${last(stdout)} ` : ""}${last(stderr) || `stopped by ${signal}`}`;
      resolve({ name, exit, line });
    });
  });
}

/** `framefi sync --all`: every frame at once; `argv` is the command line as given. */
export async function syncAll(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const names = await frameNames();
  if (names.length === 0) throw new UsageError("FRAMEFI_NO_FRAMES", {});
  const childArgv = argv.filter((a) => a !== "--all");
  let code = 0;
  const children = new Set<ChildProcess>();
  // Ctrl-C reaches every child from the terminal (each puts its device back); SIGTERM is passed on. Either way
  // this process waits for them, and their exit codes count.
  const onInterrupt = (): void => undefined;
  const onTerminate = (): void => {
    for (const c of children) c.kill("SIGTERM");
  };
  process.on("SIGINT", onInterrupt);
  process.on("SIGTERM", onTerminate);
  await Promise.all(
    names.map(async (name, i) => {
      const r = await runFrame(name, childArgv, children);
      if (r.exit === 0) out(`${name}: ${r.line}`);
      else {
        err(`${name}: failed (exit ${r.exit}): ${r.line.replace(/^framefi: /, "")}`);
        code |= 1 << Math.min(i, 6);
      }
    }),
  ).finally(() => {
    process.off("SIGINT", onInterrupt);
    process.off("SIGTERM", onTerminate);
  });
  return code;
}
