// Prototype: the spawn helper protocol of spawn-helper.c, written in Node, to see whether a
// small-heap Node process forks faster than the big server process.
import { spawn } from "node:child_process";

let buf: Buffer = Buffer.alloc(0);

function send(type: number, id: number, payload: Buffer): void {
  const head = Buffer.allocUnsafe(9);
  head.writeUInt32LE(5 + payload.length, 0);
  head[4] = type;
  head.writeUInt32LE(id, 5);
  process.stdout.write(payload.length ? Buffer.concat([head, payload]) : head);
}

function int32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32LE(n, 0);
  return b;
}

function start(id: number, p: Buffer): void {
  const argc = p.readUInt32LE(0);
  const strings = p.subarray(8).toString("utf8").split("\0");
  const cwd = strings[0];
  const path = strings[1];
  const argv = strings.slice(2, 2 + argc);
  const env: Record<string, string> = {};
  for (const kv of strings.slice(2 + argc, -1)) {
    const eq = kv.indexOf("=");
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const child = spawn(path, argv.slice(1), { argv0: argv[0], cwd: cwd || undefined, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const out = (c: Buffer) => send(0x4f, id, c);
  child.stdout.on("data", out);
  child.stderr.on("data", out);
  child.once("error", (e: NodeJS.ErrnoException) => send(0x46, id, int32(e.errno ?? -1)));
  child.once("close", (code, signal) => send(0x58, id, int32(code ?? -(signal === "SIGKILL" ? 9 : 15))));
}

process.stdin.on("data", (chunk: Buffer) => {
  buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
  let off = 0;
  while (buf.length - off >= 9) {
    const len = buf.readUInt32LE(off);
    if (buf.length - off < 4 + len) break;
    if (buf[off + 4] === 0x53) start(buf.readUInt32LE(off + 5), buf.subarray(off + 9, off + 4 + len));
    off += 4 + len;
  }
  buf = Buffer.from(buf.subarray(off));
});

// The server went away: nothing left to report to.
process.stdin.on("end", () => process.exit(0));
process.stdout.on("error", () => process.exit(0));
