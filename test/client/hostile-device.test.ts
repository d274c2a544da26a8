// `framefi` against a web server in the test that plays a hostile device: an answer without end (fast, or a byte at
// a time), and answers whose text would steer the terminal. The real bin/framefi must end on its own with one clear
// line, in bounded time and memory, and print nothing that came from the device with its control characters.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { framefi, startFramefi } from "./fixtures/cli.js";

/** The peak resident memory (VmHWM) of a process, in MB, read from /proc while it runs; 0 once it is gone. */
function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

describe("framefi against a hostile device", () => {
  let server: Server;
  let host: string;
  let respond: (req: IncomingMessage, res: ServerResponse) => void;

  before(async () => {
    server = createServer((req, res) => {
      res.on("error", () => undefined);
      respond(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  /** Answers with an endless body: 64 KiB chunks as fast as the client takes them. */
  const endless =
    (status: number, type: string) =>
    (_req: IncomingMessage, res: ServerResponse): void => {
      res.writeHead(status, { "Content-Type": type });
      const chunk = Buffer.alloc(64 * 1024, "x");
      const more = (): void => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on("drain", more);
      more();
    };

  for (const [name, status, type, error] of [
    ["a success", 200, "application/json", /answer of over 64 KiB, not the device API's JSON/],
    ["an error page", 500, "text/html", /answered 500: a web page/],
  ] as const) {
    test(`an endless answer (${name}) ends the command at once, in bounded memory`, async (t) => {
      respond = endless(status, type);
      const started = Date.now();
      const p = startFramefi(["--host", host, "status"], { cwd: process.cwd() });
      let peak = 0;
      const timer = setInterval(() => (peak = Math.max(peak, peakRssMb(p.child.pid!))), 5);
      const kill = setTimeout(() => p.child.kill("SIGKILL"), 20_000);
      const code = await p.exited;
      clearInterval(timer);
      clearTimeout(kill);
      const seconds = (Date.now() - started) / 1000;
      assert.notEqual(code, "SIGKILL", `framefi did not end within 20 s (peak RSS ${peak.toFixed(0)} MB)`);
      t.diagnostic(`${seconds} s, peak RSS ${peak.toFixed(0)} MB`);
      assert.ok(peak > 0 && peak < 150, `peak RSS ${peak.toFixed(0)} MB`);
      assert.equal(p.stderr().trim().split("\n").length, 1, p.stderr());
      assert.match(p.stderr(), error);
      assert.ok(seconds < 10, `took ${seconds} s`);
    });
  }

  test("--timeout bounds the whole answer, not just its start", async () => {
    respond = (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write("{");
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(" ")), 50);
    };
    const started = Date.now();
    const r = await framefi(["--host", host, "--timeout", "1", "status"], { timeoutMs: 20_000 });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /did not answer \(no answer within 1000 ms\)/);
    assert.ok(Date.now() - started < 8_000, `took ${Date.now() - started} ms`);
  });
});
