// `-template`: a hooks file is a Go text/template, rendered before it is parsed as JSON or YAML
// (adnanh/webhook's LoadFromFile with asTemplate). The engine lives in ./template/; this module
// is its interface and the functions webhook adds: getenv, cat and credential.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BUILTINS, type TemplateFunction } from "./builtins.js";
import { Executor } from "./exec.js";
import { Parser } from "./parse.js";
import { toGoValue } from "./value.js";

import { TemplateError } from "./error.js";

export { TemplateError };

/** A function a template can call: string arguments (as many as it declares), a string result. */
export type TemplateFunc = (...args: string[]) => string;

export interface RenderOptions {
  /** Environment for getenv and credential; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /** Extra functions, or replacements for built-in ones. */
  funcs?: Record<string, TemplateFunc>;
  /** The template's dot. The hook server leaves it unset, as the reference executes with nil. */
  data?: unknown;
}

/** A file's contents without one trailing newline, or undefined when it cannot be read. */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").replace(/\n$/, "");
  } catch {
    return undefined;
  }
}

/** getenv, cat and credential, as adnanh/webhook defines them. */
function hookFuncs(env: NodeJS.ProcessEnv = process.env): Record<string, TemplateFunc> {
  const getenv = (name: string): string => env[name] ?? "";
  return {
    getenv,
    // cat: "" when the file cannot be read.
    cat: (path: string): string => readText(path) ?? "",
    // systemd's LoadCredential: the file $CREDENTIALS_DIRECTORY/<name> ("" when it cannot be
    // read); the environment variable <name> only when CREDENTIALS_DIRECTORY is unset or empty.
    credential: (name: string): string => {
      const dir = getenv("CREDENTIALS_DIRECTORY");
      return dir === "" ? getenv(name) : (readText(join(dir, name)) ?? "");
    },
  };
}

function wrap(fn: TemplateFunc): TemplateFunction {
  return {
    params: Array.from({ length: fn.length }, () => "string" as const),
    variadic: null,
    builtin: false,
    call: (args) => fn(...(args as string[])),
  };
}

/**
 * Renders `text` as a Go text/template named `name` (used in error messages; the hook server
 * passes the hooks file's path). Throws TemplateError, with Go's message, when the template
 * cannot be parsed or executed, or uses a construct this engine does not support.
 */
export function renderTemplate(text: string, name: string, options: RenderOptions = {}): string {
  const funcs: Record<string, TemplateFunction> = { ...BUILTINS };
  for (const [fname, fn] of Object.entries({ ...hookFuncs(options.env), ...options.funcs })) {
    if (!/^[_\p{L}][_\p{L}\p{Nd}]*$/u.test(fname)) throw new TypeError(`function name ${JSON.stringify(fname)} is not a valid identifier`);
    funcs[fname] = wrap(fn);
  }
  const data = options.data === undefined ? undefined : toGoValue(options.data);
  try {
    const templates = new Parser(text, name, (f) => Object.hasOwn(funcs, f)).parse();
    return new Executor(text, name, templates, funcs, data).run();
  } catch (e) {
    // Pathological nesting (thousands of parentheses or blocks) exhausts the stack.
    if (e instanceof RangeError) throw new TemplateError(`template: ${name}: nested too deeply to parse or execute`, name, 0);
    throw e;
  }
}
