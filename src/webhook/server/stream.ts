// stream-command-output: the answer starts with the command's first output (status 200, or the
// hook's) and carries the rest as it is produced; a failure is told in a last line. A command that
// fails before any output is answered like a captured one (500, or 504 for command-timeout).
import type { StreamRun } from "../dispatch/dispatch.js";
import type { HttpResponse } from "../http/contract.js";
import { OutputStream } from "../run/output.js";
import { type Headers, respond } from "./response.js";

export interface StreamAnswer {
  /** The answer's status, asked when the first output comes (a 1xx goes out first, then 200). */
  status: () => number;
  /** The message of a command stopped by its command-timeout. */
  timeoutMessage: () => string;
  /** The body of a command that failed before any output. */
  failedMessage: string;
}

export function streamAnswer(out: Headers, run: StreamRun, a: StreamAnswer): Promise<HttpResponse> {
  const body = new OutputStream();
  return new Promise<HttpResponse>((resolve) => {
    let started = false;
    let lastByte = 0x0a;
    const start = (): void => {
      if (started) return;
      started = true;
      if (!out.has("Content-Type")) out.set("Content-Type", "text/plain; charset=utf-8");
      const status = a.status();
      const informational = status < 200 ? { informational: { status, headers: out.list() } } : {};
      resolve({ status: Math.max(status, 200), headers: out.list(), body, ...informational });
    };
    const onOutput = (chunk: Buffer): void => {
      lastByte = chunk[chunk.length - 1]!;
      body.push(chunk);
      start();
    };
    void run(onOutput, (command) => body.attach(command)).then((result) => {
      if (!started && result.timedOut) {
        out.set("Content-Type", "text/plain; charset=utf-8");
        resolve(respond(504, out, a.timeoutMessage()));
        return;
      }
      if (!started && result.error !== undefined) {
        resolve(respond(500, out, a.failedMessage));
        return;
      }
      const newline = lastByte === 0x0a ? "" : "\n";
      if (result.timedOut) body.push(Buffer.from(`${newline}${a.timeoutMessage()}\n`));
      else if (result.error !== undefined) body.push(Buffer.from(`${newline}the command failed: ${result.error}\n`));
      start();
      body.end();
    });
  });
}
