// Graceful shutdown, in one place: stop accepting, drop the queued commands, wait for the running
// ones up to the grace period, kill their process groups, close.
import type { HttpTransport } from "../http/transport.js";
import type { JobStore } from "../jobs/store.js";
import type { Log } from "../log/log.js";
import type { Executions } from "../policy/executions.js";
import type { SharedQueue } from "../queue/queue.js";
import type { Runner } from "../run/runner.js";
import type { HookServer } from "./hook-server.js";

/** What shutdown stops, in its order. */
export interface Running {
  server: HookServer;
  transport: HttpTransport;
  runner: Runner;
  executions: Executions;
  /** The job records served (-jobs): unfinished jobs are dropped and the history written. */
  jobs: JobStore | undefined;
  /** -queue: jobs not pulled yet stay in the shared queue for the other instances. */
  queue: SharedQueue | undefined;
}

/** How long killed commands' process groups have between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 5000;
/** How long the answers of killed commands have to go out. */
const ANSWER_GRACE_MS = 1000;

/** Resolves true when `p` settles within `ms`, false otherwise. */
function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
  return Promise.race([p.then(() => true), late]).finally(() => clearTimeout(timer));
}

/**
 * Stops the server: no new requests (/healthz answers 503), queued commands never start,
 * requests in flight finish within `graceMs`; then the commands still running get SIGTERM,
 * 5 s later SIGKILL, and whatever connections remain are closed.
 */
export async function shutdown(r: Running, graceMs: number, log: Log): Promise<void> {
  const { server, transport, runner, executions, jobs, queue } = r;
  queue?.stopPulling();
  const debounced = executions.dropDebounced();
  if (debounced > 0) log.print(`dropped ${debounced} debounced trigger(s) still waiting out their quiet period`);
  const dropped = runner.dropQueued();
  if (dropped > 0) log.print(`dropped ${dropped} command(s) still waiting for their turn (max-concurrency)`);
  const running = runner.running();
  if (running.length > 0) {
    log.print(`waiting up to ${graceMs / 1000}s for ${running.length} running command(s) to finish: ${running.map((r) => `${r.hook} [${r.rid}]`).join(", ")}`);
  }
  server.accepting = false;
  transport.stopAccepting();
  // Requests finish when their commands do; fire-and-forget commands have no connection to wait on.
  await within(Promise.all([runner.idle(), transport.idle()]), graceMs);
  const killed = runner.running().length;
  if (killed > 0) {
    queue?.handBack();
    runner.killAll("SIGTERM");
    if (!(await within(runner.idle(), KILL_GRACE_MS))) runner.killAll("SIGKILL");
    await within(transport.idle(), ANSWER_GRACE_MS);
    log.print(`killed ${killed} command(s) still running after -shutdown-timeout`);
  }
  await transport.close();
  // Jobs not finished (a retry still waiting) are dropped, and the job history written.
  jobs?.close("the server shut down before the job finished");
  await queue?.close();
  log.print("shut down");
}
