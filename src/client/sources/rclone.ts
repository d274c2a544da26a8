// Fetching a share into a local mirror with rclone (Debian's `rclone` package), run as a child process: one engine
// for WebDAV, SFTP and SMB, which lists folder by folder and compares size and modification time (or the server's
// checksum), so a second fetch of an unchanged share downloads nothing. Its configuration goes in RCLONE_CONFIG_*
// variables of its environment alone (never in its arguments, which `ps` shows to everyone), passwords obscured as
// rclone wants them; the user's own rclone.conf is not read. What rclone says on stderr is kept short and every
// secret is cut out of it before it reaches an error.
import { spawn } from "node:child_process";
import { mkdir, rm } from "node:fs/promises";
import { FrameFiError } from "../errors.js";
import { blankControls } from "../api/text.js";
import type { RemoteSource } from "./source.js";
import { hostKeyError } from "./sftp.js";

/** The remote's name in RCLONE_CONFIG_<NAME>_*. */
const REMOTE = "FRAMEFISOURCE";
/** Lines of rclone's stderr kept for an error, each cut to this many characters once secrets are out of it. */
const KEPT_LINES = 5;
const LINE_CHARS = 300;
/** Each line is kept this long before secrets are cut out: a secret cut in half would not be found, and leak. */
const RAW_LINE_CHARS = 8192;

/** rclone's last error when a mirrored name changed between file and folder on the share (ENOTDIR, EISDIR). */
const TYPE_CHANGED = /: (not a directory|is a directory)$/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string[];
}

/** Runs rclone with `env` only (PATH and HOME added); stdout is kept up to 4 KiB, stderr's last lines, cut. */
function run(args: string[], env: Record<string, string>, input: string | undefined, signal: AbortSignal | undefined): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("rclone", args, {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/", RCLONE_CONFIG: "/dev/null", ...env },
      stdio: ["pipe", "pipe", "pipe"],
      signal,
    });
    let stdout = "";
    const stderr: string[] = [];
    let partial = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      if (stdout.length < 4096) stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      const lines = (partial + d).split("\n");
      partial = lines.pop()!.slice(0, RAW_LINE_CHARS);
      for (const line of lines) {
        stderr.push(line.slice(0, RAW_LINE_CHARS));
        if (stderr.length > KEPT_LINES) stderr.shift();
      }
    });
    child.on("error", (e) => reject(e));
    child.on("close", (code) => {
      if (partial !== "") stderr.push(partial);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** `secret` as rclone's config wants it (`rclone obscure`, reading it from stdin). */
async function obscure(secret: string): Promise<string> {
  const r = await run(["obscure", "-"], {}, secret, undefined);
  if (r.code !== 0) throw new FrameFiError("FRAMEFI_SOURCE_RCLONE_FAILED", { source: "rclone obscure", reason: "cannot obscure the password" });
  return r.stdout.trim();
}

/** What rclone said, with every secret and its obscured form cut out, control characters blanked. */
export function redact(lines: string[], secrets: string[]): string {
  const meaningful = lines.map((l) => l.replace(/^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d /, "")).filter((l) => !/^NOTICE: Config file/.test(l));
  const cut = meaningful.map((line) => {
    let l = line;
    for (const s of secrets) if (s.length > 0) l = l.split(s).join("***");
    return l.slice(0, LINE_CHARS);
  });
  return blankControls(cut.join(" / ")).trim() || "no message";
}

/**
 * Makes `dest` a copy of the share: new and changed files downloaded (each lands whole: rclone writes a partial
 * file, then renames it), files gone from the share removed. A share that cannot be listed or read throws and
 * removes nothing (rclone does not delete after an error).
 */
export async function fetchSource(source: RemoteSource, dest: string, signal?: AbortSignal): Promise<void> {
  await mkdir(dest, { recursive: true });
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  for (const [key, value] of Object.entries(source.backend.options)) {
    const secret = source.backend.secrets.includes(key);
    const v = secret ? await obscure(value) : value;
    if (secret) secrets.push(value, v);
    env[`RCLONE_CONFIG_${REMOTE}_${key.toUpperCase()}`] = v;
  }
  secrets.push(...(source.backend.hidden ?? []));
  const args = [
    "sync",
    `${REMOTE}:${source.backend.path}`,
    dest,
    "--create-empty-src-dirs",
    "--log-level",
    "ERROR",
    "--stats",
    "0",
    "--retries",
    "1",
    "--low-level-retries",
    "2",
    "--contimeout",
    "15s",
    "--timeout",
    "60s",
    // Our own names on the card (.trash, …) and hidden files are not photos for the frame.
    "--exclude",
    ".*",
    "--exclude",
    ".*/**",
  ];
  const attempt = async (): Promise<Run> => {
    try {
      const r = await run(args, env, undefined, signal);
      if (signal?.aborted) throw signal.reason;
      return r;
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      const reason = (e as NodeJS.ErrnoException).code === "ENOENT" ? "rclone is not installed (apt install rclone)" : (e as Error).message;
      throw new FrameFiError("FRAMEFI_SOURCE_RCLONE_FAILED", { source: source.display, reason }, { cause: e });
    }
  };
  let r = await attempt();
  if (r.code !== 0 && r.stderr.some((l) => TYPE_CHANGED.test(l))) {
    // A name that is a file in the mirror and a folder on the share (or the reverse) stops rclone for good: it
    // neither replaces one by the other nor deletes after an error. The mirror is only a copy: fetch it afresh.
    await rm(dest, { recursive: true, force: true });
    await mkdir(dest, { recursive: true });
    r = await attempt();
  }
  if (r.code !== 0)
    throw hostKeyError(source, r.stderr) ?? new FrameFiError("FRAMEFI_SOURCE_UNREACHABLE", { source: source.display, reason: redact(r.stderr, secrets) });
}
