// Loading hooks files: JSON or YAML, an array of hook definitions, read exactly as the reference
// reads them: YAML (JSON is YAML) decoded by yaml.v2's rules, then fitted to the Go structs the way
// ghodss/yaml and encoding/json do it. So a number, boolean or null where the struct has a string
// becomes that string in Go's spelling (1.50 → "1.5", 0x1F → "31", yes → "true", ~ → ""), field
// names match in any case, a hook without id or execute-command loads (it fails when called), and
// only the first YAML document counts. What Go refuses (an object where a string belongs, a string
// where a boolean belongs…) is refused with the file, hook and field named.
import { readFileSync } from "node:fs";
import type { Argument, Deduplicate, Hook, MatchRule, Rule } from "./hook.js";
import { parseGoDuration } from "../go/duration.js";
import { decodeYaml, formatFloat32, YamlError, type YamlValue } from "../go/yaml.js";
import { renderTemplate, TemplateError } from "../template/template.js";
import { isSignatureType, signatureMatchProblem, signatureSecrets } from "./signatures.js";
import { type ErrorArgs, type ErrorCode, WebhookError } from "../errors.js";
import { DEDUP_WINDOW_DEFAULT, MAX_DEDUP_WINDOW, runPolicy } from "./run-fields.js";
import { loadMatchFiles, matchValues } from "./match-files.js";
import { type NotifyField, notifySecrets, notifyTargets } from "../notify/target.js";

type HooksFileCode = Extract<ErrorCode, `WEBHOOK_HOOKS_${string}` | `WEBHOOK_HOOK_${string}`>;

/** A hooks file, or a hook in it, the server cannot load. */
export class HooksFileError extends WebhookError {
  override readonly name = "HooksFileError";
  constructor(...args: ErrorArgs<HooksFileCode>) {
    super(...args);
  }
}

/** The Go type of a field, as encoding/json fills it. */
type GoType =
  /** count: ours, an int that must not be negative. */
  /** strings: ours, a string or a list of them. */
  { kind: "string" | "bool" | "int" | "count" | "strings" } | { kind: "slice"; elem: GoType } | { kind: "struct"; fields: Record<string, GoType> };

const STRING: GoType = { kind: "string" };
const STRINGS: GoType = { kind: "strings" };
const BOOL: GoType = { kind: "bool" };
const INT: GoType = { kind: "int" };
const COUNT: GoType = { kind: "count" };
const slice = (elem: GoType): GoType => ({ kind: "slice", elem });

/** A validator for every field of T: a field added to the type cannot lack one. */
type FieldsOf<T> = { [K in Exclude<keyof Required<T>, symbol>]: GoType };

