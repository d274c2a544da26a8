// Command-line flags in Go's flag package syntax, with the reference's names, defaults and
// usage text: -flag value, -flag=value, --flag, booleans as -flag or -flag=false. Parsing stops
// at the first argument that is not a flag, or after "--".
import { msText, parseGoDuration } from "../go/duration.js";
import { readOptionsFile, type FileArgument } from "./options-file.js";
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from "../http/transport.js";

/** The adnanh/webhook release whose flags, files and answers this server reproduces. */
export const REFERENCE_VERSION = "2.8.2";

export interface Options {
  hooks: string[];
  ip: string;
  port: number;
  urlprefix: string;
  httpMethods: string;
  headers: { name: string; value: string }[];
  verbose: boolean;
  debug: boolean;
  nopanic: boolean;
  maxMultipartMem: number;
  maxBody: number;
  version: boolean;
  hotreload: boolean;
  template: boolean;
  secure: boolean;
  cert: string;
  key: string;
  tlsMinVersion: string;
  cipherSuites: string;
  listCipherSuites: boolean;
  socket: string;
  logfile: string;
  logFormat: "text" | "json";
  /** -metrics: GET /metrics answers the Prometheus text. */
  metrics: boolean;
  pidfile: string;
  setuid: number;
  setgid: number;
  xRequestId: boolean;
  xRequestIdLimit: number;
  /** Grace period for running commands on SIGTERM/SIGINT, in milliseconds. */
  shutdownTimeoutMs: number;
  /** Default max-concurrency of every hook; 0 is unlimited. */
  maxConcurrency: number;
  /** max-concurrency of hooks that answer at once, when neither the hook nor -max-concurrency sets one; 0 is unlimited. */
  maxBackground: number;
  /** Default max-queue of every hook. */
  maxQueue: number;
  /** Default command-timeout of every hook, in milliseconds; 0 is none. */
  commandTimeoutMs: number;
  /** A request body that sends nothing for this long (ms) is dropped with 408. */
  bodyTimeoutMs: number;
  /** Bytes of unfinished requests (heads and bodies) held at once; 0 is 64 MiB, or -max-body if larger. */
  maxRequestMemory: number;
  /** Open connections at once; 0 is no limit. */
  maxConnections: number;
  /** Open connections at once from one client address (IPv6: one /64); 0 is no limit. */
  maxConnectionsPerIp: number;
  /** Bytes of a command's output kept (the tail); 0 is no limit. */
  maxOutput: number;
  /** -validate: check the hooks files, print each problem, exit 0 or 1. */
  validate: boolean;
  /** -jobs: every triggered execution is a job, served at /jobs. */
  jobs: boolean;
  jobsKeep: number;
  /** Finished jobs older than this (ms) are forgotten; 0 never. */
  jobsMaxAgeMs: number;
  /** Bytes of a job's output kept. */
  jobsOutput: number;
  /** Where the job history is kept across restarts; "" in memory only. */
  jobsFile: string;
  /** A bearer token, or "user:password", that /jobs asks for; "" none. */
  jobsToken: string;
  jobsAuth: string;
  /** -queue: NATS server URL(s) of the queue shared by several instances; "" is the in-process queue. */
  queue: string;
  /** -queue-ack-wait (ms): a job whose instance gives no sign of life for this long runs on another. */
  queueAckWaitMs: number;
  /** -queue-key-file: a file holding the key that signs the shared queue's messages; "" none. */
  queueKeyFile: string;
}

type Kind = "bool" | "string" | "int" | "duration" | "value";

interface FlagDef {
  name: string;
  kind: Kind;
  usage: string;
  /** The option the flag sets: its value in defaults() is the default usage shows. */
  option?: keyof Options;
  set(o: Options, v: string): void;
}

