// In-process dispatch, the default: a triggered command runs here, in its hook's turn
// (max-concurrency, max-queue: Runner), under its run policy (rate-limit, job, debounce, retry:
// Executions). It also runs the jobs this instance pulls from the shared queue (-queue): JobRunner.
import { goQuote } from "../go/json.js";
import { msText } from "../go/duration.js";
import type { Hook, HookRequest } from "../hooks/hook.js";
import { HookSet } from "../hooks/hook-set.js";
import type { RunPolicy } from "../hooks/run-fields.js";
import type { LiveOutput } from "../console/live.js";
import { type Job, type JobState, jobIdOf } from "../jobs/job.js";
import type { Log, LogFields } from "../log/log.js";
import type { AttemptRun, Executions } from "../policy/executions.js";
import type { ExecuteResult, JobRunner, LastAttempt } from "../queue/queue.js";
import { assembleCommand, commandLookupPath, lookPath, removeTempFiles, type CommandSpec } from "../run/command.js";
import { KILL_AFTER_MS, type Runner, type Turn } from "../run/runner.js";
import type { OutputSink, RunningCommand } from "../run/spawn.js";
import { begin } from "../trace/trace.js";
import { type Dispatch, type Dispatched, type LimitDefaults, limitsOf, timeoutOf, type Trigger } from "./dispatch.js";

export interface LocalOptions extends LimitDefaults {
  /** -max-output: bytes of a command's captured output kept, the last ones (0: all). */
  maxOutput: number;
  /** -jobs: every command's output is kept for its job record. */
  keepOutput: boolean;
  /** -console: every command's output as it comes, under its job id. */
  live?: LiveOutput;
}

export class LocalDispatch implements Dispatch, JobRunner {
  /** The hooks served now: the jobs pulled from the shared queue run with these. */
  private hooks = new HookSet();

  constructor(
    private readonly runner: Runner,
    private readonly executions: Executions,
    private readonly opts: LocalOptions,
    private readonly log: Log,
  ) {}

  serve(hooks: HookSet): Promise<void> {
    this.hooks = hooks;
    return Promise.resolve();
  }

  dispatch(t: Trigger): Dispatched {
    const { hook, req, policy, fields } = t;
    const rid = req.id;
    const wait = this.executions.limited(hook, policy);
    if (wait !== undefined) {
      this.log.print(
        `[${rid}] ${hook.id} got matched, but its rate-limit of ${policy.rate!.requests} per ${msText(policy.rate!.periodMs)} is reached - answering 429`,
        fields,
      );
      return { kind: "limited", retryAfterS: wait };
    }
    if (policy.debounceMs > 0) return this.debounced(t);
    const turn = this.takeTurn(t);
    if (!turn) return { kind: "busy" };
    this.log.print(`[${rid}] ${hook.id} hook triggered successfully`, fields);
    const job = this.executions.newJob(rid, hook);
    const id = job ? { jobId: job.id } : {};
    if (hook["stream-command-output"]) {
      return { kind: "streamed", ...id, run: (onOutput, onStart) => this.executeInTurn(hook, req, turn, job, policy, onOutput, onStart) };
    }
    if (hook["include-command-output-in-response"]) return { kind: "ran", ...id, result: this.executeInTurn(hook, req, turn, job, policy) };
    const running = this.executeInTurn(hook, req, turn, job, policy).catch((e: Error) => this.log.print(`[${rid}] error occurred: ${e.message}`, fields));
    return { kind: "queued", ...id, bodyInUse: running };
  }

  /** debounce: answered at once; the command runs (in its turn) when no later trigger came for the quiet period. */
  private debounced(t: Trigger): Dispatched {
    const { hook, req, policy, fields } = t;
    const rid = req.id;
    this.log.print(`[${rid}] ${hook.id} hook triggered successfully`, fields);
    const job = this.executions.newJob(rid, hook);
    const run = async (): Promise<unknown> => {
      const turn = this.takeTurn(t);
      if (!turn) return this.executions.drop(job, "the hook's queue (max-queue) was full when the quiet period ended");
      return this.executeInTurn(hook, req, turn, job, policy).catch((e: Error) => this.log.print(`[${rid}] error occurred: ${e.message}`, fields));
    };
    const done = this.executions.debounce(hook, policy, rid, job, run, fields);
    return { kind: "queued", ...(job ? { jobId: job.id } : {}), bodyInUse: done };
  }

  /** A turn to run the hook's command (max-concurrency, max-queue), or null (logged) when its queue is full. */
  private takeTurn(t: Trigger): Turn | null {
    const { hook, req, fields } = t;
    const { max, maxQueue } = limitsOf(hook, this.opts);
    const turn = this.runner.takeTurn(hook.id, max, maxQueue);
    if (!turn) {
      this.log.print(
        `[${req.id}] ${hook.id} got matched, but ${max} commands are running (max-concurrency) and ${maxQueue} are waiting (max-queue) - answering 429`,
        fields,
      );
    } else if (turn.wait) {
      this.log.print(`[${req.id}] ${hook.id} runs ${max} commands already (max-concurrency): this one waits for its turn`, fields);
    }
    return turn;
  }

