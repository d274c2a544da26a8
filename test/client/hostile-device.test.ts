// `framefi` against a web server in the test that plays a hostile device: an answer without end (fast, or a byte at
// a time), and answers whose text would steer the terminal. The real bin/framefi must end on its own with one clear
// line, in bounded time and memory, and print nothing that came from the device with its control characters.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { framefi, startFramefi } from "./fixtures/cli.js";

/** What a terminal would obey: escape sequences, bells, carriage returns, C1 codes (a line break aside). */
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;
const EVIL = "\x1b]0;PWNED-TITLE\x07\x1b[2J\r\x9b31m";

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

  test("text from the device reaches the terminal with its control characters blanked", async () => {
    const answers: Record<string, [number, object]> = {
      "GET /": [
        200,
        {
          mode: EVIL,
          display: { status: EVIL, orientation: 1 },
          sd_card: { total_size: 8e9, used_size: 1e9, free_size: 7e9, file_count: 3 },
          mqtt: { enabled: true, connected: false, state: -2 },
          led: { state: EVIL, color: EVIL, brightness: 13 },
        },
      ],
      "GET /mode/msc": [200, { mode: EVIL }],
      "GET /display/status": [200, { display_status: EVIL }],
      "POST /led/on": [200, { status: "success", message: EVIL }],
      "POST /device/restart": [500, { status: "error", message: EVIL }],
      "POST /display/on": [200, { status: "error", message: EVIL }],
    };
    respond = (req, res) => {
      const [status, body] = answers[`${req.method} ${req.url}`] ?? [404, { status: "error", message: EVIL }];
      res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
    };
    for (const args of [
      ["status"],
      ["--json", "status"],
      ["mode"],
      ["display", "status"],
      ["led", "on"],
      ["restart"],
      ["display", "on"],
      ["wifi", "reset", "-y"],
    ]) {
      const r = await framefi(["--host", host, ...args]);
      assert.match(r.stdout + r.stderr, /PWNED-TITLE/, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assert.doesNotMatch(r.stdout + r.stderr, CONTROL, `${args.join(" ")}: ${JSON.stringify(r.stdout + r.stderr)}`);
    }
  });
});
