// bin/framefi-device: parses flags, FRAMEFI_* variables and --config, then runs the device until SIGINT/SIGTERM.
import { readFileSync } from "node:fs";
import { ConfigError, helpText, parseCli, type DeviceConfig } from "./config.js";
import { ftpMode } from "./ftp-mode.js";
import { mqttPlugin } from "./mqtt-plugin.js";
import { DeviceService } from "./service.js";

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

/** Why the device could not start, in one line that says what to do. */
function startFailure(e: unknown, config: DeviceConfig): string {
  const err = e as NodeJS.ErrnoException & { address?: string; port?: number };
  const hostFlag = process.argv.includes("--host") || process.env.FRAMEFI_HOST === undefined ? "--host" : "FRAMEFI_HOST";
  if (err.code === "EADDRINUSE") {
    const flag = err.port === config.setupPort && err.port !== config.port ? "--setup-port" : "--port";
    return `port ${err.port} is already in use (is another framefi-device running?): stop that program or pick another port with ${flag}`;
  }
  if (err.code === "EACCES" && err.syscall === "listen") return `no permission to listen on port ${err.port}: use a port above 1023`;
  if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN") {
    return `cannot listen on "${config.host}" (${hostFlag}): it is not an address of this machine; use one of its addresses, or :: for all`;
  }
  if ((err.code === "EEXIST" || err.code === "ENOTDIR") && err.path?.startsWith(config.card)) {
    return `the card ${config.card} is not a folder (--card): give a folder; it is created if missing`;
  }
  if (err.code === "EACCES" || err.code === "EPERM") return `no permission to use ${err.path ?? "a file"}: check the folders given with --card and --state`;
  return `${err.message}`;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseCli(process.argv.slice(2), process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`framefi-device: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  if (parsed.action === "help") {
    process.stdout.write(helpText());
    return;
  }
  if (parsed.action === "version") {
    process.stdout.write(`framefi-device ${version()}\n`);
    return;
  }
  const config = parsed.config;
  const device: DeviceService = new DeviceService(config, {
    ftp: ftpMode,
    plugins: [(ctx) => mqttPlugin(ctx, () => device.restart())],
  });
  // The service never dies of one bad request: log what escaped and keep serving.
  process.on("uncaughtException", (e) => console.error(`framefi-device: unexpected error (still running): ${e.stack ?? e}`));
  process.on("unhandledRejection", (e) => console.error(`framefi-device: unexpected error (still running): ${(e as Error)?.stack ?? e}`));
  let stopping = false;
  const stop = (): void => {
    if (stopping) process.exit(1);
    stopping = true;
    void device.stop().then(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    await device.start();
  } catch (e) {
    process.stderr.write(`framefi-device: cannot start: ${startFailure(e, config)}.\n`);
    process.exit(1);
  }
}

await main();
