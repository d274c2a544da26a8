// -test-request: a saved request evaluated against hooks exactly as the server would (the same
// HookServer: method checks, decoding, parse-parameters-as-json, the rules), with a dispatch that
// runs nothing and writes no file: it keeps what the command would have got.
import { join } from "node:path";
import type { Dispatch, Dispatched, Trigger } from "../dispatch/dispatch.js";
import type { Hook } from "../hooks/hook.js";
import type { HttpResponse } from "../http/contract.js";
import { type HookSet, matches } from "../hooks/hook-set.js";
import { assembleCommand, commandLookupPath, lookPath } from "../run/command.js";
import type { Log } from "../log/log.js";
import { Metrics } from "../log/metrics.js";
import { Executions } from "../policy/executions.js";
import { HookServer } from "../server/hook-server.js";
import type { SavedRequest } from "./request-file.js";

export interface DryRunOptions {
  urlprefix: string;
  httpMethods: string;
  maxMultipartMem: number;
  maxBody: number;
}

/** What a hook would do with the request. */
export interface Verdict {
  hook: string;
  runs: boolean;
  /** The status the server would answer. */
  status: number;
  /** Why it would not run: the failed node, or the answer's own text. */
  failed?: string;
  /** The executable found, or why none is. */
  command?: string;
  argv?: string[];
  /** Environment names and values; a value a rule compares is "***". */
  env?: [string, string][];
  /** pass-file-to-command: the variable and how many bytes the file would hold. */
  files?: [string, number][];
}

/** Keeps the trigger instead of running it. */
class Capture implements Dispatch {
  trigger: Trigger | undefined;

  dispatch(t: Trigger): Dispatched {
    this.trigger = t;
    return { kind: "queued" };
  }

  serve(): Promise<void> {
    return Promise.resolve();
  }
}

/** Evaluates `req` against each hook of `ids` as if it had been sent to that hook's URL. */
export async function dryRun(hooks: HookSet, req: SavedRequest, ids: string[], opts: DryRunOptions, log: Log): Promise<Verdict[]> {
  const out: Verdict[] = [];
  const q = req.url.indexOf("?");
  const query = q === -1 ? "" : req.url.slice(q);
  for (const id of ids) {
    const capture = new Capture();
    const server = new HookServer(
      hooks,
      { ...opts, headers: [], debug: false, jobIds: false, explain: true, maxConcurrency: 0, maxQueue: 0, maxBackground: 0, commandTimeoutMs: 0 },
      log,
      { dispatch: capture, executions: new Executions(undefined, log), metrics: new Metrics(() => []) },
    );
    const prefix = opts.urlprefix === "" ? "" : `/${opts.urlprefix}`;
    const head = { ...req, url: `${prefix}/${encodeURIComponent(id).replace(/%2F/g, "/")}${query}` };
    const routed = server.route(head);
    let response: HttpResponse;
    if (routed.kind === "response") response = routed.response;
    else if (req.body.length > opts.maxBody) response = server.tooLarge(routed, opts.maxBody);
    else response = await server.handle(routed, req.body);
    const hook = hooks.get(id)!;
    if (capture.trigger) out.push({ hook: id, status: response.status, runs: true, ...wouldGet(hook, capture.trigger, log) });
    else out.push({ hook: id, status: response.status, runs: false, failed: failure(response.status, response.body) });
  }
  return out;
}

function failure(status: number, body: unknown): string {
  const text = typeof body === "string" ? body : Buffer.isBuffer(body) ? body.toString("utf8") : "";
  try {
    const explained = JSON.parse(text) as { failed?: unknown };
    if (typeof explained.failed === "string") return explained.failed;
  } catch {
    // The reference's plain answer: it says what happened.
  }
  return status === 405 ? "the hook does not take this method (http-methods)" : text || `answered ${status}`;
}

/** The command, argv, environment and files the trigger would give the hook's command. */
function wouldGet(hook: Hook, t: Trigger, log: Log): Pick<Verdict, "command" | "argv" | "env" | "files"> {
  const cwd = hook["command-working-directory"] || undefined;
  let command: string;
  try {
    command = lookPath(commandLookupPath(hook["execute-command"], cwd));
  } catch (e) {
    command = `not found (${(e as Error).message})`;
  }
  const files: [string, number][] = [];
  const made = assembleCommand(hook, t.req, cwd, log, t.fields, (dir, envName, data) => {
    files.push([envName, data.length]);
    return join(dir, `${envName}…`);
  });
  // A value the rules compare (a token in a header or the URL) is not shown.
  const compared = new Set([...matches(hook["trigger-rule"])].filter((m) => m.parameter).map((m) => `${m.parameter!.source}:${m.parameter!.name ?? ""}`));
  const masked = new Set(
    (hook["pass-environment-to-command"] ?? [])
      .filter((a) => compared.has(`${a.source}:${a.name ?? ""}`))
      .map((a) => (a.envname ? a.envname : `HOOK_${a.name ?? ""}`)),
  );
  const env = Object.entries(made.env).map(([k, v]): [string, string] => [k, masked.has(k) ? "***" : v]);
  return { command, argv: made.argv, env, files };
}
