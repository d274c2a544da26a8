// `webhook`: parse the flags, open the listening socket, drop privileges, load the hooks, serve.
// Start-up order, messages and exit codes follow the reference's webhook.go; a hooks file that
// cannot be loaded stops the start unless -nopanic. SIGUSR1/SIGHUP reload the hooks; SIGTERM and
// SIGINT shut down gracefully (running commands get -shutdown-timeout to finish).
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import type { Server } from "node:net";
import type { TlsOptions } from "node:tls";
import { ActivationError, describeListener, listenAt, listenError, listenOnFd, takeSystemdSocket, unbracket } from "../http/listen.js";
import { errorText } from "../go/errno.js";
import { secretsOf } from "../hooks/config.js";
import type { NatsQueue } from "../queue/nats-queue.js";
import { Runner } from "../run/runner.js";
import { parseFlags, REFERENCE_VERSION, usage, type Options } from "./flags.js";
import { HookServer } from "../server/hook-server.js";
import type { Dispatch, LimitDefaults } from "../dispatch/dispatch.js";
import { LocalDispatch } from "../dispatch/local.js";
import { SharedDispatch } from "../dispatch/shared.js";
import { Executions } from "../policy/executions.js";
import { Log, prefix } from "../log/log.js";
import { createPidFile, removePidFile } from "./pidfile.js";
import { dropPrivileges } from "./privileges.js";
import { HookRegistry } from "../hooks/registry.js";
import { HookSet } from "../hooks/hook-set.js";
import { HttpTransport } from "../http/transport.js";
import { shutdown } from "../server/shutdown.js";
import { checkConsoleFlags, keepOptions, REQUEST_BODY_BUDGET } from "./console-flags.js";
import { LiveOutput } from "../console/live.js";
import { JobStore } from "../jobs/store.js";
import { MemoryRecords } from "../jobs/memory-records.js";
import { validateHooksFiles } from "./validate.js";
import { testRequest } from "./test-request.js";
import { Recorder } from "../explain/recorder.js";
import { listCipherSuites, minVersion, tlsOptions } from "./tls.js";
import { surviveClosedOutput } from "../../shared/closed-output.js";
import { type Described, describe, EXIT, messageOf } from "../errors.js";
import { Notifier } from "../notify/notifier.js";
import { startTracing, stopTracing } from "../trace/trace.js";

/** Shutdown: how long notifications still waiting or under way have to go out. */
const NOTIFY_GRACE_MS = 5000;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

/**
 * The program name as typed ("./bin/webhook", "webhook"), which Go prints as os.Args[0]. Node
 * resolves the script path, so it is read back from the command line the kernel kept.
 */
function argv0(): string {
  try {
    const cmdline = readFileSync("/proc/self/cmdline", "utf8").split("\0").slice(0, -1);
    const script = cmdline[cmdline.length - (process.argv.length - 1)];
    if (script) return script;
  } catch {
    // No /proc: the resolved path is close enough.
  }
  return process.argv[1] ?? "webhook";
}

function parseArgs(): Options {
  try {
    return parseFlags(process.argv.slice(2));
  } catch (e) {
    const { message, exit } = ours(e);
    process.stderr.write((message ? message + "\n" : "") + usage(argv0()));
    process.exit(exit);
  }
}

/** What the table says of one of our errors; any other error is a bug and is thrown on. */
function ours(e: unknown): Described & { exit: number } {
  const d = describe(e);
  if (d?.exit === undefined) throw e;
  return { ...d, exit: d.exit };
}

/** Go's log.Fatal before the log is set up: a timestamped line on stderr, exit 1 (or the error's exit code). */
function fatal(message: string, exit: number = EXIT.fatal): never {
  process.stderr.write(prefix().replace("[webhook] ", "") + message + "\n");
  process.exit(exit);
}

/** fatal() for one of our errors. */
function fatalError(e: unknown): never {
  const { message, exit } = ours(e);
  fatal(message, exit);
}

/**
 * -logfile: lines are appended to the file, written before the call returns. A line that cannot be written (a full
 * disk) is dropped, not thrown into whatever request logged it; the first such failure is said once on stderr.
 */
function openLogFile(path: string): (s: string) => void {
  const fd = openSync(path, "a", 0o666);
  process.once("exit", () => closeSync(fd));
  let failed = false;
  return (s) => {
    try {
      writeSync(fd, s);
    } catch (e) {
      if (!failed)
        process.stderr.write(`webhook: cannot write to -logfile ${path} (${(e as NodeJS.ErrnoException).code}); log lines are dropped until it can\n`);
      failed = true;
      return;
    }
    failed = false;
  };
}

