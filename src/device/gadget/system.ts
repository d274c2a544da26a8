// The few system programs the gadget backend drives (mount, umount, mkfs.vfat, fsck.vfat, fatsort), and what is
// mounted.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { DeviceError, type ErrorCode } from "../errors.js";

type GadgetErrorCode = Extract<
  ErrorCode,
  | "DEVICE_GADGET_TOOL_MISSING"
  | "DEVICE_GADGET_UNSUPPORTED"
  | "DEVICE_GADGET_BIND_FAILED"
  | "DEVICE_GADGET_COMMAND_FAILED"
  | "DEVICE_CARD_IMAGE_MISSING"
  | "DEVICE_CARD_IMAGE_TOO_SMALL"
  | "DEVICE_FSCK_STOPPED"
  | "DEVICE_CARD_IMAGE_NOT_FAT"
  | "DEVICE_UNMOUNT_FAILED"
  | "DEVICE_NO_SUCH_COLLECTION"
  | "DEVICE_COLLECTION_NEEDS_MSC"
>;

/** The USB gadget backend cannot do its job; the message says what is missing or what failed, and what to do. */
export class GadgetError<C extends GadgetErrorCode = GadgetErrorCode> extends DeviceError<C> {
  override name = "GadgetError";
}

export interface CommandResult {
  /** The exit code; -1 when the program did not exit by itself (see `stopped`). */
  exitCode: number;
  output: string;
  /** How the program ended when it did not exit by itself ("killed by SIGKILL", "stopped after 120 s"). */
  stopped?: string;
}

const COMMAND_TIMEOUT_MS = 120_000;

/** Runs a program to its end; a program that cannot be started is a GadgetError, a non-zero exit is returned. */
export function runCommand(program: string, args: string[], env?: NodeJS.ProcessEnv): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { timeout: COMMAND_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024, env: env ?? process.env }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      const code = error?.code;
      if (code === "ENOENT") reject(new GadgetError("DEVICE_GADGET_TOOL_MISSING", { program }, { cause: error }));
      else if (!error) resolve({ exitCode: 0, output });
      else if (typeof code === "number") resolve({ exitCode: code, output });
      // Killed, timed out or its output too large: never mistaken for an exit code (fsck.vfat's 1 means "repaired").
      else
        resolve({
          exitCode: -1,
          output,
          stopped: error.killed ? `stopped after ${COMMAND_TIMEOUT_MS / 1000} s` : `killed by ${error.signal ?? error.message}`,
        });
    });
  });
}

/** How a run that failed ended, for an error message. */
export function failure(result: CommandResult): string {
  const last = result.output.split("\n").at(-1);
  return `${result.stopped ?? `exited ${result.exitCode}`}${last ? `: ${last}` : ""}`;
}

/** Runs a program that must succeed. */
export async function mustRun(program: string, args: string[], what: string, env?: NodeJS.ProcessEnv): Promise<void> {
  const result = await runCommand(program, args, env);
  if (result.exitCode !== 0) throw new GadgetError("DEVICE_GADGET_COMMAND_FAILED", { what, command: `${program} ${args.join(" ")}`, failure: failure(result) });
}

/** Whether a filesystem is mounted at `path` (an absolute path without symlinks), from /proc/self/mountinfo. */
export async function isMountPoint(path: string): Promise<boolean> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  // Field 5 is the mount point, with space, tab, newline and backslash written as octal escapes.
  const unescapeOctal = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  return info.split("\n").some((line) => unescapeOctal(line.split(" ")[4] ?? "") === path);
}
