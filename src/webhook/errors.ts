// The hook server's errors in one table, as fastify's lib/errors.js: each row a code, the message (`{name}` is a part
// the thrower fills in) and what it ends in: `exit`, the code `webhook` exits with when it stops the start (the
// reference's log.Fatal exits 1, Go's flag package 2), or `status`, the HTTP answer of the request it stops.
// Codes are WEBHOOK_ and SCREAMING_SNAKE, as the client's FRAMEFI_*, Node's ERR_* and fastify's FST_ERR_*: the prefix
// keeps them apart from the system's codes (ENOENT, ECONNREFUSED, …) that reach the same `code` through a cause.
// Where the reference has the message, the row holds its text exactly; a "{problem}" row holds a text made elsewhere
// (Go's multipart and text/template texts, the run fields' and match types' checks) or wraps another row's.
import { fill, messagesOf, type TableArgs, type TableParts } from "../shared/message-template.js";

export const EXIT = {
  /** -h: the usage, then success, as Go's flag package. */
  help: 0,
  /** log.Fatal: the start stops. */
  fatal: 1,
  /** A flag Go's flag package refuses. */
  usage: 2,
} as const;

export interface Row {
  readonly message: string;
  readonly exit?: number;
  readonly status?: number;
}

export const ERRORS = {
  // The command line.
  WEBHOOK_HELP: { message: "", exit: EXIT.help },
  WEBHOOK_FLAG_SYNTAX: { message: "bad flag syntax: {arg}", exit: EXIT.usage },
  WEBHOOK_UNKNOWN_FLAG: { message: "flag provided but not defined: -{name}", exit: EXIT.usage },
  WEBHOOK_FLAG_NOT_BOOLEAN: { message: "invalid boolean value {value} for -{name}: parse error", exit: EXIT.usage },
  WEBHOOK_FLAG_NEEDS_VALUE: { message: "flag needs an argument: -{name}", exit: EXIT.usage },
  WEBHOOK_BAD_FLAG_VALUE: { message: "invalid value {value} for flag -{name}: {reason}", exit: EXIT.usage },
  /** One of the above, read from an -options-file: {where} names the file and line. */
  WEBHOOK_BAD_FLAG_IN_FILE: { message: "{where}: {problem}", exit: EXIT.usage },
  WEBHOOK_TLS_MIN_VERSION: { message: "error: unknown minimum TLS version: {version}", exit: EXIT.fatal },
  WEBHOOK_TLS_CIPHER_SUITE: { message: "error: unknown TLS cipher suite: {name}", exit: EXIT.fatal },
  WEBHOOK_TLS_FILE: { message: "error loading the HTTPS {what} {path}: {reason}", exit: EXIT.fatal },
  WEBHOOK_PIDFILE_HELD: { message: "Error creating pidfile: pid file found, ensure webhook is not running or delete {path}", exit: EXIT.fatal },
  WEBHOOK_PIDFILE_UNWRITABLE: { message: "Error creating pidfile: cannot write the pid file: {reason}", exit: EXIT.fatal },
  // Listening.
  WEBHOOK_BAD_PORT: { message: "error listening on port: listen tcp: address {port}: invalid port", exit: EXIT.fatal },
  WEBHOOK_LISTEN: { message: "error listening on port: listen {where}: {reason}", exit: EXIT.fatal },
  WEBHOOK_SYSTEMD_SOCKETS: { message: "error listening on socket: received {count} sockets from systemd, but only 1 is supported", exit: EXIT.fatal },
  WEBHOOK_SYSTEMD_FD: { message: "error listening on socket: fd {fd} from systemd is not a listening stream socket: {reason}", exit: EXIT.fatal },
  WEBHOOK_SOCKET_SETUID: {
    message:
      "error listening on socket: -setuid and -setgid options are not compatible with -socket.  If you need to bind a socket as root but run webhook as a different user, consider using systemd activation",
    exit: EXIT.fatal,
  },
  WEBHOOK_SETUID_WITHOUT_SETGID: { message: "error: setuid and setgid options must be used together", exit: EXIT.fatal },
  WEBHOOK_TLS_CERTIFICATE: { message: "error loading the HTTPS certificate and key: {reason}", exit: EXIT.fatal },
  WEBHOOK_PRIVILEGES: { message: "error dropping privileges: {reason}", exit: EXIT.fatal },
  WEBHOOK_LOG_FILE: { message: "error opening log file {quoted}: open {path}: {reason}", exit: EXIT.fatal },
  // The shared queue.
  WEBHOOK_CONSOLE_WITHOUT_JOBS: { message: "-console shows the jobs: give -jobs too, or drop -console", exit: EXIT.fatal },
  WEBHOOK_REPLAY_WITHOUT_JOBS: { message: "-jobs-replay keeps each job's request: give -jobs too, or drop -jobs-replay", exit: EXIT.fatal },
  WEBHOOK_CONSOLE_OPEN: {
    message:
      "{flag} would let anyone who reaches this server read job output and replay jobs: set -jobs-token or -jobs-auth, or add -console-insecure and listen on a loopback -ip (127.0.0.1 or ::1)",
    exit: EXIT.fatal,
  },
  WEBHOOK_QUEUE_KEY_WITHOUT_QUEUE: {
    message: "-queue-key-file signs the messages of the shared queue: give -queue too, or drop -queue-key-file",
    exit: EXIT.fatal,
  },
  WEBHOOK_QUEUE_KEY_UNREADABLE: { message: "cannot read the queue key file {path} (-queue-key-file): {reason}", exit: EXIT.fatal },
  WEBHOOK_QUEUE_KEY_SHORT: {
    message:
      "the queue key file {path} (-queue-key-file) holds {bytes} bytes; it needs at least {min}: make one with  head -c 32 /dev/urandom | base64 > {path}",
    exit: EXIT.fatal,
  },
  WEBHOOK_QUEUE_NOT_A_URL: { message: "-queue {servers} is not a URL: give nats://HOST:PORT", exit: EXIT.fatal },
  WEBHOOK_QUEUE_SCHEME: { message: "-queue {servers}: the scheme must be nats:// or tls://", exit: EXIT.fatal },
  WEBHOOK_QUEUE_UNREACHABLE: {
    message: "cannot connect to the NATS server at {address} (-queue): {reason}; start nats-server -js there or fix -queue",
    exit: EXIT.fatal,
  },
  WEBHOOK_QUEUE_NO_JETSTREAM: { message: "the NATS server at {address} (-queue) has no JetStream ({reason}): start it with -js", exit: EXIT.fatal },
  WEBHOOK_QUEUE_NO_BUCKET: {
    message: "cannot open the job records (key-value bucket) on the NATS server at {address} (-queue): {reason}",
    exit: EXIT.fatal,
  },
  // Hooks files.
  WEBHOOK_HOOKS_UNREADABLE: { message: "{path}: cannot read the hooks file ({reason})", exit: EXIT.fatal },
  WEBHOOK_HOOKS_TEMPLATE: { message: "{problem}", exit: EXIT.fatal },
  WEBHOOK_HOOKS_SYNTAX: { message: "{path}:{where} invalid {kind}: {reason}", exit: EXIT.fatal },
  WEBHOOK_HOOKS_NOT_A_LIST: { message: "{path}: the hooks file must hold a list (array) of hooks, not {got}", exit: EXIT.fatal },
  /** One of the hook's problems below, with the file it is in. */
  WEBHOOK_HOOKS_FILE_PROBLEM: { message: "{path}: {problem}", exit: EXIT.fatal },
  /** One of the field's problems below, with the hook it is in. */
  WEBHOOK_HOOK_PROBLEM: { message: "{hook}: {problem}", exit: EXIT.fatal },
  WEBHOOK_HOOK_FIELD_TYPE: { message: '"{path}" must be {wanted}, not {got}', exit: EXIT.fatal },
  WEBHOOK_HOOK_NOT_FINITE: { message: '"{path}": {value} is not a number JSON can hold', exit: EXIT.fatal },
  WEBHOOK_HOOK_BAD_MATCH: { message: "{problem}", exit: EXIT.fatal },
  WEBHOOK_HOOK_BAD_RUN_FIELD: { message: "{problem}", exit: EXIT.fatal },
  /** notify/target.ts says what is wrong with a notify target. */
  WEBHOOK_HOOK_BAD_NOTIFY: { message: "{problem}", exit: EXIT.fatal },
  WEBHOOK_HOOK_COMMAND_TIMEOUT: {
    message: '"command-timeout" must be a duration such as "500ms", "30s" or "2m" (0 is none), not {value}',
    exit: EXIT.fatal,
  },
  WEBHOOK_HOOK_DEDUP_ID: {
    message: '"deduplicate" needs "id": the request value naming a delivery, e.g. {"source": "header", "name": "X-GitHub-Delivery"}',
    exit: EXIT.fatal,
  },
  WEBHOOK_HOOK_DEDUP_WINDOW: { message: '"deduplicate"."window" must be a duration from "1s" to "24h" such as "10m", not {value}', exit: EXIT.fatal },
  WEBHOOK_HOOK_SECRET_FILE: { message: 'cannot read "secret-file" {path}: {reason}', exit: EXIT.fatal },
  WEBHOOK_HOOK_SECRET_FILE_EMPTY: {
    message: '"secret-file" {path} is empty or blank: write the secret into it (a final newline is ignored)',
    exit: EXIT.fatal,
  },
  WEBHOOK_HOOK_IP_LIST_FILE: { message: 'cannot read "ip-list-file" {path}: {reason}', exit: EXIT.fatal },
  WEBHOOK_HOOK_IP_LIST_LINE: {
    message: "{path}:{line}: {text} is not an IP address or CIDR range; write one a line, such as 192.0.2.0/24 or 2001:db8::/32 (# starts a comment)",
    exit: EXIT.fatal,
  },
  WEBHOOK_HOOK_MISMATCH_RESPONSE: { message: '"trigger-rule-mismatch-response" must be "explain" or "plain", not {value}', exit: EXIT.fatal },
  /** The reference's log.Fatal of two lines. */
  WEBHOOK_DUPLICATE_HOOK: {
    message: "error: hook with the id {id} has already been loaded!\nplease check your hooks file for duplicate hooks ids! (the second one is in {path})",
    exit: EXIT.fatal,
  },
  /** The reference's fatal of three lines, when no hooks loaded. */
  WEBHOOK_NO_HOOKS: {
    message:
      "couldn't load any hooks from file!\naborting webhook execution since the -verbose flag is set to false.\nIf, for some reason, you want webhook to start without the hooks, either use -verbose flag, or -nopanic",
    exit: EXIT.fatal,
  },
  WEBHOOK_BROKEN_HOOKS_FILE: {
    message: "aborting: fix the hooks file named above, or start with -nopanic to serve without it (-verbose does not skip a broken file)",
    exit: EXIT.fatal,
  },
  // -test-request and -record-requests.
  WEBHOOK_TEST_REQUEST_UNREADABLE: { message: "cannot read the request file {path} (-test-request): {reason}", exit: EXIT.usage },
  WEBHOOK_TEST_REQUEST_BAD: {
    message: '{path} (-test-request) is not a saved request: {reason}; give the raw request as sent, or JSON {"method", "url", "headers", "body"}',
    exit: EXIT.usage,
  },
  WEBHOOK_TEST_HOOK_UNKNOWN: { message: "no hook {id} in the hooks files (-test-hook); the ids are: {ids}", exit: EXIT.usage },
  WEBHOOK_TEST_HOOK_NONE: { message: "the request's URL {url} names no hook under /{prefix}/: give -test-hook ID", exit: EXIT.fatal },
  WEBHOOK_RECORD_DIR: { message: "cannot record requests in {path} (-record-requests): {reason}", exit: EXIT.fatal },
  // Replay (-jobs-replay) and the console: the answer's error text.
  WEBHOOK_REPLAY_OFF: { message: "replay is off: start the server with -jobs-replay to keep requests and replay them", status: 404 },
  WEBHOOK_REPLAY_NOT_KEPT: { message: "job {id} cannot be replayed: {why}", status: 409 },
  WEBHOOK_NOT_LOOPBACK_HOST: {
    message:
      "refused: without -jobs-token or -jobs-auth the console and replay answer only to a loopback Host (localhost, 127.0.0.1, [::1]), not {host}; open it by one of those names",
    status: 403,
  },
  WEBHOOK_CROSS_SITE: {
    message: "refused: a page from another site ({origin}) may not act here; use the console at /console/ or a client that sends no Origin",
    status: 403,
  },
  // Requests: the log line; the answer is the reference's 500 body (a signature refused under
  // allow-signature-errors is a rule mismatch instead).
  WEBHOOK_SIGNATURE_MISMATCH: { message: "invalid payload signature {signature}", status: 500 },
  WEBHOOK_SIGNATURES_MISMATCH: { message: "invalid payload signatures [{signatures}]{onEmpty}", status: 500 },
  WEBHOOK_SIGNATURE_OUTDATED: { message: "invalid payload signature outdated", status: 500 },
  WEBHOOK_SIGNATURE_TOO_OLD: {
    message: "invalid payload signature outdated: timestamp {timestamp} is {seconds}s from now, beyond the tolerance of {tolerance}",
    status: 500,
  },
  WEBHOOK_SIGNATURE_TIMESTAMP: { message: "invalid payload signature: timestamp {timestamp} is not a Unix time in seconds", status: 500 },
  WEBHOOK_STRIPE_SIGNATURE_INCOMPLETE: { message: "invalid payload signature: Stripe-Signature has no t= or no v1=", status: 500 },
  WEBHOOK_UNKNOWN_REQUEST_KEY: { message: "unsupported request key: {key}", status: 500 },
  WEBHOOK_NO_SOURCE: { message: "no source for value retrieval", status: 500 },
  WEBHOOK_MULTIPART: { message: "{problem}", status: 500 },
} as const satisfies Record<string, Row>;

export type ErrorCode = keyof typeof ERRORS;

export type Parts<C extends ErrorCode> = TableParts<typeof ERRORS, C>;
export type ErrorArgs<C extends ErrorCode = ErrorCode> = TableArgs<typeof ERRORS, C>;

/** The message of `code`'s row with its parts filled in, for a line said where nothing is thrown. */
export const messageOf = messagesOf(ERRORS);

/** Every error of the hook server a user sees: `code` names its row in ERRORS. */
export class WebhookError extends Error {
  override name = "WebhookError";
  readonly code: ErrorCode;

  constructor(...[code, parts, options]: ErrorArgs) {
    super(fill(ERRORS[code].message, parts), options);
    this.code = code;
  }
}

export interface Described {
  readonly code: ErrorCode;
  readonly message: string;
  readonly exit?: number;
  readonly status?: number;
}

/** What a user is told of `error` and how it ends, or undefined for an error that is not ours (a bug: rethrow it). */
export function describe(error: unknown): Described | undefined {
  if (!(error instanceof WebhookError)) return undefined;
  return { ...ERRORS[error.code], code: error.code, message: error.message };
}