/** -validate: every problem on stdout, then a summary; the exit code. */
function validate(opts: Options): number {
  const { problems, hooks } = validateHooksFiles(opts.hooks, { template: opts.template });
  for (const p of problems) process.stdout.write(p + "\n");
  const files = `${opts.hooks.length} file${opts.hooks.length === 1 ? "" : "s"}`;
  process.stdout.write(problems.length === 0 ? `ok: ${hooks} hook(s) in ${files}\n` : `${problems.length} problem(s) in ${files}\n`);
  return problems.length === 0 ? 0 : 1;
}

function loadHooks(registry: HookRegistry, opts: Options, log: Log): void {
  let failed: string[];
  try {
    failed = registry.loadAll();
  } catch (e) {
    const { message, exit } = ours(e);
    log.always(message);
    process.exit(exit);
  }
  const broken = messageOf("WEBHOOK_BROKEN_HOOKS_FILE", {});
  if (!opts.verbose && !opts.nopanic && registry.size === 0) {
    // Where the reference stops, its fatal line, on stdout even with a -logfile. Its advice to use -verbose
    // holds here only for files that loaded but hold no hooks; for a broken one ours says what does.
    new Log(true, (s) => void process.stdout.write(s), opts.logFormat).always(messageOf("WEBHOOK_NO_HOOKS", {}));
    if (failed.length > 0) log.always(broken);
    process.exit(EXIT.fatal);
  }
  if (failed.length > 0 && !opts.nopanic) {
    log.always(broken);
    process.exit(EXIT.fatal);
  }
}