export class FlagError extends Error {
  override readonly name = "FlagError";
  readonly code = "EFLAG";
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

function parseGoInt(s: string): number {
  const m = /^([+-]?)(0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+|0[0-7_]*|[1-9][0-9_]*)$/i.exec(s);
  if (!m) throw new Error("parse error");
  const body = m[2]!.replace(/_/g, "");
  let n: number;
  if (/^0x/i.test(body)) n = parseInt(body.slice(2), 16);
  else if (/^0o/i.test(body)) n = parseInt(body.slice(2), 8);
  else if (/^0b/i.test(body)) n = parseInt(body.slice(2), 2);
  else if (body.length > 1 && body.startsWith("0")) n = parseInt(body.slice(1), 8);
  else n = parseInt(body, 10);
  if (!Number.isSafeInteger(n)) throw new Error("value out of range");
  return m[1] === "-" ? -n : n;
}

function parseGoBool(s: string): boolean {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(s)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(s)) return false;
  throw new Error("parse error");
}

/** -max-queue's default: requests that may wait for a turn at a hook limited by max-concurrency. */
export const DEFAULT_MAX_QUEUE = 100;

function parseCount(s: string): number {
  const n = parseGoInt(s);
  if (n < 0) throw new Error("must be 0 or more");
  return n;
}

function parseLogFormat(v: string): "text" | "json" {
  if (v !== "text" && v !== "json") throw new Error('must be "text" or "json"');
  return v;
}

/** -max-background's default: commands of one fire-and-forget hook running at once. */
const DEFAULT_MAX_BACKGROUND = 8;

/** -jobs-keep's default: jobs kept. */
export const DEFAULT_JOBS_KEEP = 1000;

/** -jobs-output's default: bytes of a job's output kept. */
export const DEFAULT_JOBS_OUTPUT = 64 * 1024;

/** -max-output's default: the tail of a command's output kept for the answer and the log. */
const DEFAULT_MAX_OUTPUT = 1024 * 1024;