const ARGUMENT_FIELDS: FieldsOf<Argument> = {
  source: STRING,
  name: STRING,
  envname: STRING,
  base64decode: BOOL,
  "headers-to-add-to-signature-payload": slice(STRING),
};
const ARGUMENT: GoType = { kind: "struct", fields: ARGUMENT_FIELDS };
const MATCH_FIELDS: FieldsOf<MatchRule> = {
  type: STRING,
  regex: STRING,
  secret: STRINGS,
  "secret-file": STRINGS,
  value: STRING,
  parameter: ARGUMENT,
  "ip-range": STRING,
  "ip-list-file": STRING,
  redact: BOOL,
  tolerance: STRING,
};
const RULE: GoType = { kind: "struct", fields: {} };
Object.assign((RULE as { fields: Record<string, GoType> }).fields, {
  and: slice(RULE),
  or: slice(RULE),
  not: RULE,
  match: { kind: "struct", fields: MATCH_FIELDS },
} satisfies FieldsOf<Rule>);
const NOTIFY_FIELDS: FieldsOf<NotifyField> = {
  url: STRING,
  ntfy: STRING,
  mqtt: STRING,
  topic: STRING,
  on: slice(STRING),
  template: STRING,
  title: STRING,
  priority: STRING,
  tags: slice(STRING),
  headers: slice({ kind: "struct", fields: { name: STRING, value: STRING } }),
  timeout: STRING,
  retries: COUNT,
};
const HOOK_FIELDS: FieldsOf<Hook> = {
  id: STRING,
  "execute-command": STRING,
  "command-working-directory": STRING,
  "response-message": STRING,
  "response-headers": slice({ kind: "struct", fields: { name: STRING, value: STRING } }),
  "include-command-output-in-response": BOOL,
  "include-command-output-in-response-on-error": BOOL,
  "stream-command-output": BOOL,
  "max-concurrency": COUNT,
  "max-queue": COUNT,
  "command-timeout": STRING,
  "async-response": BOOL,
  "status-from-exit-code": BOOL,
  "exclude-stderr-from-response": BOOL,
  retry: { kind: "struct", fields: { attempts: COUNT, delay: STRING, "max-delay": STRING, "exit-codes": slice(INT) } },
  debounce: STRING,
  "rate-limit": { kind: "struct", fields: { requests: COUNT, period: STRING } },
  deduplicate: { kind: "struct", fields: { id: ARGUMENT, window: STRING } satisfies FieldsOf<Deduplicate> },
  notify: slice({ kind: "struct", fields: NOTIFY_FIELDS }),
  "pass-environment-to-command": slice(ARGUMENT),
  "pass-arguments-to-command": slice(ARGUMENT),
  "pass-file-to-command": slice(ARGUMENT),
  "parse-parameters-as-json": slice(ARGUMENT),
  "trigger-rule": RULE,
  "trigger-rule-mismatch-http-response-code": INT,
  "trigger-rule-mismatch-response": STRING,
  "trigger-signature-soft-failures": BOOL,
  "incoming-payload-content-type": STRING,
  "success-http-response-code": INT,
  "http-methods": slice(STRING),
};
const HOOK: GoType = { kind: "struct", fields: HOOK_FIELDS };

const WANTED: Record<GoType["kind"], string> = {
  string: "a string",
  strings: "a string or a list of strings",
  bool: "true or false",
  int: "a whole number",
  count: "a whole number, 0 or more (0 is no limit for max-concurrency)",
  slice: "a list",
  struct: "an object",
};

function describe(v: YamlValue): string {
  if (v instanceof Map) return "an object";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "string") return "a string";
  if (typeof v === "boolean") return "a boolean";
  return "a number";
}

/**
 * encoding/json's case-insensitive key match: ASCII letters fold, and so do the two non-ASCII
 * letters that fold to ASCII ones (ſ to s, the Kelvin sign to k).
 */
function fold(key: string): string {
  return key
    .replace(/\u017f/g, "s")
    .replace(/\u212a/g, "k")
    .replace(/[A-Z]/g, (c) => c.toLowerCase());
}

function fieldFor(fields: Record<string, GoType>, key: string): string | undefined {
  if (Object.hasOwn(fields, key)) return key;
  const folded = fold(key);
  return Object.keys(fields).find((name) => name === folded);
}

/** json.Marshal refuses NaN and infinities anywhere, even in keys nobody reads. */
function checkFinite(v: YamlValue, path: string): void {
  if (typeof v === "number" && !Number.isFinite(v)) throw new HooksFileError("WEBHOOK_HOOK_NOT_FINITE", { path, value: formatFloat32(v) });
  if (Array.isArray(v)) for (const [i, x] of v.entries()) checkFinite(x, `${path}[${i}]`);
  if (v instanceof Map) for (const [k, x] of v) checkFinite(x, `${path}.${k}`);
}

function zero(type: GoType): unknown {
  if (type.kind === "string") return "";
  if (type.kind === "bool") return false;
  if (type.kind === "int" || type.kind === "count") return 0;
  return type.kind === "struct" ? {} : undefined;
}

