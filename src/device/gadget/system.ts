// The few system programs the gadget backend drives (mount, umount, mkfs.vfat, fsck.vfat), and what is mounted.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";

export type GadgetErrorCode = "unsupported" | "command-failed" | "no-image";

/** The USB gadget backend cannot do its job; the message says what is missing or what failed, and what to do. */
export class GadgetError extends Error {
  override readonly name = "GadgetError";
  constructor(
    readonly code: GadgetErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface CommandResult {
  exitCode: number;
  output: string;
}

/** Runs a program to its end; a program that cannot be started is a GadgetError, a non-zero exit is returned. */
export function runCommand(program: string, args: string[]): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { timeout: 120_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      const code = (error as NodeJS.ErrnoException | null)?.code;
      if (code === "ENOENT") reject(new GadgetError("unsupported", `${program} is not installed; install it (apt-get install dosfstools mount)`, { cause: error }));
      else resolve({ exitCode: error ? (typeof code === "number" ? code : 1) : 0, output });
    });
  });
}

/** Runs a program that must succeed. */
export async function mustRun(program: string, args: string[], what: string): Promise<void> {
  const result = await runCommand(program, args);
  if (result.exitCode !== 0) throw new GadgetError("command-failed", `cannot ${what}: ${program} ${args.join(" ")} exited ${result.exitCode}: ${result.output.split("\n").at(-1)}`);
}

/** Whether a filesystem is mounted at `path` (an absolute path without symlinks), from /proc/self/mountinfo. */
export async function isMountPoint(path: string): Promise<boolean> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  // Field 5 is the mount point, with space, tab, newline and backslash written as octal escapes.
  const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  return info.split("\n").some((line) => unescape(line.split(" ")[4] ?? "") === path);
}