const FLAGS: FlagDef[] = [
  {
    name: "cert",
    kind: "string",
    usage: "path to the HTTPS certificate pem file",
    option: "cert",
    set: (o, v) => (o.cert = v),
  },
  {
    name: "cipher-suites",
    kind: "string",
    usage: "comma-separated list of supported TLS cipher suites",
    option: "cipherSuites",
    set: (o, v) => (o.cipherSuites = v),
  },
  {
    name: "command-timeout",
    kind: "duration",
    usage: "default for the hook field command-timeout: a command still running after this long gets SIGTERM on its process group, SIGKILL 5s later; 0 is none",
    option: "commandTimeoutMs",
    set: (o, v) => (o.commandTimeoutMs = parseGoDuration(v)),
  },
  { name: "debug", kind: "bool", usage: "show debug output", option: "debug", set: (o, v) => (o.debug = parseGoBool(v)) },
  {
    name: "header",
    kind: "value",
    usage: "response header to return, specified in format name=value, use multiple times to set multiple headers",
    set: (o, v) => {
      const eq = v.indexOf("=");
      if (eq === -1) throw new Error("header flag must be in name=value format");
      o.headers.push({ name: v.slice(0, eq), value: v.slice(eq + 1) });
    },
  },
  {
    name: "hooks",
    kind: "value",
    usage: "path to the json file containing defined hooks the webhook should serve, use multiple times to load from different files",
    set: (o, v) => o.hooks.push(v),
  },
  {
    name: "hotreload",
    kind: "bool",
    usage: "watch hooks file for changes and reload them automatically",
    option: "hotreload",
    set: (o, v) => (o.hotreload = parseGoBool(v)),
  },
  {
    name: "http-methods",
    kind: "string",
    usage: 'set default allowed HTTP methods (ie. "POST"); separate methods with comma',
    option: "httpMethods",
    set: (o, v) => (o.httpMethods = v),
  },
  {
    name: "ip",
    kind: "string",
    usage: "ip the webhook should serve hooks on",
    option: "ip",
    set: (o, v) => (o.ip = v),
  },
  {
    name: "jobs",
    kind: "bool",
    usage:
      "make every triggered execution a job: its id in the X-Job-Id answer header, its state and output at GET /jobs/<id>, recent ones at GET /jobs?hook=ID (outside the hook URL prefix)",
    set: (o, v) => (o.jobs = parseGoBool(v)),
  },
  {
    name: "jobs-auth",
    kind: "string",
    usage: 'with -jobs: "user:password" that /jobs asks for with basic auth (job output may hold secrets)',
    set: (o, v) => (o.jobsAuth = v),
  },
  {
    name: "jobs-file",
    kind: "string",
    usage: "with -jobs: keep the job history in this file, so a restart keeps it (a file that cannot be read is moved aside)",
    set: (o, v) => (o.jobsFile = v),
  },
  {
    name: "jobs-keep",
    kind: "int",
    usage: "with -jobs: how many jobs are kept; the oldest finished ones go first",
    option: "jobsKeep",
    set: (o, v) => (o.jobsKeep = parseCount(v)),
  },
  {
    name: "jobs-max-age",
    kind: "duration",
    usage: "with -jobs: finished jobs older than this are forgotten; 0 keeps them until -jobs-keep pushes them out",
    option: "jobsMaxAgeMs",
    set: (o, v) => (o.jobsMaxAgeMs = parseGoDuration(v)),
  },
  {
    name: "jobs-output",
    kind: "int",
    usage: "with -jobs: bytes of a job's output kept, the last ones",
    option: "jobsOutput",
    set: (o, v) => (o.jobsOutput = parseCount(v)),
  },
  {
    name: "jobs-token",
    kind: "string",
    usage: "with -jobs: a token that /jobs asks for as Authorization: Bearer <token> (job output may hold secrets)",
    set: (o, v) => (o.jobsToken = v),
  },
  {
    name: "key",
    kind: "string",
    usage: "path to the HTTPS certificate private key pem file",
    option: "key",
    set: (o, v) => (o.key = v),
  },
  {
    name: "list-cipher-suites",
    kind: "bool",
    usage: "list available TLS cipher suites",
    option: "listCipherSuites",
    set: (o, v) => (o.listCipherSuites = parseGoBool(v)),
  },
  {
    name: "log-format",
    kind: "string",
    usage: 'log line format: "text" (the reference\'s) or "json" (one object per line)',
    option: "logFormat",
    set: (o, v) => (o.logFormat = parseLogFormat(v)),
  },
  {
    name: "logfile",
    kind: "string",
    usage: "send log output to a file; implicitly enables verbose logging",
    option: "logfile",
    set: (o, v) => (o.logfile = v),
  },
  {
    name: "max-background",
    kind: "int",
    usage:
      "max-concurrency of hooks that answer before their command runs (no output capture or streaming) when neither the hook nor -max-concurrency sets one; more wait in the hook's queue (-max-queue); 0 is no limit",
    option: "maxBackground",
    set: (o, v) => (o.maxBackground = parseCount(v)),
  },
  {
    name: "max-body",
    kind: "int",
    usage: "maximum size in bytes of a request body; larger requests get 413 Request Entity Too Large",
    option: "maxBody",
    set: (o, v) => (o.maxBody = parseGoInt(v)),
  },
  {
    name: "max-body-idle",
    kind: "duration",
    usage: "a request body that sends nothing more for this long is dropped: 408 and the connection closed",
    option: "bodyTimeoutMs",
    set: (o, v) => (o.bodyTimeoutMs = parseGoDuration(v)),
  },
  {
    name: "max-concurrency",
    kind: "int",
    usage: "default for the hook field max-concurrency: at most this many commands of a hook run at once, the rest wait in its queue; 0 is no limit",
    option: "maxConcurrency",
    set: (o, v) => (o.maxConcurrency = parseCount(v)),
  },

  {
    name: "max-connections",
    kind: "int",
    usage: "open connections at once over all clients; one more is answered 503 with Retry-After and closed; 0 is no limit",
    option: "maxConnections",
    set: (o, v) => (o.maxConnections = parseCount(v)),
  },
  {
    name: "max-connections-per-ip",
    kind: "int",
    usage: "open connections at once from one client address (IPv6: one /64); one more is answered 503 with Retry-After and closed; 0 is no limit",
    option: "maxConnectionsPerIp",
    set: (o, v) => (o.maxConnectionsPerIp = parseCount(v)),
  },
  {
    name: "max-multipart-mem",
    kind: "int",
    usage: "maximum memory in bytes for parsing multipart form data before disk caching",
    option: "maxMultipartMem",
    set: (o, v) => (o.maxMultipartMem = parseGoInt(v)),
  },
  {
    name: "max-output",
    kind: "int",
    usage: "bytes of a command's output kept for the answer and the log: beyond it only the last bytes are kept, after a line saying so; 0 is no limit",
    option: "maxOutput",
    set: (o, v) => (o.maxOutput = parseCount(v)),
  },
  {
    name: "max-queue",
    kind: "int",
    usage: "default for the hook field max-queue: how many requests may wait for a hook limited by max-concurrency; more are answered 429",
    option: "maxQueue",
    set: (o, v) => (o.maxQueue = parseCount(v)),
  },
  {
    name: "max-request-memory",
    kind: "int",
    usage: "bytes of unfinished requests (heads and bodies) held at once over all connections; a request beyond gets 503; 0 is 64 MiB, or -max-body if larger",
    option: "maxRequestMemory",
    set: (o, v) => (o.maxRequestMemory = parseCount(v)),
  },
  {
    name: "metrics",
    kind: "bool",
    usage: "serve Prometheus metrics at GET /metrics (outside the hook URL prefix)",
    option: "metrics",
    set: (o, v) => (o.metrics = parseGoBool(v)),
  },
  {
    name: "nopanic",
    kind: "bool",
    usage: "start even when a hooks file cannot be loaded (the file is skipped)",
    option: "nopanic",
    set: (o, v) => (o.nopanic = parseGoBool(v)),
  },
  {
    name: "options-file",
    kind: "value",
    usage: 'read flags from a file, one per line ("-port 9000", "verbose"; # starts a comment); flags after it on the command line win',
    set: () => undefined,
  },
  {
    name: "pidfile",
    kind: "string",
    usage: "create PID file at the given path",
    option: "pidfile",
    set: (o, v) => (o.pidfile = v),
  },
  {
    name: "port",
    kind: "int",
    usage: "port the webhook should serve hooks on",
    option: "port",
    set: (o, v) => (o.port = parseGoInt(v)),
  },
  {
    name: "queue",
    kind: "string",
    usage:
      "share the hooks' queues with other instances through NATS JetStream at this URL (nats://[user:password@]HOST:PORT, tls://… for TLS; several comma-separated); max-concurrency and max-queue then hold over all instances together",
    option: "queue",
    set: (o, v) => (o.queue = v),
  },
  {
    name: "queue-ack-wait",
    kind: "duration",
    usage: "with -queue: a job whose instance stopped answering (died) for this long runs again on another instance",
    option: "queueAckWaitMs",
    set: (o, v) => (o.queueAckWaitMs = parseGoDuration(v)),
  },
  {
    name: "queue-key-file",
    kind: "string",
    usage:
      "with -queue: a file holding a key (at least 16 bytes) every instance shares; each signs the messages it publishes with it and refuses messages not signed with it",
    option: "queueKeyFile",
    set: (o, v) => (o.queueKeyFile = v),
  },
  { name: "secure", kind: "bool", usage: "use HTTPS instead of HTTP", option: "secure", set: (o, v) => (o.secure = parseGoBool(v)) },
  {
    name: "setgid",
    kind: "int",
    usage: "set group ID after opening listening port; must be used with setuid, not permitted with -socket",
    option: "setgid",
    set: (o, v) => (o.setgid = parseGoInt(v)),
  },
  {
    name: "setuid",
    kind: "int",
    usage: "set user ID after opening listening port; must be used with setgid, not permitted with -socket",
    option: "setuid",
    set: (o, v) => (o.setuid = parseGoInt(v)),
  },
  {
    name: "shutdown-timeout",
    kind: "duration",
    usage: "on SIGTERM or SIGINT, how long running commands may take to finish before their process groups are killed",
    option: "shutdownTimeoutMs",
    set: (o, v) => (o.shutdownTimeoutMs = parseGoDuration(v)),
  },
  {
    name: "socket",
    kind: "string",
    usage: "path to a Unix socket (e.g. /tmp/webhook.sock) to use instead of listening on an ip and port; if specified, the ip and port options are ignored",
    option: "socket",
    set: (o, v) => (o.socket = v),
  },
  { name: "template", kind: "bool", usage: "parse hooks file as a Go template", option: "template", set: (o, v) => (o.template = parseGoBool(v)) },
  {
    name: "tls-min-version",
    kind: "string",
    usage: "minimum TLS version (1.0, 1.1, 1.2, 1.3)",
    option: "tlsMinVersion",
    set: (o, v) => (o.tlsMinVersion = v),
  },
  {
    name: "urlprefix",
    kind: "string",
    usage: "url prefix to use for served hooks (protocol://yourserver:port/PREFIX/:hook-id)",
    option: "urlprefix",
    set: (o, v) => (o.urlprefix = v),
  },
  {
    name: "validate",
    kind: "bool",
    usage:
      "check the hooks files (rendered with -template if given), print each problem with file, line and hook id, and exit: 0 when there are none, 1 otherwise",
    set: (o, v) => (o.validate = parseGoBool(v)),
  },
  { name: "verbose", kind: "bool", usage: "show verbose output", option: "verbose", set: (o, v) => (o.verbose = parseGoBool(v)) },
  { name: "version", kind: "bool", usage: "display webhook version and quit", option: "version", set: (o, v) => (o.version = parseGoBool(v)) },
  {
    name: "x-request-id",
    kind: "bool",
    usage: "use X-Request-Id header, if present, as request ID",
    option: "xRequestId",
    set: (o, v) => (o.xRequestId = parseGoBool(v)),
  },
  {
    name: "x-request-id-limit",
    kind: "int",
    usage: "truncate X-Request-Id header to limit; default no limit",
    option: "xRequestIdLimit",
    set: (o, v) => (o.xRequestIdLimit = parseGoInt(v)),
  },
];

