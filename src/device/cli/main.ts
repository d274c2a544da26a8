// bin/framefi-device: parses flags, FRAMEFI_* variables and --config, then runs the device until SIGINT/SIGTERM.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { helpText, OptionError, parseCli, type DeviceConfig, type ParsedCli } from "./config.js";
import { DeviceError, EXIT } from "../errors.js";
import { GadgetError } from "../gadget/system.js";
import { GadgetUsb } from "../gadget/usb.js";
import { ftpMode } from "../ftp/mode.js";
import { deviceLog, type DeviceLog } from "../log.js";
import { mqttPlugin } from "../mqtt/plugin.js";
import { Puller, pullPlugin, pullTarget } from "../pull/puller.js";
import { simulatedHardware } from "../hardware.js";
import { DeviceService, urlOf, type DeviceContext } from "../service.js";
import { surviveClosedOutput } from "../../shared/closed-output.js";

/** --usb-gadget: the real USB drive, ready before the service starts (or a one-line reason and its row's exit code). */
async function prepareGadget(config: DeviceConfig, log: DeviceLog): Promise<GadgetUsb> {
  const gadget = new GadgetUsb({
    image: config.usbGadget!.image,
    createBytes: config.cardSize,
    mountPoint: config.card,
    udc: config.usbGadget!.udc,
    sort: config.usbGadget!.sort,
    collections: config.collections,
    collectionFile: join(config.state, "collection"),
    log,
  });
  try {
    await gadget.prepare();
  } catch (e) {
    if (!(e instanceof GadgetError)) throw e;
    log.flush();
    process.stderr.write(`framefi-device: ${e.message}\n`);
    process.exit(e.row.exit);
  }
  return gadget;
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

/** Why the device could not start: the system's error as a row of the errors table, or as it is. */
function startFailure(e: unknown, config: DeviceConfig): Error {
  const err = e as NodeJS.ErrnoException & { address?: string; port?: number };
  const cause = { cause: e };
  const hostFlag = process.argv.includes("--host") || process.env.FRAMEFI_HOST === undefined ? "--host" : "FRAMEFI_HOST";
  if (err.code === "EADDRINUSE") {
    const flag = err.port === config.setupPort && err.port !== config.port ? "--setup-port" : "--port";
    return new DeviceError("DEVICE_PORT_IN_USE", { port: String(err.port), flag }, cause);
  }
  if (err.code === "EACCES" && err.syscall === "listen") return new DeviceError("DEVICE_LISTEN_NOT_PERMITTED", { port: String(err.port) }, cause);
  if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN") {
    return new DeviceError("DEVICE_NOT_AN_ADDRESS", { host: config.host, flag: hostFlag }, cause);
  }
  if ((err.code === "EEXIST" || err.code === "ENOTDIR") && err.path?.startsWith(config.card)) {
    return new DeviceError("DEVICE_CARD_NOT_A_FOLDER", { card: config.card }, cause);
  }
  if (err.code === "EACCES" || err.code === "EPERM") return new DeviceError("DEVICE_NO_PERMISSION", { path: err.path ?? "a file" }, cause);
  return err;
}

async function main(): Promise<void> {
  let parsed: ParsedCli;
  try {
    parsed = parseCli(process.argv.slice(2), process.env);
  } catch (e) {
    if (e instanceof OptionError) {
      process.stderr.write(`framefi-device: ${e.message}\n`);
      process.exit(e.row.exit);
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
  const log = deviceLog();
  /** A last word on stderr, after the log lines still gathered. */
  const lastWord = (message: string): void => {
    log.flush();
    process.stderr.write(`framefi-device: ${message}\n`);
  };
  // After an uncaught exception Node cannot say what state the program is in, so going on is unsafe: say why and
  // exit non-zero, and a supervisor (systemd, a container runtime) starts a fresh device. A request's own errors
  // never get here: the API answers them with a 500. A rejection nobody handles arrives here too (Node's default).
  surviveClosedOutput();
  process.on("uncaughtException", (e: unknown, origin) => {
    const what = origin === "unhandledRejection" ? "unhandled promise rejection" : "unexpected error";
    lastWord(`${what}, exiting: ${(e as Error)?.stack ?? String(e)}`);
    process.exit(1);
  });
  const config = parsed.config;
  const gadget = config.usbGadget ? await prepareGadget(config, log) : undefined;
  const puller = config.pull ? new Puller(config.pull, log) : undefined;
  const device: DeviceService = new DeviceService(gadget ? { ...config, cardSize: undefined } : config, {
    log,
    ...(gadget ? { hardware: { ...simulatedHardware(urlOf(config.host, config.port), urlOf(config.setupHost, config.setupPort)), usb: gadget } } : {}),
    ftp: ftpMode,
    pull: puller,
    collections: gadget?.collections(),
    plugins: [
      (ctx) => mqttPlugin(ctx, () => device.restart(), {}, { puller }),
      ...(puller ? [(ctx: DeviceContext) => pullPlugin(puller, () => pullTarget(config, ctx.settings()))] : []),
    ],
    fatal: (e) => {
      lastWord(`${e.message}; exiting`);
      process.exit(1);
    },
  });
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
          lastWord(e.message);
          process.exit(1);
        },
      );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    await device.start();
  } catch (e) {
    lastWord(`cannot start: ${startFailure(e, config).message}.`);
    process.exit(EXIT.failed);
  }
}

// Every chunk a socket reads (an FTP upload's data) is a new buffer outside the JavaScript heap, freed only when the
// small object that holds it is collected. With V8's default the young generation grows, collections of it become
// rare, and those buffers pile up until a full mark-compact, about every 30 uploads of 200 KB. Kept at its initial
// size it is collected in cheap scavenges that free them: 0.3 ms less CPU per file in an FTP mirror.
setFlagsFromString("--semi-space-growth-factor=1");
// V8 counts those buffers, while they wait for a scavenge, with the old generation when it decides on a full
// mark-compact. After a few thousand uploads it had set that limit so close to the little that stays alive that they
// crossed it every 100 ms: 20 mark-compacts per 1 000 files, a quarter of the CPU an FTP mirror costs. Letting the old
// generation grow to 4x what stays alive (V8's own ceiling for large heaps) before the next one stops that.
setFlagsFromString("--heap-growing-percent=300");
await main();
