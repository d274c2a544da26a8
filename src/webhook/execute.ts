// Running a hook's command: locating it as Go's exec.LookPath does, then spawning it directly
// (no shell) with its argv, environment and working directory. `runCommand` is the one place a
// process is started, so a faster spawn path can replace it without touching the callers.
import { spawn } from "node:child_process";
import { accessSync, closeSync, constants, existsSync, fstatSync, openSync, readSync, statSync, unlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";

export interface CommandSpec {
  /** Absolute path of the executable. */
  path: string;
  /** argv, argv[0] included (the execute-command as written in the hooks file). */
  argv: string[];
  /** Complete environment of the child. */
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Collect stdout and stderr combined; otherwise output is discarded. */
  captureOutput: boolean;
}

export interface CommandResult {
  /** Combined stdout and stderr, byte for byte. */
  output: Buffer;
  /** Go's error text: "exit status 1", "signal: killed", or the spawn failure; undefined on success. */
  error?: string;
  exitCode: number | null;
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the executable the way Go's exec.LookPath does: a name with a slash is checked as a
 * path, anything else is searched in $PATH. Returns an absolute path or throws with Go's message.
 */
export function lookPath(file: string): string {
  if (file.includes("/")) {
    if (isExecutableFile(file)) return resolve(file);
    let reason = "permission denied";
    try {
      statSync(file);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      reason = `stat ${file}: ${code === "ENOENT" ? "no such file or directory" : code === "ENOTDIR" ? "not a directory" : (e as Error).message}`;
    }
    throw new Error(`exec: ${JSON.stringify(file)}: ${reason}`);
  }
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    const candidate = join(dir === "" ? "." : dir, file);
    if (isExecutableFile(candidate)) return resolve(candidate);
  }
  throw new Error(`exec: ${JSON.stringify(file)}: executable file not found in $PATH`);
}

/** The path the reference looks up: relative commands resolve against command-working-directory. */
export function commandLookupPath(command: string, cwd: string | undefined): string {
  return isAbsolute(command) || !cwd ? command : join(cwd, command);
}

// Combined output goes to one unlinked temp file shared as the child's stdout and stderr, so
// the two streams interleave exactly as the command wrote them (Go's CombinedOutput shares one
// pipe the same way; Node cannot create a bare pipe).
const outputDir = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();

function openOutputFile(): number {
  const path = join(outputDir, `webhook-out-${process.pid}-${randomBytes(6).toString("hex")}`);
  const fd = openSync(path, "wx+", 0o600);
  unlinkSync(path);
  return fd;
}

function readOutputFile(fd: number): Buffer {
  const size = fstatSync(fd).size;
  const buf = Buffer.allocUnsafe(size);
  let off = 0;
  while (off < size) {
    const n = readSync(fd, buf, off, size - off, off);
    if (n === 0) break;
    off += n;
  }
  closeSync(fd);
  return buf.subarray(0, off);
}

/** Starts the command and resolves when it has exited. Never rejects. */
export function runCommand(spec: CommandSpec): Promise<CommandResult> {
  return new Promise((done) => {
    let child;
    let outFd: number | undefined;
    try {
      if (spec.captureOutput) outFd = openOutputFile();
      child = spawn(spec.path, spec.argv.slice(1), {
        argv0: spec.argv[0] ?? spec.path,
        cwd: spec.cwd || undefined,
        env: spec.env,
        stdio: outFd === undefined ? "ignore" : ["ignore", outFd, outFd],
        windowsHide: true,
      });
    } catch (e) {
      if (outFd !== undefined) closeSync(outFd);
      done({ output: Buffer.alloc(0), error: (e as Error).message, exitCode: null });
      return;
    }
    let spawnError: string | undefined;
    child.once("error", (e: NodeJS.ErrnoException) => {
      const cwdMissing = e.code === "ENOENT" && spec.cwd !== undefined && !existsSync(spec.cwd);
      spawnError = cwdMissing ? `chdir ${spec.cwd}: no such file or directory` : `fork/exec ${spec.path}: ${e.message}`;
    });
    child.once("close", (code, signal) => {
      const output = outFd === undefined ? Buffer.alloc(0) : readOutputFile(outFd);
      if (spawnError) done({ output, error: spawnError, exitCode: null });
      else if (signal) done({ output, error: `signal: ${signalName(signal)}`, exitCode: null });
      else if (code !== 0) done({ output, error: `exit status ${code}`, exitCode: code });
      else done({ output, exitCode: 0 });
    });
  });
}

function signalName(signal: NodeJS.Signals): string {
  const names: Record<string, string> = {
    SIGKILL: "killed",
    SIGTERM: "terminated",
    SIGINT: "interrupt",
    SIGSEGV: "segmentation fault",
    SIGABRT: "aborted",
    SIGHUP: "hangup",
    SIGPIPE: "broken pipe",
  };
  return names[signal] ?? signal;
}
