// Command-line flags in Go's flag package syntax, with the reference's names, defaults and
// usage text: -flag value, -flag=value, --flag, booleans as -flag or -flag=false. Parsing stops
// at the first argument that is not a flag, or after "--". One table (FLAGS) declares each flag
// once: its name, type, usage, the option it sets, that option's default, and how its text is read.
import { msText, parseGoDuration } from "../go/duration.js";
import { readOptionsFile, type FileArgument } from "./options-file.js";
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from "../http/transport.js";
import { type ErrorArgs, WebhookError } from "../errors.js";

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
  /** -jobs-replay: a job keeps its request, and POST /jobs/<id>/replay runs it again. */
  jobsReplay: boolean;
  /** Bytes of a request body a job keeps for replay; a larger one is not kept (its job cannot be replayed). */
  jobsRequestMax: number;
  /** Comma-separated header names a kept request leaves out. */
  jobsRedactHeader: string;
  /** -console: the run console at /console/ (needs -jobs). */
  console: boolean;
  /** -console-insecure: serve the console without -jobs-token/-jobs-auth, on a loopback address only. */
  consoleInsecure: boolean;
  /** -queue: NATS server URL(s) of the queue shared by several instances; "" is the in-process queue. */
  queue: string;
  /** -queue-ack-wait (ms): a job whose instance gives no sign of life for this long runs on another. */
  queueAckWaitMs: number;
  /** -queue-key-file: a file holding the key that signs the shared queue's messages; "" none. */
  queueKeyFile: string;
  /** -test-request: a saved request file to evaluate against the hooks, running nothing; "" serves. */
  testRequest: string;
  /** -test-hook: the hook -test-request answers for (its exit code); "" is the one the request's URL names. */
  testHook: string;
  /** -record-requests: a folder where each request to a hook is saved for -test-request; "" none. */
  recordRequests: string;
}

type Kind = "bool" | "string" | "int" | "duration" | "value";

/** One flag: its name and type as Go's usage prints them, the option it sets and that option's default. */
interface FlagRow<K extends keyof Options> {
  name: string;
  kind: Kind;
  usage: string;
  option: K;
  /** The option's value when the flag is not given; usage shows it unless it is the zero value. */
  default: Options[K];
  /** The flag's text as the option's value (given the value so far); by default read as its kind says. */
  parse?: (v: string, current: Options[K]) => Options[K];
}

/** A row of the table, its option's type checked where it is written. */
type FlagDef = { [K in keyof Options]: FlagRow<K> }[keyof Options] | { name: "options-file"; kind: "value"; usage: string; option?: undefined };

function flag<K extends keyof Options>(row: FlagRow<K>): FlagDef {
  return row as unknown as FlagDef;
}

