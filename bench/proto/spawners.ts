// Ways to run a command and capture its combined stdout+stderr and exit status.
// All share one interface, the shape execute.ts could export.
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface RunOptions {
  cwd: string;
  /** Added over the server's own environment. */
  env: Record<string, string>;
}

export interface RunResult {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  signal: string | null;
  output: Buffer;
}

export interface Spawner {
  run(file: string, args: string[], opts: RunOptions): Promise<RunResult>;
}

/** child_process.spawn, output piped (stdout and stderr interleaved as they arrive). */
export function pipesSpawner(): Spawner {
  return {
    run(file, args, opts) {
      return new Promise((resolve, reject) => {
        const child = spawn(file, args, {
          cwd: opts.cwd,
          env: { ...process.env, ...opts.env },
          stdio: ["ignore", "pipe", "pipe"],
        });
        const chunks: Buffer[] = [];
        child.stdout.on("data", (c: Buffer) => chunks.push(c));
        child.stderr.on("data", (c: Buffer) => chunks.push(c));
        child.once("error", reject);
        child.once("close", (code, signal) => resolve({ code, signal, output: Buffer.concat(chunks) }));
      });
    },
  };
}

/** child_process.spawn without output capture: the cost of fork+exec alone. */
export function ignoreSpawner(): Spawner {
  return {
    run(file, args, opts) {
      return new Promise((resolve, reject) => {
        const child = spawn(file, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: "ignore" });
        child.once("error", reject);
        child.once("exit", (code, signal) => resolve({ code, signal, output: Buffer.alloc(0) }));
      });
    },
  };
}

interface Pending {
  chunks: Buffer[];
  resolve: (r: RunResult) => void;
  reject: (e: Error) => void;
}

const signalNames: Record<number, string> = { 1: "SIGHUP", 2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM" };

/**
 * A long-lived helper process that starts commands on request (protocol in spawn-helper.c).
 * `command` is the helper: the C binary, or node running spawn-helper-node.js.
 */
export function helperSpawner(command: string, args: string[] = []): Spawner {
  const helper: ChildProcess = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let buf: Buffer = Buffer.alloc(0);
  helper.stdout!.on("data", (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    let off = 0;
    while (buf.length - off >= 9) {
      const len = buf.readUInt32LE(off);
      if (buf.length - off < 4 + len) break;
      const type = buf[off + 4];
      const id = buf.readUInt32LE(off + 5);
      const p = pending.get(id);
      if (p) {
        if (type === 0x4f /* O */) p.chunks.push(buf.subarray(off + 9, off + 4 + len));
        else if (type === 0x58 /* X */) {
          const st = buf.readInt32LE(off + 9);
          pending.delete(id);
          p.resolve({
            code: st >= 0 ? st : null,
            signal: st >= 0 ? null : (signalNames[-st] ?? `SIG${-st}`),
            output: Buffer.concat(p.chunks),
          });
        } else if (type === 0x46 /* F */) {
          pending.delete(id);
          p.reject(new Error(`spawn failed: errno ${buf.readInt32LE(off + 9)}`));
        }
      }
      off += 4 + len;
    }
    buf = off === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(off));
  });
  const baseEnv = Object.entries(process.env).map(([k, v]) => `${k}=${v}`);
  return {
    run(file, args, opts) {
      const id = nextId++;
      const env = baseEnv.concat(Object.entries(opts.env).map(([k, v]) => `${k}=${v}`));
      const strings = [opts.cwd, file, file, ...args, ...env].join("\0") + "\0";
      const body = Buffer.from(strings, "utf8");
      const frame = Buffer.allocUnsafe(17 + body.length);
      frame.writeUInt32LE(13 + body.length, 0);
      frame[4] = 0x53; /* S */
      frame.writeUInt32LE(id, 5);
      frame.writeUInt32LE(1 + args.length, 9);
      frame.writeUInt32LE(env.length, 13);
      body.copy(frame, 17);
      return new Promise((resolve, reject) => {
        pending.set(id, { chunks: [], resolve, reject });
        helper.stdin!.write(frame);
      });
    },
  };
}

/** Round-robin over several spawners (e.g. several helpers working in parallel). */
export function poolSpawner(members: Spawner[]): Spawner {
  let i = 0;
  return { run: (f, a, o) => members[i++ % members.length].run(f, a, o) };
}

const here = dirname(fileURLToPath(import.meta.url));

/** "pipes" | "ignore" | "helper-c[:N]" | "helper-node[:N]" */
export function makeSpawner(kind: string): Spawner {
  const [name, countText] = kind.split(":");
  const count = Number(countText ?? "1");
  const many = (make: () => Spawner) => (count === 1 ? make() : poolSpawner(Array.from({ length: count }, make)));
  switch (name) {
    case "pipes":
      return pipesSpawner();
    case "ignore":
      return ignoreSpawner();
    case "helper-c":
      return many(() => helperSpawner(process.env.SPAWN_HELPER ?? "/tmp/spawn-helper"));
    case "helper-node":
      return many(() =>
        helperSpawner(process.execPath, ["--max-old-space-size=16", "--max-semi-space-size=1", join(here, "spawn-helper-node.js")]),
      );
    default:
      throw new Error(`unknown spawner ${kind}`);
  }
}