/** Go's flag.PrintDefaults output under "Usage of <argv0>:", argv0 being how the program was called. */
export function usage(argv0: string): string {
  const initial = defaults();
  let out = `Usage of ${argv0}:\n`;
  for (const f of FLAGS) {
    const typeName = f.kind === "bool" ? "" : f.kind === "value" ? " value" : ` ${f.kind}`;
    out += `  -${f.name}${typeName}\n    \t${f.usage}`;
    const shown = f.option === undefined ? undefined : shownDefault(f.kind, initial[f.option]);
    if (shown !== undefined) out += ` (default ${shown})`;
    out += "\n";
  }
  return out;
}

/** A default as Go's flag package prints it; undefined for the zero value (not printed). */
function shownDefault(kind: Kind, value: Options[keyof Options]): string | undefined {
  if (value === "" || value === 0 || value === false || typeof value === "object") return undefined;
  if (kind === "duration") return msText(value as number);
  return kind === "string" ? JSON.stringify(value) : String(value);
}

/** Every option's default: the one place they are written. */
export function defaults(): Options {
  return {
    hooks: [],
    ip: "0.0.0.0",
    port: 9000,
    urlprefix: "hooks",
    httpMethods: "",
    headers: [],
    verbose: false,
    debug: false,
    nopanic: false,
    maxMultipartMem: 1 << 20,
    maxBody: 10 * 1024 * 1024,
    version: false,
    hotreload: false,
    template: false,
    secure: false,
    cert: "cert.pem",
    key: "key.pem",
    tlsMinVersion: "1.2",
    cipherSuites: "",
    listCipherSuites: false,
    socket: "",
    logfile: "",
    logFormat: "text",
    metrics: false,
    pidfile: "",
    setuid: 0,
    setgid: 0,
    xRequestId: false,
    xRequestIdLimit: 0,
    shutdownTimeoutMs: 30_000,
    maxConcurrency: 0,
    maxQueue: DEFAULT_MAX_QUEUE,
    maxBackground: DEFAULT_MAX_BACKGROUND,
    commandTimeoutMs: 0,
    bodyTimeoutMs: 15_000,
    maxRequestMemory: 0,
    maxConnections: DEFAULT_MAX_CONNECTIONS,
    maxConnectionsPerIp: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    maxOutput: DEFAULT_MAX_OUTPUT,
    validate: false,
    jobs: false,
    jobsKeep: DEFAULT_JOBS_KEEP,
    jobsMaxAgeMs: 24 * 3_600_000,
    jobsOutput: DEFAULT_JOBS_OUTPUT,
    jobsFile: "",
    jobsToken: "",
    jobsAuth: "",
    queue: "",
    queueAckWaitMs: 30_000,
    queueKeyFile: "",
  };
}

