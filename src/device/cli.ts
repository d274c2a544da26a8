// bin/framefi-device: parses flags, FRAMEFI_* variables and --config, then runs the device until SIGINT/SIGTERM.
import { ConfigError, helpText, parseCli, type DeviceConfig } from "./config.js";
import { GadgetError } from "./gadget/system.js";
import { GadgetUsb } from "./gadget/usb.js";
import { ftpMode } from "./ftp-mode.js";
import { mqttPlugin } from "./mqtt-plugin.js";
import { simulatedHardware } from "./hardware.js";
import { DeviceService, urlOf } from "./service.js";

/** --usb-gadget: the real USB drive, ready before the service starts (or a one-line reason and exit 1). */
async function prepareGadget(config: DeviceConfig): Promise<GadgetUsb> {
  const log = (m: string): void => console.log(`framefi-device: ${m}`);
  const gadget = new GadgetUsb({ image: config.usbGadget!.image, createBytes: config.cardSize, mountPoint: config.card, udc: config.usbGadget!.udc, log });
  try {
    await gadget.prepare();
  } catch (e) {
    if (!(e instanceof GadgetError)) throw e;
    process.stderr.write(`framefi-device: ${e.message}\n`);
    process.exit(1);
  }
  return gadget;
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
  if (parsed.help) {
    process.stdout.write(helpText());
    return;
  }
  const config = parsed.config;
  const gadget = config.usbGadget ? await prepareGadget(config) : undefined;
  const device: DeviceService = new DeviceService(gadget ? { ...config, cardSize: undefined } : config, {
    ...(gadget ? { hardware: { ...simulatedHardware(urlOf(config.host, config.port), urlOf(config.setupHost, config.setupPort)), usb: gadget } } : {}),
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
    void device
      .stop()
      .then(() => gadget?.close())
      .then(
        () => process.exit(0),
        (e: Error) => {
          process.stderr.write(`framefi-device: ${e.message}\n`);
          process.exit(1);
        },
      );
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
