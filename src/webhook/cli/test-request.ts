// -test-request FILE [-test-hook ID]: evaluate a saved request against the hooks files offline and
// say, per hook, whether it would run, why not (the failed node of its rule), and what its command
// would get. Runs nothing. Exit 0 when the hook under test would run, 1 when not, 2 when the
// request file cannot be read. Secrets of the hooks files are masked in what is printed.
import { secretsOf } from "../hooks/config.js";
import { readSmallFile } from "../../shared/small-file.js";
import type { HookSet } from "../hooks/hook-set.js";
import { HookRegistry } from "../hooks/registry.js";
import { Log } from "../log/log.js";
import { dryRun, type Verdict } from "../explain/dry-run.js";
import { parseSavedRequest, type SavedRequest } from "../explain/request-file.js";
import { decodeLatin1 } from "../go/bytes.js";
import { pathUnescape } from "../go/path.js";
import { EXIT, messageOf, WebhookError } from "../errors.js";
import type { Options } from "./flags.js";

/** A saved request is a request: no larger than -max-body and a generous head. */
const HEAD_ALLOWANCE = 1 << 20;

/** Reads the request file; throws WebhookError when it cannot be read or is not a request. */
export function readSavedRequest(path: string, maxBody: number): SavedRequest {
  let bytes: Buffer;
  try {
    bytes = readSmallFile(path, maxBody + HEAD_ALLOWANCE);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new WebhookError(
      "WEBHOOK_TEST_REQUEST_UNREADABLE",
      { path, reason: err.code === "ENOENT" ? "no such file or directory" : err.message },
      { cause: e },
    );
  }
  const parsed = parseSavedRequest(bytes);
  if ("problem" in parsed) throw new WebhookError("WEBHOOK_TEST_REQUEST_BAD", { path, reason: parsed.problem });
  return parsed;
}

/** The hook id the request's URL names, if it is under the prefix. */
function hookOfUrl(url: string, urlprefix: string): string | undefined {
  const q = url.indexOf("?");
  const raw = q === -1 ? url : url.slice(0, q);
  const path = raw.includes("%") ? pathUnescape(raw) : decodeLatin1(raw);
  const prefix = urlprefix === "" ? "/" : `/${urlprefix}/`;
  return path?.startsWith(prefix) ? path.slice(prefix.length) : undefined;
}

function show(v: Verdict, redact: (s: string) => string): string {
  if (!v.runs) return redact(`${v.hook}: would not run (answer ${v.status}): ${v.failed ?? ""}\n`);
  let out = `${v.hook}: would run (answer ${v.status})\n  command: ${v.command}\n  argv: ${JSON.stringify(v.argv)}\n`;
  for (const [name, value] of v.env ?? []) out += `  env ${name}=${JSON.stringify(value)}\n`;
  for (const [name, bytes] of v.files ?? []) out += `  file ${name}: a temporary file of ${bytes} bytes\n`;
  return redact(out);
}

/** Runs -test-request; returns the exit code. */
export async function testRequest(opts: Options): Promise<number> {
  // The server's own log lines (decoding problems, the rule's explanation) with -verbose, on stderr.
  const log = new Log(opts.verbose, (s) => void process.stderr.write(s), opts.logFormat);
  let req: SavedRequest;
  try {
    req = readSavedRequest(opts.testRequest, opts.maxBody);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return EXIT.usage;
  }
  let hooks: HookSet | undefined;
  // Secrets of the hooks files are masked in the log lines as the server masks them (a token in the URL).
  const registry = new HookRegistry(opts.hooks, { template: opts.template }, log, (set) => {
    hooks = set;
    log.setSecrets(secretsOf([...set.values()]));
  });
  let failed: string[];
  try {
    failed = registry.loadAll();
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return EXIT.usage;
  }
  if (failed.length > 0 || !hooks) return EXIT.usage;
  const all = [...hooks.values()].map((h) => h.id);
  const target = opts.testHook !== "" ? opts.testHook : hookOfUrl(req.url, opts.urlprefix);
  if (opts.testHook !== "" && !hooks.get(opts.testHook)) {
    process.stderr.write(`${messageOf("WEBHOOK_TEST_HOOK_UNKNOWN", { id: JSON.stringify(opts.testHook), ids: all.join(", ") })}\n`);
    return EXIT.usage;
  }
  const ids = opts.testHook !== "" ? [opts.testHook] : all;
  const verdicts = await dryRun(hooks, req, ids, opts, log);
  for (const v of verdicts) process.stdout.write(show(v, (s) => log.redact(s)));
  const mine = verdicts.find((v) => v.hook === target);
  if (!mine) {
    process.stdout.write(`${messageOf("WEBHOOK_TEST_HOOK_NONE", { url: JSON.stringify(req.url), prefix: opts.urlprefix })}\n`);
    return 1;
  }
  return mine.runs ? 0 : 1;
}