/** What Go's flag package refuses (its text), or -h. */
export class FlagError extends WebhookError {
  override readonly name = "FlagError";
  constructor(
    ...args: ErrorArgs<
      | "WEBHOOK_HELP"
      | "WEBHOOK_FLAG_SYNTAX"
      | "WEBHOOK_UNKNOWN_FLAG"
      | "WEBHOOK_FLAG_NOT_BOOLEAN"
      | "WEBHOOK_FLAG_NEEDS_VALUE"
      | "WEBHOOK_BAD_FLAG_VALUE"
      | "WEBHOOK_BAD_FLAG_IN_FILE"
    >
  ) {
    super(...args);
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

function parseCount(s: string): number {
  const n = parseGoInt(s);
  if (n < 0) throw new Error("must be 0 or more");
  return n;
}

/** -header name=value. */
function header(v: string): { name: string; value: string } {
  const eq = v.indexOf("=");
  if (eq === -1) throw new Error("header flag must be in name=value format");
  return { name: v.slice(0, eq), value: v.slice(eq + 1) };
}

/** A flag's text read as its kind says. */
function parseKind(kind: Kind, v: string): string | number | boolean {
  if (kind === "bool") return parseGoBool(v);
  if (kind === "int") return parseGoInt(v);
  if (kind === "duration") return parseGoDuration(v);
  return v;
}

function parseLogFormat(v: string): "text" | "json" {
  if (v !== "text" && v !== "json") throw new Error('must be "text" or "json"');
  return v;
}

const FLAGS: readonly FlagDef[] = [
  flag({ name: "cert", kind: "string", option: "cert", default: "cert.pem", usage: "path to the HTTPS certificate pem file" }),
  flag({ name: "cipher-suites", kind: "string", option: "cipherSuites", default: "", usage: "comma-separated list of supported TLS cipher suites" }),
  flag({
    name: "command-timeout",
    kind: "duration",
    option: "commandTimeoutMs",
    default: 0,
    usage: "default for the hook field command-timeout: a command still running after this long gets SIGTERM on its process group, SIGKILL 5s later; 0 is none",
  }),
  flag({
    name: "console",
    kind: "bool",
    option: "console",
    default: false,
    usage: "with -jobs: serve the run console (hooks, runs, live output, replay) at /console/, behind -jobs-token or -jobs-auth",
  }),
  flag({
    name: "console-insecure",
    kind: "bool",
    option: "consoleInsecure",
    default: false,
    usage: "with -console: serve it without -jobs-token or -jobs-auth (only when listening on a loopback address)",
  }),
  flag({ name: "debug", kind: "bool", option: "debug", default: false, usage: "show debug output" }),
  flag({
    name: "header",
    kind: "value",
    option: "headers",
    default: [],
    usage: "response header to return, specified in format name=value, use multiple times to set multiple headers",
    parse: (v, headers) => [...headers, header(v)],
  }),
  flag({
    name: "hooks",
    kind: "value",
    option: "hooks",
    default: [],
    usage: "path to the json file containing defined hooks the webhook should serve, use multiple times to load from different files",
    parse: (v, hooks) => [...hooks, v],
  }),
  flag({ name: "hotreload", kind: "bool", option: "hotreload", default: false, usage: "watch hooks file for changes and reload them automatically" }),
  flag({
    name: "http-methods",
    kind: "string",
    option: "httpMethods",
    default: "",
    usage: 'set default allowed HTTP methods (ie. "POST"); separate methods with comma',
  }),
  flag({ name: "ip", kind: "string", option: "ip", default: "0.0.0.0", usage: "ip the webhook should serve hooks on" }),
  flag({
    name: "jobs",
    kind: "bool",
    option: "jobs",
    default: false,
    usage:
      "make every triggered execution a job: its id in the X-Job-Id answer header, its state and output at GET /jobs/<id>, recent ones at GET /jobs?hook=ID (outside the hook URL prefix)",
  }),
  flag({
    name: "jobs-auth",
    kind: "string",
    option: "jobsAuth",
    default: "",
    usage: 'with -jobs: "user:password" that /jobs asks for with basic auth (job output may hold secrets)',
  }),
  flag({
    name: "jobs-file",
    kind: "string",
    option: "jobsFile",
    default: "",
    usage: "with -jobs: keep the job history in this file, so a restart keeps it (a file that cannot be read is moved aside)",
  }),
  flag({
    name: "jobs-keep",
    kind: "int",
    option: "jobsKeep",
    default: 1000,
    usage: "with -jobs: how many jobs are kept; the oldest finished ones go first",
    parse: parseCount,
  }),
  flag({
    name: "jobs-max-age",
    kind: "duration",
    option: "jobsMaxAgeMs",
    default: 24 * 3_600_000,
    usage: "with -jobs: finished jobs older than this are forgotten; 0 keeps them until -jobs-keep pushes them out",
  }),
  flag({
    name: "jobs-output",
    kind: "int",
    option: "jobsOutput",
    default: 64 * 1024,
    usage: "with -jobs: bytes of a job's output kept, the last ones",
    parse: parseCount,
  }),
  flag({
    name: "jobs-redact-header",
    kind: "string",
    option: "jobsRedactHeader",
    default: "Authorization,Cookie,Proxy-Authorization",
    usage: "with -jobs-replay: comma-separated headers a job's kept request leaves out",
  }),
  flag({
    name: "jobs-replay",
    kind: "bool",
    option: "jobsReplay",
    default: false,
    usage: "with -jobs: a job keeps the request that triggered it (body included), and POST /jobs/<id>/replay runs the hook again with it",
  }),
  flag({
    name: "jobs-request-max",
    kind: "int",
    option: "jobsRequestMax",
    default: 1024 * 1024,
    usage: "with -jobs-replay: bytes of a request body a job keeps; a larger body is not kept and its job cannot be replayed",
    parse: parseCount,
  }),
  flag({
    name: "jobs-token",
    kind: "string",
    option: "jobsToken",
    default: "",
    usage: "with -jobs: a token that /jobs asks for as Authorization: Bearer <token> (job output may hold secrets)",
  }),
  flag({ name: "key", kind: "string", option: "key", default: "key.pem", usage: "path to the HTTPS certificate private key pem file" }),
  flag({ name: "list-cipher-suites", kind: "bool", option: "listCipherSuites", default: false, usage: "list available TLS cipher suites" }),
  flag({
    name: "log-format",
    kind: "string",
    option: "logFormat",
    default: "text",
    usage: 'log line format: "text" (the reference\'s) or "json" (one object per line)',
    parse: parseLogFormat,
  }),
  flag({ name: "logfile", kind: "string", option: "logfile", default: "", usage: "send log output to a file; implicitly enables verbose logging" }),
  flag({
    name: "max-background",
    kind: "int",
    option: "maxBackground",
    default: 8,
    usage:
      "max-concurrency of hooks that answer before their command runs (no output capture or streaming) when neither the hook nor -max-concurrency sets one; more wait in the hook's queue (-max-queue); 0 is no limit",
    parse: parseCount,
  }),
  flag({
    name: "max-body",
    kind: "int",
    option: "maxBody",
    default: 10 * 1024 * 1024,
    usage: "maximum size in bytes of a request body; larger requests get 413 Request Entity Too Large",
  }),
  flag({
    name: "max-body-idle",
    kind: "duration",
    option: "bodyTimeoutMs",
    default: 15_000,
    usage: "a request body that sends nothing more for this long is dropped: 408 and the connection closed",
  }),
  flag({
    name: "max-concurrency",
    kind: "int",
    option: "maxConcurrency",
    default: 0,
    usage: "default for the hook field max-concurrency: at most this many commands of a hook run at once, the rest wait in its queue; 0 is no limit",
    parse: parseCount,
  }),
  flag({
    name: "max-connections",
    kind: "int",
    option: "maxConnections",
    default: DEFAULT_MAX_CONNECTIONS,
    usage: "open connections at once over all clients; one more is answered 503 with Retry-After and closed; 0 is no limit",
    parse: parseCount,
  }),
  flag({
    name: "max-connections-per-ip",
    kind: "int",
    option: "maxConnectionsPerIp",
    default: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    usage: "open connections at once from one client address (IPv6: one /64); one more is answered 503 with Retry-After and closed; 0 is no limit",
    parse: parseCount,
  }),
  flag({
    name: "max-multipart-mem",
    kind: "int",
    option: "maxMultipartMem",
    default: 1 << 20,
    usage: "maximum memory in bytes for parsing multipart form data before disk caching",
  }),
  flag({
    name: "max-output",
    kind: "int",
    option: "maxOutput",
    default: 1024 * 1024,
    usage: "bytes of a command's output kept for the answer and the log: beyond it only the last bytes are kept, after a line saying so; 0 is no limit",
    parse: parseCount,
  }),
  flag({
    name: "max-queue",
    kind: "int",
    option: "maxQueue",
    default: 100,
    usage: "default for the hook field max-queue: how many requests may wait for a hook limited by max-concurrency; more are answered 429",
    parse: parseCount,
  }),
  flag({
    name: "max-request-memory",
    kind: "int",
    option: "maxRequestMemory",
    default: 0,
    usage: "bytes of unfinished requests (heads and bodies) held at once over all connections; a request beyond gets 503; 0 is 64 MiB, or -max-body if larger",
    parse: parseCount,
  }),
  flag({ name: "metrics", kind: "bool", option: "metrics", default: false, usage: "serve Prometheus metrics at GET /metrics (outside the hook URL prefix)" }),
  flag({ name: "nopanic", kind: "bool", option: "nopanic", default: false, usage: "start even when a hooks file cannot be loaded (the file is skipped)" }),
  {
    name: "options-file",
    kind: "value",
    usage: 'read flags from a file, one per line ("-port 9000", "verbose"; # starts a comment); flags after it on the command line win',
  },
  flag({ name: "pidfile", kind: "string", option: "pidfile", default: "", usage: "create PID file at the given path" }),
  flag({ name: "port", kind: "int", option: "port", default: 9000, usage: "port the webhook should serve hooks on" }),
  flag({
    name: "queue",
    kind: "string",
    option: "queue",
    default: "",
    usage:
      "share the hooks' queues with other instances through NATS JetStream at this URL (nats://[user:password@]HOST:PORT, tls://… for TLS; several comma-separated); max-concurrency and max-queue then hold over all instances together",
  }),
  flag({
    name: "queue-ack-wait",
    kind: "duration",
    option: "queueAckWaitMs",
    default: 30_000,
    usage: "with -queue: a job whose instance stopped answering (died) for this long runs again on another instance",
  }),
  flag({
    name: "queue-key-file",
    kind: "string",
    option: "queueKeyFile",
    default: "",
    usage:
      "with -queue: a file holding a key (at least 16 bytes) every instance shares; each signs the messages it publishes with it and refuses messages not signed with it",
  }),
  flag({
    name: "record-requests",
    kind: "string",
    option: "recordRequests",
    default: "",
    usage:
      "save each request to a hook in this folder (mode 0600 files, the newest 100, bodies up to 1 MiB), replayable with -test-request; the files hold the requests' secrets",
  }),
  flag({ name: "secure", kind: "bool", option: "secure", default: false, usage: "use HTTPS instead of HTTP" }),
  flag({
    name: "setgid",
    kind: "int",
    option: "setgid",
    default: 0,
    usage: "set group ID after opening listening port; must be used with setuid, not permitted with -socket",
  }),
  flag({
    name: "setuid",
    kind: "int",
    option: "setuid",
    default: 0,
    usage: "set user ID after opening listening port; must be used with setgid, not permitted with -socket",
  }),
  flag({
    name: "shutdown-timeout",
    kind: "duration",
    option: "shutdownTimeoutMs",
    default: 30_000,
    usage: "on SIGTERM or SIGINT, how long running commands may take to finish before their process groups are killed",
  }),
  flag({
    name: "socket",
    kind: "string",
    option: "socket",
    default: "",
    usage: "path to a Unix socket (e.g. /tmp/webhook.sock) to use instead of listening on an ip and port; if specified, the ip and port options are ignored",
  }),
  flag({ name: "template", kind: "bool", option: "template", default: false, usage: "parse hooks file as a Go template" }),
  flag({
    name: "test-hook",
    kind: "string",
    option: "testHook",
    default: "",
    usage: "with -test-request: test only this hook (default: every hook; the exit code is for the hook the request's URL names)",
  }),
  flag({
    name: "test-request",
    kind: "string",
    option: "testRequest",
    default: "",
    usage:
      "evaluate the request saved in this file (raw HTTP, JSON {method, url, headers, body}, or curl --trace output) against the hooks, print whether each would run, why not, and its command's argv, environment and files, run nothing, and exit: 0 when the hook would run, 1 when not",
  }),
  flag({ name: "tls-min-version", kind: "string", option: "tlsMinVersion", default: "1.2", usage: "minimum TLS version (1.0, 1.1, 1.2, 1.3)" }),
  flag({
    name: "urlprefix",
    kind: "string",
    option: "urlprefix",
    default: "hooks",
    usage: "url prefix to use for served hooks (protocol://yourserver:port/PREFIX/:hook-id)",
  }),
  flag({
    name: "validate",
    kind: "bool",
    option: "validate",
    default: false,
    usage:
      "check the hooks files (rendered with -template if given), print each problem with file, line and hook id, and exit: 0 when there are none, 1 otherwise",
  }),
  flag({ name: "verbose", kind: "bool", option: "verbose", default: false, usage: "show verbose output" }),
  flag({ name: "version", kind: "bool", option: "version", default: false, usage: "display webhook version and quit" }),
  flag({ name: "x-request-id", kind: "bool", option: "xRequestId", default: false, usage: "use X-Request-Id header, if present, as request ID" }),
  flag({ name: "x-request-id-limit", kind: "int", option: "xRequestIdLimit", default: 0, usage: "truncate X-Request-Id header to limit; default no limit" }),
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

/** Every option's default, from the table. */
export function defaults(): Options {
  const o: Partial<Record<keyof Options, unknown>> = {};
  for (const f of FLAGS) if (f.option !== undefined) o[f.option] = Array.isArray(f.default) ? [...f.default] : f.default;
  return o as Options;
}

/** Sets the option of flag `f` from its text `v`; throws Error saying what is wrong with it. */
function apply(o: Options, f: Exclude<FlagDef, { option?: undefined }>, v: string): void {
  const set = o as unknown as Record<keyof Options, unknown>;
  set[f.option] = f.parse ? (f.parse as (v: string, current: unknown) => unknown)(v, o[f.option]) : parseKind(f.kind, v);
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
      throw e instanceof FlagError && e.code !== "WEBHOOK_HELP" && where !== undefined
        ? new FlagError("WEBHOOK_BAD_FLAG_IN_FILE", { where, problem: e.message })
        : e;
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
  if (name === "" || name[0] === "-" || name[0] === "=") throw new FlagError("WEBHOOK_FLAG_SYNTAX", { arg: a });
  let value: string | undefined;
  const eq = name.indexOf("=");
  if (eq !== -1) {
    value = name.slice(eq + 1);
    name = name.slice(0, eq);
  }
  const def = FLAGS.find((f) => f.name === name);
  if (!def) {
    if (name === "help" || name === "h") throw new FlagError("WEBHOOK_HELP", {});
    throw new FlagError("WEBHOOK_UNKNOWN_FLAG", { name });
  }
  if (def.kind === "bool" && def.option !== undefined) {
    try {
      apply(o, def, value ?? "true");
    } catch {
      throw new FlagError("WEBHOOK_FLAG_NOT_BOOLEAN", { value: JSON.stringify(value), name });
    }
    return i;
  }
  if (value === undefined) {
    // A file's line holds its flag's value: the next line is another flag.
    if (i + 1 >= args.length || where !== undefined) throw new FlagError("WEBHOOK_FLAG_NEEDS_VALUE", { name });
    value = args[++i]!;
  }
  if (def.option === undefined) {
    // -options-file
    try {
      insert(i + 1, readOptionsFile(value));
    } catch (e) {
      throw new FlagError("WEBHOOK_BAD_FLAG_VALUE", { value: JSON.stringify(value), name: "options-file", reason: (e as Error).message }, { cause: e });
    }
    return i;
  }
  try {
    apply(o, def, value);
  } catch (e) {
    throw new FlagError("WEBHOOK_BAD_FLAG_VALUE", { value: JSON.stringify(value), name, reason: (e as Error).message }, { cause: e });
  }
  return i;
}