/**
 * One value fitted to a Go type as ghodss/yaml + encoding/json do. `current` is what the field
 * holds already (a repeated key): null leaves a string, boolean or number as it is, and an object
 * is merged into the one there. Returns undefined for "not set".
 */
function fit(v: YamlValue, type: GoType, path: string, current: unknown): unknown {
  if (v === null) return type.kind === "slice" ? undefined : current;
  const wrong = (): never => {
    throw new HooksFileError("WEBHOOK_HOOK_FIELD_TYPE", { path, wanted: WANTED[type.kind], got: describe(v) });
  };
  switch (type.kind) {
    case "string":
      if (typeof v === "string") return v;
      if (typeof v === "bigint" || typeof v === "boolean") return String(v);
      if (typeof v === "number") return formatFloat32(v);
      return wrong();
    case "strings":
      return Array.isArray(v) ? v.map((x, i) => fit(x, STRING, `${path}[${i}]`, "")) : fit(v, STRING, path, current);
    case "bool":
      return typeof v === "boolean" ? v : wrong();
    case "int":
    case "count": {
      checkFinite(v, path);
      const n = typeof v === "bigint" && v >= -(1n << 63n) && v < 1n << 63n ? Number(v) : v;
      if (typeof n !== "number" || !Number.isInteger(n) || Math.abs(n) >= 2 ** 63) return wrong();
      return type.kind === "count" && n < 0 ? wrong() : n;
    }
    case "slice":
      if (!Array.isArray(v)) return wrong();
      // An element starts as Go's zero value, which a null leaves in place.
      return v.map((x, i) => fit(x, type.elem, `${path}[${i}]`, zero(type.elem)));
    case "struct": {
      if (!(v instanceof Map)) return wrong();
      const out: Record<string, unknown> = typeof current === "object" && current !== null ? (current as Record<string, unknown>) : {};
      // ghodss/yaml hands encoding/json the keys sorted; with keys repeated in another case the last wins.
      for (const key of [...v.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
        const x = v.get(key)!;
        const name = fieldFor(type.fields, key);
        const at = path === "" ? key : `${path}.${key}`;
        if (name === undefined) {
          checkFinite(x, at);
          continue;
        }
        const fitted = fit(x, type.fields[name]!, path === "" ? name : `${path}.${name}`, out[name]);
        if (fitted === undefined) delete out[name];
        else out[name] = fitted;
      }
      return out;
    }
  }
}

/** Match types a secret-file may serve: the signatures and `value`. */
const SECRET_FILE_TYPES = /^(payload-(hmac|hash)-|scalr-signature$|value$)/;

/** The fields of our own match types hold what they must (a secret, a duration…); their files are read. */
function checkRule(r: Rule | undefined): void {
  if (!r) return;
  r.and?.forEach(checkRule);
  r.or?.forEach(checkRule);
  checkRule(r.not);
  if (!r.match) return;
  const m = r.match;
  if (m["secret-file"] !== undefined && !(SECRET_FILE_TYPES.test(m.type) || isSignatureType(m.type))) {
    throw new HooksFileError("WEBHOOK_HOOK_BAD_MATCH", { problem: `"secret-file" serves the signature matches and value, not ${m.type}` });
  }
  // A list of secrets (ours) is a rotation, which only the signature matches read: a value match
  // ignores "secret", so a list there would leave it comparing with "" (any empty parameter holds).
  if (Array.isArray(m.secret) && (m.type === "value" || !(SECRET_FILE_TYPES.test(m.type) || isSignatureType(m.type)))) {
    throw new HooksFileError("WEBHOOK_HOOK_BAD_MATCH", {
      problem: `a list of "secret"s serves the signature matches, not ${m.type}; a value match compares "value" or "secret-file"`,
    });
  }
  if (m["ip-list-file"] !== undefined && m.type !== "ip-whitelist") {
    throw new HooksFileError("WEBHOOK_HOOK_BAD_MATCH", { problem: `"ip-list-file" serves the ip-whitelist match, not ${m.type}` });
  }
  loadMatchFiles(m);
  const problem = signatureMatchProblem(m);
  if (problem) throw new HooksFileError("WEBHOOK_HOOK_BAD_MATCH", { problem });
}

/** command-timeout, a field of ours, holds a Go duration; our match types and run fields are complete. */
function checkOwnFields(hook: Record<string, unknown>): void {
  checkRule(hook["trigger-rule"] as Rule | undefined);
  try {
    runPolicy(hook as unknown as Hook);
  } catch (e) {
    throw new HooksFileError("WEBHOOK_HOOK_BAD_RUN_FIELD", { problem: (e as Error).message }, { cause: e });
  }
  const mismatch = hook["trigger-rule-mismatch-response"];
  if (mismatch !== undefined && mismatch !== "explain" && mismatch !== "plain") {
    throw new HooksFileError("WEBHOOK_HOOK_MISMATCH_RESPONSE", { value: JSON.stringify(mismatch) });
  }
  const timeout = hook["command-timeout"];
  if (typeof timeout === "string") {
    try {
      parseGoDuration(timeout);
    } catch {
      throw new HooksFileError("WEBHOOK_HOOK_COMMAND_TIMEOUT", { value: JSON.stringify(timeout) });
    }
  }
  const dedup = hook["deduplicate"] as Deduplicate | undefined;
  if (dedup) {
    if (!dedup.id) throw new HooksFileError("WEBHOOK_HOOK_DEDUP_ID", {});
    let ms = -1;
    try {
      ms = parseGoDuration(dedup.window ?? DEDUP_WINDOW_DEFAULT);
    } catch {
      // reported below
    }
    if (ms <= 0 || ms > MAX_DEDUP_WINDOW) throw new HooksFileError("WEBHOOK_HOOK_DEDUP_WINDOW", { value: JSON.stringify(dedup.window) });
  }
  try {
    notifyTargets(hook as unknown as Hook);
  } catch (e) {
    throw new HooksFileError("WEBHOOK_HOOK_BAD_NOTIFY", { problem: (e as Error).message }, { cause: e });
  }
}

/** One hook of a decoded hooks file (its index counts from 0), as the server loads it; throws HooksFileError. */
export function toHook(raw: YamlValue, index: number): Hook {
  const label = `hook #${index + 1}`;
  let hook: Record<string, unknown>;
  try {
    hook = (fit(raw, HOOK, "", undefined) as Record<string, unknown> | undefined) ?? {};
  } catch (e) {
    if (!(e instanceof HooksFileError)) throw e;
    const id = raw instanceof Map ? raw.get("id") : undefined;
    throw new HooksFileError(
      "WEBHOOK_HOOK_PROBLEM",
      { hook: typeof id === "string" ? `${label} (id ${JSON.stringify(id)})` : label, problem: e.message },
      { cause: e },
    );
  }
  // An absent id or command is Go's empty string: the hook is served (an empty id at the bare
  // prefix) and fails when its command is looked up, as in the reference.
  hook["id"] ??= "";
  hook["execute-command"] ??= "";
  try {
    checkOwnFields(hook);
  } catch (e) {
    throw new HooksFileError("WEBHOOK_HOOK_PROBLEM", { hook: `${label} (id ${JSON.stringify(hook["id"])})`, problem: (e as Error).message }, { cause: e });
  }
  return hook as unknown as Hook;
}

/**
 * Keys of a hook that no field reads, as dot paths ("trigger_rule", "trigger-rule.match.secrte"): the
 * reference ignores them silently, so a typo loses a rule. For -validate; loading ignores them too.
 */
export function unknownFields(raw: YamlValue): string[] {
  return unknownIn(raw, HOOK, "");
}

function unknownIn(raw: YamlValue, type: GoType, path: string): string[] {
  const out: string[] = [];
  if (type.kind === "slice" && Array.isArray(raw)) for (const [i, x] of raw.entries()) out.push(...unknownIn(x, type.elem, `${path}[${i}]`));
  if (type.kind !== "struct" || !(raw instanceof Map)) return out;
  for (const [key, x] of raw) {
    const name = fieldFor(type.fields, key);
    const at = path === "" ? key : `${path}.${key}`;
    if (name === undefined) out.push(at);
    else out.push(...unknownIn(x, type.fields[name]!, at));
  }
  return out;
}

/** The decoded text of a hooks file (rendered first with -template); throws HooksFileError naming the file. */
export function decodeHooksText(path: string, source: string, options: LoadOptions = {}): { text: string; data: YamlValue } {
  let text = source;
  if (options.template) {
    try {
      text = renderTemplate(source, path);
    } catch (e) {
      if (e instanceof TemplateError) throw new HooksFileError("WEBHOOK_HOOKS_TEMPLATE", { problem: e.message }, { cause: e });
      throw e;
    }
  }
  return { text, data: decode(path, text) };
}

function decode(path: string, text: string): YamlValue {
  try {
    return decodeYaml(text);
  } catch (e) {
    if (!(e instanceof YamlError)) throw e;
    const where = e.line === undefined ? "" : ` line ${e.line}, column ${e.col}:`;
    const kind = /^\s*[[{]/.test(text.replace(/^\uFEFF/, "")) && path.toLowerCase().endsWith(".json") ? "JSON" : "YAML";
    // The message never quotes the file: it may hold secrets.
    throw new HooksFileError("WEBHOOK_HOOKS_SYNTAX", { path, where, kind, reason: e.message.replace(/ in YAML stream: .*$/, "") }, { cause: e });
  }
}

export interface LoadOptions {
  /** -template: render the file as a Go text/template before parsing it. */
  template?: boolean;
}

/** A hooks file's text; throws HooksFileError when it cannot be read. */
export function readHooksFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new HooksFileError("WEBHOOK_HOOKS_UNREADABLE", { path, reason: err.code === "ENOENT" ? "no such file or directory" : err.message }, { cause: e });
  }
}

/** The hooks in a hooks file's text; throws HooksFileError naming the file and what is wrong. */
export function parseHooks(path: string, source: string, options: LoadOptions = {}): Hook[] {
  const { data } = decodeHooksText(path, source, options);
  if (data === null) return [];
  if (!Array.isArray(data)) throw new HooksFileError("WEBHOOK_HOOKS_NOT_A_LIST", { path, got: describe(data) });
  return data.map((raw, i) => {
    try {
      return toHook(raw, i);
    } catch (e) {
      if (!(e instanceof HooksFileError)) throw e;
      throw new HooksFileError("WEBHOOK_HOOKS_FILE_PROBLEM", { path, problem: e.message }, { cause: e });
    }
  });
}

/**
 * Strings from the hooks file that must never be logged: signing secrets, and the values of `value`
 * matches against a url parameter or a header other than an event-type header (where senders put
 * tokens); a match's `"redact": true` or `false` overrides that.
 */
export function secretsOf(hooks: Hook[]): string[] {
  const out: string[] = [];
  const walk = (r: Rule | undefined): void => {
    if (!r) return;
    r.and?.forEach(walk);
    r.or?.forEach(walk);
    walk(r.not);
    if (!r.match) return;
    if (r.match.type !== "value") out.push(...signatureSecrets(r.match));
    else if (r.match.redact ?? (tokenCarrier(r.match.parameter) || r.match["secret-file"] !== undefined)) out.push(...matchValues(r.match).filter(Boolean));
  };
  for (const h of hooks) walk(h["trigger-rule"]);
  for (const h of hooks) out.push(...notifySecrets(h));
  return out;
}

/** Whether a request value is where senders put tokens: a url parameter, or a header that does not name an event type. */
export function tokenCarrier(p: Argument | undefined): boolean {
  if (p?.source === "url" || p?.source === "query") return true;
  return p?.source === "header" && !/(^|-)event(-key)?$/i.test(p.name ?? "");
}
