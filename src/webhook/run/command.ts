// Assembling a hook's command as the reference does: locating it as Go's exec.LookPath does, and
// its argv, environment and temp files (pass-file-to-command) from the request's values.
import { accessSync, closeSync, constants, openSync, statSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { goBase64Decode } from "../go/base64.js";
import { encodeBytes } from "../go/bytes.js";
import { errnoText } from "../go/errno.js";
import type { Argument, Hook, HookRequest } from "../hooks/hook.js";
import { describeArgument, getArgument } from "../hooks/values.js";
import type { Log, LogFields } from "../log/log.js";

export interface CommandSpec {
  /** Absolute path of the executable. */
  path: string;
  /** argv, argv[0] included (the execute-command as written in the hooks file). */
  argv: string[];
  /** Variables set over the server's own environment. */
  env: Record<string, string>;
  cwd?: string;
  /** Collect stdout and stderr combined; otherwise output is discarded. */
  captureOutput: boolean;
  /** Keep at most this many bytes of the collected output, the last ones (0 or absent: all). */
  maxOutput?: number;
  /** exclude-stderr-from-response: stderr is kept apart (CommandResult.stderr), not in `output`. */
  separateStderr?: boolean;
  /** command-timeout in milliseconds; 0 or absent is none. */
  timeoutMs?: number;
  /** Told when the timeout sends SIGTERM, and SIGKILL 5 s later if the process group is still there. */
  onTimeout?: (signal: "SIGTERM" | "SIGKILL") => void;
}

export interface CommandResult {
  /** Combined stdout and stderr, byte for byte (only its tail, after a cutMarker line, beyond maxOutput). */
  output: Buffer;
  /** Go's error text: "exit status 1", "signal: killed", or the spawn failure; undefined on success. */
  error?: string;
  exitCode: number | null;
  /** With separateStderr: the command's stderr (its tail, as `output`). */
  stderr?: Buffer;
  /** The signal that ended the command ("SIGTERM"), when one did. */
  signal?: NodeJS.Signals;
  /** The command-timeout expired and the command was stopped. */
  timedOut?: boolean;
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
      reason = `stat ${file}: ${code === "ENOENT" || code === "ENOTDIR" ? errnoText(code) : (e as Error).message}`;
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

/** The value of `arg` in the request, or undefined, logged as "<context>: couldn't retrieve argument for …". */
export function readArgument(arg: Argument, req: HookRequest, context: string, log: Log, fields: LogFields): string | undefined {
  try {
    return getArgument(arg, req);
  } catch {
    log.print(`[${req.id}] ${context}: couldn't retrieve argument for ${describeArgument(arg)}`, fields);
    return undefined;
  }
}

/** A hook's argv, environment, and the temp files made for pass-file-to-command (removed with removeTempFiles). */
export interface Assembled {
  argv: string[];
  env: Record<string, string>;
  files: string[];
}

/** Makes a pass-file-to-command file: its path, or why it could not be made. */
export type FileMaker = (dir: string, envName: string, data: Buffer) => string | Error;

/**
 * The reference's handleHook up to the start: argv, environment and files from the request.
 * `makeFile` writes each file (-test-request passes one that writes nothing).
 */
export function assembleCommand(
  hook: Hook,
  req: HookRequest,
  cwd: string | undefined,
  log: Log,
  fields: LogFields,
  makeFile: FileMaker = createTempFile,
): Assembled {
  const rid = req.id;
  const argv = [hook["execute-command"]];
  for (const arg of hook["pass-arguments-to-command"] ?? []) {
    argv.push(readArgument(arg, req, "error extracting command arguments", log, fields) ?? "");
  }

  const env: Record<string, string> = {};
  for (const arg of hook["pass-environment-to-command"] ?? []) {
    const value = readArgument(arg, req, "error extracting command arguments for environment", log, fields);
    if (value !== undefined) env[arg.envname ? arg.envname : `HOOK_${arg.name ?? ""}`] = value;
  }

  const files: string[] = [];
  for (const arg of hook["pass-file-to-command"] ?? []) {
    const value = readArgument(arg, req, "error extracting command arguments for file", log, fields);
    if (value === undefined) continue;
    let envName = arg.envname;
    if (!envName) {
      envName = `HOOK_${(arg.name ?? "").toUpperCase()}`;
      log.print(`no ENVVAR name specified, falling back to [${envName}]`, fields);
    }
    let data = encodeBytes(value);
    if (arg.base64decode) {
      const decoded = goBase64Decode(data);
      if (decoded.error !== undefined) log.print(`error decoding string [${decoded.error}]`, fields);
      data = decoded.data;
    }
    const file = makeFile(cwd ?? tmpdir(), envName, data);
    if (typeof file !== "string") {
      log.print(`[${rid}] error creating temp file [${file.message}]`, fields);
      continue;
    }
    log.print(`[${rid}] writing env ${envName} file ${file}`, fields);
    files.push(file);
    env[envName] = file;
  }
  return { argv, env, files };
}

/** Removes the files assembleCommand made, once the command has run. */
export function removeTempFiles(files: string[], rid: string, log: Log, fields: LogFields): void {
  for (const f of files) {
    log.print(`[${rid}] removing file ${f}`, fields);
    try {
      unlinkSync(f);
    } catch (e) {
      log.print(`[${rid}] error removing file ${f} [${(e as Error).message}]`, fields);
    }
  }
}

/** Go's ioutil.TempFile(dir, pattern): a new file named pattern + random digits, mode 0600. */
function createTempFile(dir: string, pattern: string, data: Buffer): string | Error {
  for (let attempt = 0; attempt < 100; attempt++) {
    const name = join(dir, pattern + String(Math.floor(Math.random() * 1e9)).padStart(9, "0"));
    let fd: number;
    try {
      fd = openSync(name, "wx", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") continue;
      return e as Error;
    }
    try {
      writeSync(fd, data);
      return name;
    } catch (e) {
      unlinkSync(name);
      return e as Error;
    } finally {
      closeSync(fd);
    }
  }
  return new Error(`could not create a temp file in ${dir}`);
}
