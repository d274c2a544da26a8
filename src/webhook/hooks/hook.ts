// The shapes shared by the hook server's modules: what a hooks file holds, and what a request
// looks like once parsed. Field names are the hooks-file keys of adnanh/webhook, unchanged.
import type { NotifyField } from "../notify/target.js";
import type { SignatureType } from "./signatures.js";
import type { NetSet } from "./ip-ranges.js";

/** Where a value is read from (`source` in the hooks file). */
export type ArgumentSource =
  | "header"
  | "url"
  | "query"
  | "payload"
  | "request"
  | "string"
  | "raw-request-body"
  | "entire-payload"
  | "entire-headers"
  | "entire-query";

/** A reference to a request value: an argument, an env var, a file, or a rule's parameter. */
export interface Argument {
  source: ArgumentSource;
  name?: string;
  envname?: string;
  base64decode?: boolean;
  "headers-to-add-to-signature-payload"?: string[];
}

/** The reference's match types; ours (signature profiles such as "github") are SignatureType. */
export const MATCH_TYPES = [
  "value",
  "regex",
  "payload-hmac-sha1",
  "payload-hmac-sha256",
  "payload-hmac-sha512",
  "payload-hash-sha1",
  "payload-hash-sha256",
  "payload-hash-sha512",
  "ip-whitelist",
  "scalr-signature",
] as const;

export type MatchType = (typeof MATCH_TYPES)[number] | SignatureType;

/** What a match read from its files at load (secret-file, ip-list-file); never written in a hooks file. */
export const FROM_FILES = Symbol("from files");

export interface FromFiles {
  /** The secrets of `secret-file`, in order. */
  secrets: string[];
  /** The ranges of `ip-list-file`, parsed. */
  ranges?: NetSet;
  /** Each file read, with the text read: a change re-reads the hooks (-hotreload). */
  files: Map<string, string>;
}

export interface MatchRule {
  type: MatchType;
  value?: string;
  regex?: string;
  /** A list (ours) holds the secrets of a rotation: a signature made with any of them holds. */
  secret?: string | string[];
  /** Ours: the secret (or a list of them) read from these files, as well as `secret`. */
  "secret-file"?: string | string[];
  "ip-range"?: string;
  /** Ours: more ranges of an ip-whitelist, one a line in this file. */
  "ip-list-file"?: string;
  [FROM_FILES]?: FromFiles;
  parameter?: Argument;
  /** Ours: whether `value` is a secret, hidden in the log (default: compared with a url parameter or a non-event header). */
  redact?: boolean;
  /** Ours: how far a signed timestamp may be from now, a Go duration (default "5m"); signature schemes only. */
  tolerance?: string;
}

/** Exactly one of the keys is set, as in the reference. */
export interface Rule {
  and?: Rule[];
  or?: Rule[];
  not?: Rule;
  match?: MatchRule;
}

export interface ResponseHeader {
  name: string;
  value: string;
}

/** The hook field deduplicate: which request value names a delivery, and for how long (a Go duration, default 10m). */
export interface Deduplicate {
  id?: Argument;
  window?: string;
}

/** The hook field as written: { "attempts": 3, "delay": "1s", "max-delay": "1m", "exit-codes": [1, 75] }. */
export interface RetryField {
  /** Runs in all, the first included (1: no retry). */
  attempts?: number;
  /** Go duration before the second attempt; doubled for each later one (default "1s"). */
  delay?: string;
  /** Go duration no wait exceeds (default "1m"). */
  "max-delay"?: string;
  /** Exit codes that retry; absent: every failure does (non-zero exit, signal, command-timeout). */
  "exit-codes"?: number[];
}

/** One hook definition, as written in a hooks file. */
export interface Hook {
  id: string;
  "execute-command": string;
  "command-working-directory"?: string;
  "response-message"?: string;
  "response-headers"?: ResponseHeader[];
  "include-command-output-in-response"?: boolean;
  "include-command-output-in-response-on-error"?: boolean;
  /** Ours: send the command's output to the client as it is produced (chunked). */
  "stream-command-output"?: boolean;
  /** Ours: at most this many commands of the hook run at once (0: no limit; default -max-concurrency). */
  "max-concurrency"?: number;
  /** Ours: requests waiting for a turn beyond max-concurrency; more get 429 (default -max-queue). */
  "max-queue"?: number;
  /** Ours: a Go duration ("30s"); when it expires the command's process group is stopped (default -command-timeout). */
  "command-timeout"?: string;
  /** Ours: answer 202 Accepted at once, with the job's URL in Location (-jobs). */
  "async-response"?: boolean;
  /** Ours: the command's stderr goes to the log (and the job), not into the answer. */
  "exclude-stderr-from-response"?: boolean;
  /** Ours: a captured hook's HTTP status follows its command's exit code. */
  "status-from-exit-code"?: boolean;
  /** Ours: run a failed command again. */
  retry?: RetryField;
  /** Ours: a Go duration; a burst of triggers runs once, after this long without another. */
  debounce?: string;
  /** Ours: at most `requests` triggers per `period` (a Go duration); more are answered 429. */
  "rate-limit"?: { requests?: number; period?: string };
  /** Ours, with -queue: a second trigger with the same delivery id within the window runs nothing. */
  deduplicate?: Deduplicate;
  /** Ours: where a job's outcome is sent (notify/target.ts). */
  notify?: NotifyField[];
  "pass-environment-to-command"?: Argument[];
  "pass-arguments-to-command"?: Argument[];
  "pass-file-to-command"?: Argument[];
  "parse-parameters-as-json"?: Argument[];
  "trigger-rule"?: Rule;
  "trigger-rule-mismatch-http-response-code"?: number;
  /** Ours: "explain" answers a mismatch with a JSON body naming the rule that failed (default "plain"). */
  "trigger-rule-mismatch-response"?: string;
  "trigger-signature-soft-failures"?: boolean;
  "incoming-payload-content-type"?: string;
  "success-http-response-code"?: number;
  "http-methods"?: string[];
}

/**
 * A request as the rules and the command see it. Built once per request by the handler; read by
 * rules and execution. `headers` keys are canonical MIME form ("X-Hub-Signature"), `query` holds
 * the first value of each URL parameter. Values may become objects through parse-parameters-as-json.
 */
export interface HookRequest {
  /** The request id used in logs. */
  id: string;
  method: string;
  /** "ip:port", IPv6 in brackets ("[::1]:5000"), as Go's RemoteAddr. */
  remoteAddr: string;
  contentType: string;
  headers: Record<string, unknown>;
  query: Record<string, unknown>;
  rawBody: Buffer;
  /** Decoded body: an object (a top-level JSON array sits under "root"), or undefined when none. */
  payload: Record<string, unknown> | undefined;
  /** Signature failures inside an `or` make a match false instead of an error (`trigger-signature-soft-failures`). */
  allowSignatureErrors: boolean;
}
