// `webhook`: parse the flags, load the hooks files, serve. Start-up messages and exit codes
// follow the reference; a hooks file that cannot be loaded stops the start unless -nopanic.
import { readFileSync } from "node:fs";
import type { Hook } from "./hook.js";
import { ConfigError, loadHooksFile, secretsOf } from "./config.js";
import { FlagError, parseFlags, usage, type Options } from "./flags.js";
import { HookServer } from "./handler.js";
import { Log, prefix } from "./log.js";
import { createHookHttpServer, listen } from "./server.js";

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

function parseArgs(): Options {
  try {
    return parseFlags(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    process.stderr.write((e.message ? e.message + "\n" : "") + usage());
    process.exit(e.exitCode);
  }
}

function loadHooks(opts: Options, log: Log): Map<string, Hook> {
  const hooks = new Map<string, Hook>();
  let failed = false;
  for (const file of opts.hooks) {
    log.print(`attempting to load hooks from ${file}`);
    let loaded: Hook[];
    try {
      loaded = loadHooksFile(file);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      log.always(`couldn't load hooks from file! ${e.message}`);
      failed = true;
      continue;
    }
    log.print(`found ${loaded.length} hook(s) in file`);
    for (const hook of loaded) {
      if (hooks.has(hook.id)) {
        log.always(
          `error: hook with the id ${hook.id} has already been loaded!\nplease check your hooks file for duplicate hooks ids! (the second one is in ${file})`,
        );
        process.exit(1);
      }
      hooks.set(hook.id, hook);
      log.print(`\tloaded: ${hook.id}`);
    }
  }
  if (failed && !opts.nopanic) {
    log.always("aborting: fix the hooks file named above, or start with -nopanic to serve without it");
    process.exit(1);
  }
  if (!opts.verbose && !opts.nopanic && hooks.size === 0) {
    process.stdout.write(
      prefix() +
        "couldn't load any hooks from file!\naborting webhook execution since the -verbose flag is set to false.\nIf, for some reason, you want webhook to start without the hooks, either use -verbose flag, or -nopanic\n",
    );
    process.exit(1);
  }
  return hooks;
}

async function main(): Promise<void> {
  // A closed log pipe must not take the server down.
  process.stderr.on("error", () => undefined);
  process.stdout.on("error", () => undefined);
  const opts = parseArgs();
  if (opts.version) {
    process.stdout.write(`webhook version ${version()}\n`);
    process.exit(0);
  }
  if (opts.debug) opts.verbose = true;
  if (opts.hooks.length === 0) opts.hooks.push("hooks.json");

  const log = new Log(opts.verbose);
  log.print(`version ${version()} starting`);
  const hooks = loadHooks(opts, log);
  log.setSecrets(secretsOf([...hooks.values()]));

  const app = new HookServer(
    hooks,
    {
      urlprefix: opts.urlprefix,
      httpMethods: opts.httpMethods.replace(/ /g, "").toUpperCase(),
      headers: opts.headers,
      maxMultipartMem: opts.maxMultipartMem,
      debug: opts.debug,
    },
    log,
  );
  const server = createHookHttpServer(app, { ip: opts.ip, port: opts.port, maxBody: opts.maxBody });
  try {
    await listen(server, opts.ip, opts.port);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const reason = err.code === "EADDRINUSE" ? "bind: address already in use" : err.code === "EACCES" ? "bind: permission denied" : err.message;
    log.always(`error listening on port: listen tcp ${opts.ip}:${opts.port}: ${reason}`);
    process.exit(1);
  }
  const base = opts.urlprefix === "" ? "" : `/${opts.urlprefix}`;
  log.print(`serving hooks on http://${opts.ip}:${opts.port}${base}/{id}`);

  for (const [signal, name] of [
    ["SIGINT", "interrupt"],
    ["SIGTERM", "terminated"],
  ] as const) {
    process.once(signal, () => {
      log.print(`caught ${name} signal; exiting`);
      process.exit(0);
    });
  }
}

void main();