async function main(): Promise<void> {
  surviveClosedOutput();
  const opts = parseArgs();
  if (opts.version) {
    // Exactly the reference's line (scripts compare it); which implementation this is goes to stderr.
    process.stdout.write(`webhook version ${REFERENCE_VERSION}\n`);
    process.stderr.write(`(FrameFi bin/webhook ${version()}, a drop-in for adnanh/webhook ${REFERENCE_VERSION})\n`);
    process.exit(0);
  }
  if (opts.listCipherSuites) {
    try {
      process.stdout.write(listCipherSuites(minVersion(opts.tlsMinVersion)));
    } catch (e) {
      fatalError(e);
    }
    process.exit(0);
  }
  if ((opts.setuid !== 0 || opts.setgid !== 0) && (opts.setuid === 0 || opts.setgid === 0)) {
    process.stdout.write(`${messageOf("WEBHOOK_SETUID_WITHOUT_SETGID", {})}\n`);
    process.exit(EXIT.fatal);
  }
  if (opts.debug || opts.logfile !== "") opts.verbose = true;
  if (opts.hooks.length === 0) opts.hooks.push("hooks.json");
  if (opts.validate) process.exit(validate(opts));
  if (opts.testRequest !== "") process.exit(await testRequest(opts));

  let tls: TlsOptions | undefined;
  if (opts.secure) {
    try {
      tls = tlsOptions(opts);
    } catch (e) {
      fatalError(e);
    }
  }

  // As the reference: open the socket first (it may need root), then drop privileges, then open
  // the log file as the new user; problems met so far are logged once the log exists.
  const problems: string[] = [];
  const log = new Log(opts.verbose, (s) => void process.stderr.write(s), opts.logFormat);
  const runner = new Runner();
  // With -queue the job records live in the NATS server (kv-records.ts), with -jobs or not.
  const records =
    opts.jobs && opts.queue === ""
      ? new MemoryRecords({ keep: opts.jobsKeep, maxAgeMs: opts.jobsMaxAgeMs, ...(opts.jobsFile ? { file: opts.jobsFile } : {}) }, (m) => log.always(m))
      : undefined;
  const localJobs = records ? new JobStore(records, opts.jobsOutput, Date.now, REQUEST_BODY_BUDGET) : undefined;
  // notify: outcomes sent by their own queue; traces: on only with OTEL_EXPORTER_OTLP_ENDPOINT (the SDK loaded then).
  const notifier = new Notifier(log);
  await startTracing(process.env, (line) => log.always(line));
  const executions = new Executions(localJobs, log, notifier);
  const limits: LimitDefaults = {
    maxConcurrency: opts.maxConcurrency,
    maxQueue: opts.maxQueue,
    maxBackground: opts.maxBackground,
    commandTimeoutMs: opts.commandTimeoutMs,
  };
  // Runs the commands of this instance: the requests it takes, or with -queue the jobs it pulls.
  const live = opts.console ? new LiveOutput(opts.jobsOutput) : undefined;
  const local = new LocalDispatch(runner, executions, { ...limits, maxOutput: opts.maxOutput, keepOutput: opts.jobs, ...(live ? { live } : {}) }, log);
  let dispatch: Dispatch = local;
  let jobs = localJobs;
  const flagSecrets = [opts.jobsToken, opts.jobsAuth, opts.jobsAuth.slice(opts.jobsAuth.indexOf(":") + 1)].filter((s) => s !== "");
  let queue: NatsQueue | undefined;
  if (opts.queueKeyFile !== "" && opts.queue === "") fatal(messageOf("WEBHOOK_QUEUE_KEY_WITHOUT_QUEUE", {}));
  try {
    checkConsoleFlags(opts);
  } catch (e) {
    fatalError(e);
  }
  if (opts.queue !== "") {
    // Loaded only with -queue: a server without it pays nothing for the NATS client.
    const { NatsQueue } = await import("../queue/nats-queue.js");
    const { QueueSigner, readQueueKey } = await import("../queue/signing.js");
    const { NatsLiveRelay } = await import("../queue/live-relay.js");
    let key: Buffer | undefined;
    try {
      key = opts.queueKeyFile === "" ? undefined : readQueueKey(opts.queueKeyFile);
    } catch (e) {
      fatalError(e);
    }
    if (key) flagSecrets.push(key.toString("latin1"));
    try {
      const retention = { keep: opts.jobsKeep, maxAgeMs: opts.jobsMaxAgeMs, outputBytes: opts.jobsOutput };
      queue = await NatsQueue.connect({
        url: opts.queue,
        ackWaitMs: opts.queueAckWaitMs,
        log,
        runner: local,
        jobs: retention,
        signer: new QueueSigner(key),
      });
    } catch (e) {
      fatalError(e);
    }
    live?.relayThrough(new NatsLiveRelay(queue!.nc, new QueueSigner(key)));
    dispatch = new SharedDispatch(queue!, local, executions, { ...limits, maxOutput: opts.maxOutput }, log);
    // The job records every instance shares; -jobs serves them at /jobs.
    if (opts.jobs) jobs = queue!.jobs;
  }
  const recorder = opts.recordRequests === "" ? undefined : new Recorder(opts.recordRequests, log);
  const app = new HookServer(
    new HookSet(),
    {
      urlprefix: opts.urlprefix,
      httpMethods: opts.httpMethods.replace(/ /g, "").toUpperCase(),
      headers: opts.headers,
      maxMultipartMem: opts.maxMultipartMem,
      debug: opts.debug,
      xRequestId: opts.xRequestId,
      xRequestIdLimit: opts.xRequestIdLimit,
      ...limits,
      jobIds: opts.jobs || opts.queue !== "",
      metrics: opts.metrics,
      ...(recorder ? { recorder } : {}),
      ...(jobs ? { jobs, jobsAccess: { ...(opts.jobsToken ? { token: opts.jobsToken } : {}), ...(opts.jobsAuth ? { basic: opts.jobsAuth } : {}) } } : {}),
      ...(opts.jobsReplay ? { replay: keepOptions(opts) } : {}),
      ...(live ? { console: live } : {}),
    },
    log,
    { dispatch, executions, metrics: runner.metrics },
  );
  const transport = new HttpTransport(app, {
    maxBody: opts.maxBody,
    bodyTimeoutMs: opts.bodyTimeoutMs || Infinity,
    maxConnections: opts.maxConnections,
    maxConnectionsPerAddress: opts.maxConnectionsPerIp,
    ...(opts.maxRequestMemory > 0 ? { maxRequestMemory: opts.maxRequestMemory } : {}),
  });
  let server: Server | undefined;
  try {
    server = transport.createServer(tls);
  } catch (e) {
    fatal(messageOf("WEBHOOK_TLS_CERTIFICATE", { reason: (e as Error).message }));
  }
  // As the reference: a socket handed over by systemd wins over -ip/-port and -socket.
  const ip = unbracket(opts.ip);
  let address = opts.socket !== "" ? `{unix:${opts.socket}}` : `${ip.includes(":") ? `[${ip}]` : ip}:${opts.port}`;
  try {
    const fd = takeSystemdSocket();
    if (fd !== undefined) {
      await listenOnFd(server, fd);
      address = describeListener(server, fd);
    } else {
      if (opts.socket !== "" && (opts.setuid !== 0 || opts.setgid !== 0)) {
        throw new ActivationError("WEBHOOK_SOCKET_SETUID", {});
      }
      try {
        await listenAt(server, opts.socket !== "" ? { socket: opts.socket } : { ip, port: opts.port });
        // A start that fails from here on must not leave the socket file behind (close() removes it
        // on a normal shutdown).
        if (opts.socket !== "") process.once("exit", () => rmSync(opts.socket, { force: true }));
      } catch (e) {
        problems.push(listenError(opts.socket !== "" ? { socket: opts.socket } : { ip: opts.ip, port: opts.port }, e as NodeJS.ErrnoException));
      }
    }
  } catch (e) {
    problems.push(ours(e).message);
  }
  if (opts.setuid !== 0 && problems.length === 0) {
    try {
      dropPrivileges(opts.setuid, opts.setgid);
    } catch (e) {
      problems.push(messageOf("WEBHOOK_PRIVILEGES", { reason: errorText(e as NodeJS.ErrnoException) }));
    }
  }
  if (opts.logfile !== "") {
    try {
      log.redirect(openLogFile(opts.logfile));
    } catch (e) {
      problems.push(messageOf("WEBHOOK_LOG_FILE", { quoted: JSON.stringify(opts.logfile), path: opts.logfile, reason: errorText(e as NodeJS.ErrnoException) }));
    }
  }
  if (problems.length > 0) {
    for (const p of problems) log.always(p);
    process.exit(EXIT.fatal);
  }
  try {
    recorder?.open();
  } catch (e) {
    const { message, exit } = ours(e);
    log.always(message);
    process.exit(exit);
  }

  if (opts.pidfile !== "") {
    try {
      createPidFile(opts.pidfile);
    } catch (e) {
      const { message, exit } = ours(e);
      log.always(message);
      process.exit(exit);
    }
    process.once("exit", () => removePidFile(opts.pidfile));
  }

  log.print(`version ${REFERENCE_VERSION} starting (FrameFi bin/webhook ${version()})`);
  log.setSecrets(flagSecrets);
  records?.load();
  if (queue && opts.jobsFile !== "")
    log.always("warning: -jobs-file is not used with -queue: the job records live in the NATS server (key-value bucket webhook_jobs)");
  if (jobs && opts.jobsToken === "" && opts.jobsAuth === "") {
    log.always("warning: /jobs answers anyone who can reach this server, and job output may hold secrets; set -jobs-token or -jobs-auth");
  }
  const registry = new HookRegistry(opts.hooks, { template: opts.template }, log, (hooks) => {
    log.setSecrets([...secretsOf([...hooks.values()]), ...flagSecrets]);
    app.setHooks(hooks);
  });
  const stop = async (): Promise<void> => {
    await shutdown({ server: app, transport, runner, executions, jobs, queue }, opts.shutdownTimeoutMs, log);
    await notifier.settle(NOTIFY_GRACE_MS);
    await stopTracing();
  };
  setupSignals(registry, stop, log);
  loadHooks(registry, opts, log);
  if (opts.hotreload) registry.watch();
  await app.ready;
  if (queue)
    log.print(
      `sharing the hooks' queues through NATS JetStream at ${queue.address}${opts.queueKeyFile !== "" ? ", messages signed with the key in -queue-key-file" : ""}`,
    );
  transport.open();

  const scheme = opts.secure ? "https" : "http";
  const base = opts.urlprefix === "" ? "" : `/${opts.urlprefix}`;
  log.print(`serving hooks on ${scheme}://${address}${base}/{id}`);
}

function setupSignals(registry: HookRegistry, stop: () => Promise<void>, log: Log): void {
  log.print("setting up os signal watcher");
  for (const [signal, name] of [
    ["SIGUSR1", "USR1"],
    ["SIGHUP", "HUP"],
  ] as const) {
    process.on(signal, () => {
      log.print(`caught ${name} signal`);
      registry.reloadAll();
    });
  }
  let stopping = false;
  for (const [signal, name] of [
    ["SIGINT", "interrupt"],
    ["SIGTERM", "terminated"],
  ] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log.print(`caught ${name} signal; exiting`);
      registry.close();
      void stop().then(() => process.exit(0));
    });
  }
  log.print("os signal watcher ready");
}

void main();
