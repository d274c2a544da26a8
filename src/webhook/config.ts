// Loading hooks files: JSON or YAML, an array of hook definitions. Each file is checked before
// it is used: it must parse (errors name the file, line and column), every hook needs a string
// `id` and `execute-command`, and field types must be those of the reference's Go structs.
import { readFileSync } from "node:fs";
import { parseDocument } from "yaml";
import type { Argument, Hook, Rule } from "./hook.js";
import { parseGoDuration } from "./flags.js";
import { renderTemplate, TemplateError } from "./template.js";

export class ConfigError extends Error {}

function lineCol(text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const line = before.split("\n").length;
  const col = before.length - before.lastIndexOf("\n");
  return `line ${line}, column ${col}`;
}

function parseFile(path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (jsonError) {
    const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: false, version: "1.1", merge: true });
    if (doc.errors.length === 0) return doc.toJS({ maxAliasCount: 100 });
    const looksJson = /^\s*[[{]/.test(text) && path.toLowerCase().endsWith(".json");
    if (looksJson) {
      // V8 may quote part of the file in its message; the file can hold secrets, so drop the quote.
      const msg = (jsonError as Error).message.replace(/, ".*" is not valid JSON$/s, "");
      const pos = /position (\d+)/.exec(msg);
      const where = lineCol(text, pos ? Number(pos[1]) : text.length);
      throw new ConfigError(`${path}: ${where}: invalid JSON: ${msg}`);
    }
    const err = doc.errors[0]!;
    const lp = err.linePos?.[0];
    const where = lp ? `line ${lp.line}, column ${lp.col}` : lineCol(text, err.pos[0]);
    throw new ConfigError(`${path}: ${where}: invalid YAML: ${err.message.split("\n")[0]}`);
  }
}

type Check = (v: unknown) => boolean;
const isString: Check = (v) => typeof v === "string";
const isBool: Check = (v) => typeof v === "boolean";
const isInt: Check = (v) => typeof v === "number" && Number.isInteger(v);
const isCount: Check = (v) => isInt(v) && (v as number) >= 0;
const isDuration: Check = (v) => {
  if (!isString(v)) return false;
  try {
    parseGoDuration(v as string);
    return true;
  } catch {
    return false;
  }
};
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isArgList: Check = (v) => Array.isArray(v) && v.every(isArgument);

function isArgument(v: unknown): v is Argument {
  if (!isObj(v)) return false;
  const h = v["headers-to-add-to-signature-payload"];
  return (
    (v["source"] === undefined || isString(v["source"])) &&
    (v["name"] === undefined || isString(v["name"])) &&
    (v["envname"] === undefined || isString(v["envname"])) &&
    (v["base64decode"] === undefined || isBool(v["base64decode"])) &&
    (h === undefined || (Array.isArray(h) && h.every(isString)))
  );
}

const HOOK_FIELDS: Record<string, { check: Check; type: string }> = {
  id: { check: isString, type: "a string" },
  "execute-command": { check: isString, type: "a string" },
  "command-working-directory": { check: isString, type: "a string" },
  "response-message": { check: isString, type: "a string" },
  "response-headers": {
    check: (v) => Array.isArray(v) && v.every((h) => isObj(h) && isString(h["name"] ?? "") && isString(h["value"] ?? "")),
    type: "a list of {name, value} objects",
  },
  "include-command-output-in-response": { check: isBool, type: "true or false" },
  "include-command-output-in-response-on-error": { check: isBool, type: "true or false" },
  "stream-command-output": { check: isBool, type: "true or false" },
  "max-concurrency": { check: isCount, type: "a whole number, 0 or more (0 is no limit)" },
  "max-queue": { check: isCount, type: "a whole number, 0 or more" },
  "command-timeout": { check: isDuration, type: 'a duration such as "500ms", "30s" or "2m" (0 is none)' },
  "pass-environment-to-command": { check: isArgList, type: "a list of request values" },
  "pass-arguments-to-command": { check: isArgList, type: "a list of request values" },
  "pass-file-to-command": { check: isArgList, type: "a list of request values" },
  "parse-parameters-as-json": { check: isArgList, type: "a list of request values" },
  "trigger-rule": { check: (v) => isObj(v), type: "an object" },
  "trigger-rule-mismatch-http-response-code": { check: isInt, type: "an integer" },
  "trigger-signature-soft-failures": { check: isBool, type: "true or false" },
  "incoming-payload-content-type": { check: isString, type: "a string" },
  "success-http-response-code": { check: isInt, type: "an integer" },
  "http-methods": { check: (v) => v === null || (Array.isArray(v) && v.every(isString)), type: "a list of strings" },
};

