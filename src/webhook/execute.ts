// Running a hook's command: locating it as Go's exec.LookPath does, then spawning it directly
// (no shell) with its argv, environment and working directory. `runCommand` is the one place a
// process is started, so a faster spawn path can replace it without touching the callers.
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
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
  output: string;
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

/** Starts the command and resolves when it has exited. Never rejects. */
export function runCommand(spec: CommandSpec): Promise<CommandResult> {
  return new Promise((done) => {
    let child;
    try {
      child = spawn(spec.path, spec.argv.slice(1), {
        argv0: spec.argv[0] ?? spec.path,
        cwd: spec.cwd || undefined,
        env: spec.env,
        stdio: spec.captureOutput ? ["ignore", "pipe", "pipe"] : "ignore",
        windowsHide: true,
      });
    } catch (e) {
      done({ output: "", error: (e as Error).message, exitCode: null });
      return;
    }
    const chunks: Buffer[] = [];
    child.stdout?.on("data", (c: Buffer) => chunks.push(c));
    child.stderr?.on("data", (c: Buffer) => chunks.push(c));
    let spawnError: string | undefined;
    child.once("error", (e) => {
      spawnError = `fork/exec ${spec.path}: ${e.message}`;
    });
    child.once("close", (code, signal) => {
      const output = Buffer.concat(chunks).toString("utf8");
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