/**
 * Parses argv as Go's flag.Parse. Throws FlagError with the message Go prints (the caller adds
 * the usage text) and exit code 2, or exit code 0 for -help / -h.
 */
export function parseFlags(argv: string[]): Options {
  const o = defaults();
  let args = argv;
  /** Where each argument read from an options file stands ("file:line"), to name it in an error. */
  let from: (string | undefined)[] = argv.map(() => undefined);
  const insert = (at: number, read: FileArgument[]): void => {
    args = [...args.slice(0, at), ...read.map((r) => r.arg), ...args.slice(at)];
    from = [...from.slice(0, at), ...read.map((r) => r.where), ...from.slice(at)];
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.length < 2 || a[0] !== "-") break;
    const where = from[i];
    try {
      i = parseFlag(o, args, i, where, insert);
    } catch (e) {
      throw e instanceof FlagError && e.exitCode !== 0 && where !== undefined ? new FlagError(`${where}: ${e.message}`, e.exitCode) : e;
    }
    if (i < 0) break;
  }
  return o;
}

/**
 * Parses the flag at args[i] into `o`; an options file's flags go in after it through `insert`. Returns the index
 * of the last argument it took, or -1 where Go stops parsing ("--"). `where` is set for a flag from a file.
 */
function parseFlag(o: Options, args: string[], i: number, where: string | undefined, insert: (at: number, read: FileArgument[]) => void): number {
  const a = args[i]!;
  let name = a.slice(1);
  if (name.startsWith("-")) {
    if (name.length === 1) return -1; // "--" ends the flags
    name = name.slice(1);
  }
  if (name === "" || name[0] === "-" || name[0] === "=") throw new FlagError(`bad flag syntax: ${a}`, 2);
  let value: string | undefined;
  const eq = name.indexOf("=");
  if (eq !== -1) {
    value = name.slice(eq + 1);
    name = name.slice(0, eq);
  }
  const def = FLAGS.find((f) => f.name === name);
  if (!def) {
    if (name === "help" || name === "h") throw new FlagError("", 0);
    throw new FlagError(`flag provided but not defined: -${name}`, 2);
  }
  if (def.kind === "bool") {
    try {
      def.set(o, value ?? "true");
    } catch {
      throw new FlagError(`invalid boolean value ${JSON.stringify(value)} for -${name}: parse error`, 2);
    }
    return i;
  }
  if (value === undefined) {
    // A file's line holds its flag's value: the next line is another flag.
    if (i + 1 >= args.length || where !== undefined) throw new FlagError(`flag needs an argument: -${name}`, 2);
    value = args[++i]!;
  }
  if (def.name === "options-file") {
    try {
      insert(i + 1, readOptionsFile(value));
    } catch (e) {
      throw new FlagError(`invalid value ${JSON.stringify(value)} for flag -options-file: ${(e as Error).message}`, 2);
    }
    return i;
  }
  try {
    def.set(o, value);
  } catch (e) {
    throw new FlagError(`invalid value ${JSON.stringify(value)} for flag -${name}: ${(e as Error).message}`, 2);
  }
  return i;
}