function checkRule(rule: unknown, where: string): string | undefined {
  if (!isObj(rule)) return `${where} must be an object`;
  for (const key of ["and", "or"] as const) {
    const list = rule[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) return `${where}.${key} must be a list of rules`;
    for (let i = 0; i < list.length; i++) {
      const e = checkRule(list[i], `${where}.${key}[${i}]`);
      if (e) return e;
    }
  }
  if (rule["not"] !== undefined && rule["not"] !== null) {
    const e = checkRule(rule["not"], `${where}.not`);
    if (e) return e;
  }
  const m = rule["match"];
  if (m !== undefined && m !== null) {
    if (!isObj(m)) return `${where}.match must be an object`;
    for (const k of ["type", "regex", "secret", "value", "ip-range"]) {
      if (m[k] !== undefined && !isString(m[k])) return `${where}.match.${k} must be a string (quote numbers and booleans)`;
    }
    if (m["parameter"] !== undefined && !isArgument(m["parameter"])) return `${where}.match.parameter must be a request value`;
    if (m["redact"] !== undefined && typeof m["redact"] !== "boolean") return `${where}.match.redact must be true or false`;
  }
  return undefined;
}

function validateHook(raw: unknown, index: number): Hook {
  const label = `hook #${index + 1}`;
  if (!isObj(raw)) throw new ConfigError(`${label} must be an object`);
  const named = typeof raw["id"] === "string" ? `${label} (id ${JSON.stringify(raw["id"])})` : label;
  for (const [key, spec] of Object.entries(HOOK_FIELDS)) {
    const v = raw[key];
    if (v !== undefined && v !== null && !spec.check(v)) throw new ConfigError(`${named}: "${key}" must be ${spec.type}`);
  }
  if (typeof raw["id"] !== "string" || raw["id"] === "") throw new ConfigError(`${label} has no "id"; every hook needs one`);
  if (typeof raw["execute-command"] !== "string" || raw["execute-command"] === "") {
    throw new ConfigError(`${named} has no "execute-command"; every hook needs the command it runs`);
  }
  if (raw["trigger-rule"] !== undefined && raw["trigger-rule"] !== null) {
    const e = checkRule(raw["trigger-rule"], "trigger-rule");
    if (e) throw new ConfigError(`${named}: ${e}`);
  }
  // null means "absent" in the Go structs.
  for (const k of Object.keys(raw)) if (raw[k] === null) delete raw[k];
  return raw as unknown as Hook;
}

export interface LoadOptions {
  /** -template: render the file as a Go text/template before parsing it. */
  template?: boolean;
}

/** A hooks file's text; throws ConfigError when it cannot be read. */
export function readHooksFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new ConfigError(`${path}: cannot read the hooks file (${err.code === "ENOENT" ? "no such file or directory" : err.message})`);
  }
}

/** The hooks in a hooks file's text; throws ConfigError naming the file and what is wrong. */
export function parseHooks(path: string, source: string, options: LoadOptions = {}): Hook[] {
  let text = source;
  if (options.template) {
    try {
      text = renderTemplate(source, path);
    } catch (e) {
      if (e instanceof TemplateError) throw new ConfigError(e.message);
      throw e;
    }
  }
  const data = text.trim() === "" ? [] : parseFile(path, text);
  if (data === null) return [];
  if (!Array.isArray(data)) throw new ConfigError(`${path}: the hooks file must hold a list (array) of hooks`);
  return data.map((raw, i) => {
    try {
      return validateHook(raw, i);
    } catch (e) {
      throw new ConfigError(`${path}: ${(e as Error).message}`);
    }
  });
}

/** Reads one hooks file; throws ConfigError naming the file and what is wrong. */
export function loadHooksFile(path: string, options: LoadOptions = {}): Hook[] {
  // The reference treats an empty path as a file without hooks.
  if (path === "") return [];
  return parseHooks(path, readHooksFile(path), options);
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
    if (r.match?.secret) out.push(r.match.secret);
    if (r.match?.type === "value" && r.match.value && (r.match.redact ?? tokenCarrier(r.match.parameter))) out.push(r.match.value);
  };
  for (const h of hooks) walk(h["trigger-rule"]);
  return out;
}

/** Whether a request value is where senders put tokens: a url parameter, or a header that does not name an event type. */
function tokenCarrier(p: Argument | undefined): boolean {
  if (p?.source === "url" || p?.source === "query") return true;
  return p?.source === "header" && !/(^|-)event(-key)?$/i.test(p.name ?? "");
}
