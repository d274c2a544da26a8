// bin/framefi-device: parses flags, FRAMEFI_* variables and --config, then runs the device until SIGINT/SIGTERM.
import { ConfigError, helpText, parseCli } from "./config.js";
import { ftpMode } from "./ftp-mode.js";
import { mqttPlugin } from "./mqtt-plugin.js";
import { DeviceService } from "./service.js";

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
  if (parsed.help) {
    process.stdout.write(helpText());
    return;
  }
  const device: DeviceService = new DeviceService(parsed.config, {
    ftp: ftpMode,
    plugins: [(ctx) => mqttPlugin(ctx, () => device.restart())],
    fatal: (e) => {
      process.stderr.write(`framefi-device: ${e.message}; exiting\n`);
      process.exit(1);
    },
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
    const err = e as NodeJS.ErrnoException;
    const hint = err.code === "EADDRINUSE" ? " (the port is in use: pick another with --port)" : err.code === "EACCES" ? " (permission denied: check the folder or use a port above 1023)" : "";
    process.stderr.write(`framefi-device: cannot start: ${err.message}${hint}\n`);
    process.exit(1);
  }
}

await main();