  /** Runs the command once the hook's turn has come, and gives the turn back when it is done. */
  private async executeInTurn(
    hook: Hook,
    req: HookRequest,
    turn: Turn,
    job: Job | undefined,
    policy: RunPolicy,
    onOutput?: OutputSink,
    onStart?: (command: RunningCommand) => void,
  ): Promise<ExecuteResult> {
    const fields = { rid: req.id, hook: hook.id };
    try {
      if (turn.wait && !(await turn.wait)) {
        this.log.print(`[${req.id}] the server is shutting down: ${hook.id}'s command was still waiting for its turn and does not run`, fields);
        this.executions.drop(job, "the server shut down before the command's turn came");
        return { output: Buffer.alloc(0), error: "the server shut down before the command's turn came", exitCode: null };
      }
      return await this.executions.run(hook, policy, job, () => this.execute(hook, req, onOutput, onStart, job?.id), fields);
    } finally {
      turn.release();
    }
  }

  /** Runs the hook's command (the reference's handleHook); resolves with its output and error. */
  private async execute(
    hook: Hook,
    req: HookRequest,
    onOutput?: OutputSink,
    onStart?: (command: RunningCommand) => void,
    jobId = jobIdOf(req.id),
  ): Promise<AttemptRun> {
    const log = this.log;
    const rid = req.id;
    const fields: LogFields = { rid, hook: hook.id };
    const command = hook["execute-command"];
    const cwd = hook["command-working-directory"] || undefined;
    let path: string;
    try {
      path = lookPath(commandLookupPath(command, cwd));
    } catch (e) {
      log.print(`[${rid}] error in ${(e as Error).message}`, fields);
      this.runner.startFailed(hook.id);
      if (command.includes(" ")) {
        log.print(`[${rid}] use 'pass-arguments-to-command' to specify args for '${command.trim().split(/\s+/)[0]}'`, fields);
      }
      return { output: Buffer.alloc(0), error: (e as Error).message, exitCode: null };
    }

    const { argv, env, files } = assembleCommand(hook, req, cwd, log, fields);
    // traces: the command's span; the command gets it as TRACEPARENT to continue the trace.
    const span = begin(req, "command", "internal");
    if (span) env["TRACEPARENT"] = span.traceparent;

    const envNames = Object.keys(env);
    log.print(
      `[${rid}] executing ${command} (${path}) with arguments [${argv.map(goQuote).join(" ")}] and environment [${envNames.join(" ")}] using ${cwd ?? ""} as cwd`,
      fields,
    );
    const spec: CommandSpec = {
      path,
      argv,
      env,
      // The streamed output is not kept unless the log shows it.
      captureOutput:
        (hook["include-command-output-in-response"] === true && !hook["stream-command-output"]) ||
        log.enabled ||
        this.opts.keepOutput ||
        hook.notify !== undefined,
      maxOutput: this.opts.maxOutput,
      ...(cwd ? { cwd } : {}),
      ...(hook["exclude-stderr-from-response"] ? { separateStderr: true } : {}),
      timeoutMs: timeoutOf(hook, this.opts),
      onTimeout: (signal) =>
        log.print(
          signal === "SIGTERM"
            ? `[${rid}] command-timeout of ${msText(timeoutOf(hook, this.opts))} expired: sending SIGTERM to the process group of ${command}`
            : `[${rid}] the process group of ${command} was still running ${msText(KILL_AFTER_MS)} after SIGTERM: sent SIGKILL`,
          fields,
        ),
    };
    const started = performance.now();
    const live = this.opts.live?.open(jobId);
    const sink: OutputSink | undefined = live && onOutput ? (c) => (live.sink(c), onOutput(c)) : (live?.sink ?? onOutput);
    const result = await this.runner.run(spec, { hook: hook.id, rid }, sink, onStart).finally(() => live?.close());
    const durationMs = performance.now() - started;
    span?.end(result.error);
    if (log.enabled) log.print(`[${rid}] command output: ${result.output.toString("utf8")}`, fields);
    if (log.enabled && result.stderr) log.print(`[${rid}] command stderr: ${result.stderr.toString("utf8")}`, fields);
    if (result.error !== undefined) log.print(`[${rid}] error occurred: ${result.error}`, fields);
    removeTempFiles(files, rid, log, fields);
    log.print(`[${rid}] finished handling ${hook.id}`, fields);
    const more = {
      exitCode: result.exitCode,
      durationMs,
      ...(result.timedOut ? { timedOut: true } : {}),
      ...(result.signal ? { signal: result.signal } : {}),
      ...(result.stderr ? { stderr: result.stderr } : {}),
    };
    return result.error === undefined ? { output: result.output, ...more } : { output: result.output, error: result.error, ...more };
  }

  // JobRunner: the jobs this instance pulls from the shared queue (-queue).
  serves(hookId: string): boolean {
    return this.hooks.get(hookId) !== undefined;
  }

  run(hookId: string, req: HookRequest, onOutput?: OutputSink): Promise<AttemptRun> {
    const hook = this.hooks.get(hookId);
    if (!hook) return Promise.resolve({ output: Buffer.alloc(0), error: `this instance has no hook ${goQuote(hookId)}`, exitCode: null });
    return this.execute(hook, req, onOutput);
  }

  retryIn(hookId: string, jobId: string, attempt: number, result: AttemptRun): number | undefined {
    const hook = this.hooks.get(hookId);
    return hook && this.executions.retryIn(hook, this.executions.policy(hook), attempt, result, { rid: jobId, hook: hookId });
  }

  ended(hookId: string, state: JobState, last?: LastAttempt): void {
    this.executions.counters.job(hookId, state);
    const hook = last && this.hooks.get(hookId);
    if (hook) this.executions.notify(hook, state, last!.job, last!.attempt, last!.result);
  }

  superseded(hookId: string): void {
    this.executions.counters.debounce(hookId);
  }
}
