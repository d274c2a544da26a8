// `framefi`: the FrameFi device from the command line. Every endpoint of the web API, plus `sync` (mirror a photo
// folder to the card over FTP). Exit codes: 0 success, 1 the device reported an error (or some files failed),
// 2 usage error, 3 device unreachable, 4 authentication failed, 130 interrupted. Errors are one line on stderr, with
// the exit code of their row in ../errors.ts (describe.ts).
import { readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, posix, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DeviceHttpError, FrameFiClient, FrameFiError, MODE_FTP, ProtocolError, sync, type CollectionsStatus } from "../api/index.js";
import { EXIT } from "../errors.js";
import { resolveConnection, type Connection } from "./connection.js";
import { describe } from "./describe.js";
import { bytes, ledSummary, mqttSummary, statusSummary } from "./format.js";
import { SyncStopped } from "../sync/errors.js";
import { barEvents, lineEvents, planLine, quietEvents } from "../sync/progress.js";
import { batchedLines } from "../../shared/batched-lines.js";
import { askPassword, confirm, haveTerminal } from "./prompt.js";
import { switchMode } from "../sync/modes.js";
import type { PhotoReport, SyncResult } from "../sync/sync.js";
import { FRAME_KEYS, photoOptions, type PhotoOptions, type PhotoSettings } from "../photos/profile.js";
import { UsageError } from "./usage.js";
import { frameNames, readCollection, syncAll } from "./frames.js";
import { SECTION_NAME } from "./env-file.js";
import { parseMaxPerFolder, parseOrder, type LayoutOptions } from "../sync/layout.js";
import { surviveClosedOutput } from "../../shared/closed-output.js";
import { blankControls } from "../api/text.js";
import { checkFtpText } from "../ftp/remote.js";
import { isRemoteSource } from "../sources/source.js";
import type { DeleteLimit } from "../sync/plan.js";

/** `text` with the control characters of each of its lines blanked (see blankControls). */
function printable(text: string): string {
  return text.split("\n").map(blankControls).join("\n");
}

const USAGE = `Usage: framefi [options] <command> [arguments]

Commands:
  status                               the device's status: mode, display, card, MQTT, LED
  mode [msc|ftp]                       show the mode, or switch it (waits until the switch is done)
  display [on|off|toggle|status]       show or switch the display
  led [on|off|toggle|status]           show or switch the LED
  led brightness [0-255]               show or set the LED brightness
  mqtt [enable|disable|toggle|status]  show or switch the MQTT client
  restart                              restart the device
  wifi reset                           forget the Wi-Fi settings and restart into setup mode (asks first)
  upload FILE... [--to DIR]            upload files to the card (the device must be in FTP mode)
  sync [SOURCE]                        mirror SOURCE (default: LOCAL_DIR of ./.env) to the card over FTP:
                                       a folder, or webdav[s]://, sftp://, smb://[user@]host/path
  sync NAME                            sync the frame of the .env's [frame NAME] section
  sync --all                           sync every [frame NAME] at once, a summary line each
  collection use NAME [FRAME]          make the frame (a [frame NAME], else the device) show the
                                       collection NAME: switch the device to it when it has one
                                       (no copy), else sync the .env's [collection NAME] with --delete

Options:
  --host HOST            the device: host, host:port or URL (else FRAMEFI_DEVICE, else FTP_HOST of ./.env)
  -u, --user USER[:PW]   web login; without :PW, FRAMEFI_PASSWORD, else asked for on a terminal
                         (else FRAMEFI_USER and FRAMEFI_PASSWORD, else WEB_SERVER_USER/_PASSWORD of ./.env)
  --json                 print the device's JSON answer unchanged
  -y, --yes              do not ask for confirmation (wifi reset)
  --timeout SECONDS      wait at most this long for each answer, a sync's FTP replies and stalled transfers too (default 10)
  -h, --help             this help
  --version              the client's version

Sync options:
  --delete               delete what is on the card but not in SOURCE (asks first on a terminal,
                         unless --yes; never when SOURCE lists no file)
  --max-delete N|N%      delete at most this many of the card's files in one sync (default 50%)
  --force                delete beyond --max-delete
  --trash DAYS           move what --delete removes to .trash/ on the card, kept DAYS days
                         (deleted as before when less than a tenth of the card is free)
  --collection NAME      the device's collection this sync is for: on a device with collections,
                         a sync writes into the one its frame has only when it is NAME
  --dry-run              print what would be done, change nothing (compares over FTP only when
                         the device is in FTP mode already, or after asking on a terminal)
  --stay                 leave the device in FTP mode (default: back to USB MSC mode)
  --to DIR               the folder on the card (else REMOTE_DIR of ./.env, else /)
  --parallel N           FTP connections at once (default 4; the firmware serves 1)
  --follow-links         also upload what links leading outside DIR point to (default: skip them)
  --ftp-port PORT        the device's FTP port (else FRAMEFI_FTP_PORT, else the port the device
                         announces, else 21 as the firmware)
  --ftp-user USER[:PW]   FTP login (else FRAMEFI_FTP_USER/_PASSWORD, else FTP_USER/FTP_PASSWORD
                         of ./.env, else user:password as the firmware)

Photo options (sync; else the [frame] section of ./.env: FIT=1024x600, QUALITY=85, …):
  --fit WxH              convert photos for a WxH frame: upright, at most WxH, baseline JPEG "name.jpg"
  --fill WxH             the same, but exactly WxH: cover the frame and crop what is beyond
  --quality N            JPEG quality 1-100 (default 85)
  --format jpeg          the output format (jpeg, the one frames read)
  --others copy|skip     files that are not photos: sent as they are (default) or left out
  --date-from-mtime      give photos without an EXIF date taken their file's modification time
  --dedupe               send files with the same content once
  --max-files N          at most N files from DIR; the newest are kept (EXIF date taken, else mtime)
  --max-size SIZE        at most SIZE on the card in all (90%, 2GB, 500MiB); the newest are kept
  --cache DIR            converted photos are kept here (default $XDG_CACHE_HOME/framefi,
                         else ~/.cache/framefi)
  --background B         with --fit: exactly WxH, the rest a blur of the photo (blur), black or a
                         colour (#rrggbb)
  --crop smart           with --fill: crop around what draws the eye (default: the centre)
  --pair-portraits       two portrait photos taken within an hour, side by side on a landscape frame
  --caption WHAT         burn in the date taken, the place (GPS, IPTC/XMP city) or both: date,place
  --caption-format FMT   the date's format: %Y %m %d %e %B %b %H %M (default "%e %B %Y")
  --pixel-aspect 16:9|N  the panel is shown at 16:9 (or its pixels N times wider than tall):
                         pre-squeeze so circles stay round

Order options (sync; else ORDER= and MAX_PER_FOLDER= in the [frame] section of ./.env):
  --order name|date|shuffle[:SEED]
                         name files "00042000-name" so that name order is this order; a file
                         keeps its prefix across syncs (use with --delete); another SEED reshuffles
  --max-per-folder N     spread a folder of more than N files into subfolders 001, 002, …

Exit codes: 0 success, 1 the device reported an error or some files failed, 2 usage error,
3 device unreachable, 4 authentication failed, 130 interrupted.
`;

const OPTIONS = {
  host: { type: "string" },
  user: { type: "string", short: "u" },
  json: { type: "boolean" },
  yes: { type: "boolean", short: "y" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  to: { type: "string" },
  delete: { type: "boolean" },
  "dry-run": { type: "boolean" },
  "max-delete": { type: "string" },
  force: { type: "boolean" },
  trash: { type: "string" },
  "follow-links": { type: "boolean" },
  stay: { type: "boolean" },
  parallel: { type: "string" },
  "ftp-port": { type: "string" },
  "ftp-user": { type: "string" },
  fit: { type: "string" },
  fill: { type: "string" },
  quality: { type: "string" },
  format: { type: "string" },
  others: { type: "string" },
  "date-from-mtime": { type: "boolean" },
  dedupe: { type: "boolean" },
  "max-files": { type: "string" },
  "max-size": { type: "string" },
  cache: { type: "string" },
  background: { type: "string" },
  crop: { type: "string" },
  "pair-portraits": { type: "boolean" },
  caption: { type: "string" },
  "caption-format": { type: "string" },
  "pixel-aspect": { type: "string" },
  all: { type: "boolean" },
  order: { type: "string" },
  "max-per-folder": { type: "string" },
  collection: { type: "string" },
} as const;

type Flags = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "string" ? string : boolean;
};

/** Each photo setting's command-line option. */
const PHOTO_FLAG: Record<keyof PhotoSettings, keyof Flags> = {
  fit: "fit",
  fill: "fill",
  quality: "quality",
  format: "format",
  others: "others",
  dedupe: "dedupe",
  maxSize: "max-size",
  maxFiles: "max-files",
  dateFromMtime: "date-from-mtime",
  cache: "cache",
  background: "background",
  crop: "crop",
  pairPortraits: "pair-portraits",
  caption: "caption",
  captionFormat: "caption-format",
  pixelAspect: "pixel-aspect",
};
const PHOTO_FLAGS = Object.values(PHOTO_FLAG);

/** The options of a sync, also those of `collection use` (which is a sync with --delete, beyond --max-delete). */
const SYNC_OPTIONS: readonly (keyof Flags)[] = [
  "to",
  "trash",
  "yes",
  "dry-run",
  "stay",
  "parallel",
  "ftp-port",
  "ftp-user",
  "follow-links",
  "order",
  "max-per-folder",
  ...PHOTO_FLAGS,
];

/** Options that belong to one command only. */
const COMMAND_OPTIONS: Record<string, readonly (keyof Flags)[]> = {
  upload: ["to"],
  collection: SYNC_OPTIONS,
  sync: [...SYNC_OPTIONS, "delete", "max-delete", "force", "all", "collection"],
  wifi: ["yes"],
};

interface Context {
  flags: Flags;
  args: string[];
  client: FrameFiClient;
  conn: Connection;
  out: (line: string) => void;
  err: (line: string) => void;
  /** `collection use`: only the photos of these dates, and tagged with one of these keywords. */
  range?: LayoutOptions["range"];
  /** `collection use`: the .env's set it syncs (on a device without that collection). */
  set?: string;
  keywords?: LayoutOptions["keywords"];
}

function parse(argv: string[]): { flags: Flags; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    return { flags: values as Flags, positionals };
  } catch (e) {
    const m = /'(-[^']*)'/.exec((e as Error).message);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new UsageError("FRAMEFI_UNKNOWN_OPTION", { option: m?.[1] ?? "" });
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") throw new UsageError("FRAMEFI_OPTION_NEEDS_VALUE", { option: m?.[1] ?? "" });
    throw new UsageError("FRAMEFI_BAD_ARGUMENTS", { problem: (e as Error).message.split("\n")[0]! });
  }
}

function expectArgs(ctx: Context, command: string, max: number): void {
  if (ctx.args.length > max) throw new UsageError("FRAMEFI_TOO_MANY_ARGUMENTS", { command, extra: ctx.args.slice(max).join(" ") });
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], command: string): T | undefined {
  if (value === undefined) return undefined;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError("FRAMEFI_UNKNOWN_ACTION", { command, value, allowed: allowed.join(", ") });
}

/** Prints the device's answer of `result` as it was sent (--json), or what `human` makes of it. */
function show<T extends object>(ctx: Context, result: T, human: (result: T) => string): void {
  ctx.out(ctx.flags.json ? ctx.client.answerOf(result).trimEnd() : human(result));
}

const message = (r: { message: string }): string => r.message;

const commands: Record<string, (ctx: Context) => Promise<number>> = {
  async status(ctx) {
    expectArgs(ctx, "status", 0);
    show(ctx, await ctx.client.status(), statusSummary);
    return EXIT.ok;
  },

  async mode(ctx) {
    expectArgs(ctx, "mode", 1);
    const to = oneOf(ctx.args[0], ["msc", "ftp"] as const, "mode");
    if (!to) {
      show(ctx, await ctx.client.mode(), (r) => r.mode);
      return EXIT.ok;
    }
    const r = await ctx.client.setMode(to);
    if (r.status === "success") await switchMode(ctx.client, to, 15_000);
    show(ctx, r, message);
    return EXIT.ok;
  },

  async display(ctx) {
    expectArgs(ctx, "display", 1);
    const action = oneOf(ctx.args[0], ["on", "off", "toggle", "status"] as const, "display") ?? "status";
    if (action === "status") show(ctx, await ctx.client.displayStatus(), (r) => `Display ${r.display_status}`);
    else show(ctx, await ctx.client.display(action), message);
    return EXIT.ok;
  },

  async led(ctx) {
    if (ctx.args[0] === "brightness") {
      expectArgs(ctx, "led brightness", 2);
      const value = ctx.args[1];
      if (value === undefined) {
        show(ctx, await ctx.client.brightness(), (r) => `LED brightness ${r.brightness}`);
        return EXIT.ok;
      }
      if (!/^\d+$/.test(value) || Number(value) > 255) throw new UsageError("FRAMEFI_BAD_LED_BRIGHTNESS", { value });
      show(ctx, await ctx.client.setBrightness(Number(value)), message);
      return EXIT.ok;
    }
    expectArgs(ctx, "led", 1);
    const action = oneOf(ctx.args[0], ["on", "off", "toggle", "status"] as const, "led") ?? "status";
    if (action === "status") show(ctx, await ctx.client.ledStatus(), ledSummary);
    else show(ctx, await ctx.client.led(action), message);
    return EXIT.ok;
  },

  async mqtt(ctx) {
    expectArgs(ctx, "mqtt", 1);
    const action = oneOf(ctx.args[0], ["enable", "disable", "toggle", "status"] as const, "mqtt") ?? "status";
    if (action === "status") show(ctx, await ctx.client.mqttStatus(), mqttSummary);
    else show(ctx, await ctx.client.mqtt(action), message);
    return EXIT.ok;
  },

  async restart(ctx) {
    expectArgs(ctx, "restart", 0);
    show(ctx, await ctx.client.restart(), message);
    return EXIT.ok;
  },

  async wifi(ctx) {
    if (ctx.args[0] !== "reset") throw new UsageError("FRAMEFI_WIFI_ACTION", {});
    expectArgs(ctx, "wifi reset", 1);
    if (!ctx.flags.yes) {
      if (!haveTerminal()) throw new UsageError("FRAMEFI_WIFI_NEEDS_CONFIRMATION", {});
      const ok = await confirm(
        `Reset the Wi-Fi settings of ${ctx.client.url}? It restarts into setup mode and leaves your network; you then reach it only through its own access point.`,
      );
      if (!ok) {
        ctx.err("Nothing done.");
        return EXIT.ok;
      }
    }
    show(ctx, await ctx.client.wifiReset(), message);
    return EXIT.ok;
  },

  async upload(ctx) {
    if (ctx.args.length === 0) throw new UsageError("FRAMEFI_UPLOAD_NEEDS_FILE", {});
    for (const file of ctx.args) {
      const st = await stat(file).catch(() => undefined);
      if (!st) throw new UsageError("FRAMEFI_UPLOAD_NO_FILE", { file });
      if (!st.isFile()) throw new UsageError("FRAMEFI_UPLOAD_NOT_A_FILE", { file });
    }
    const folder = (ctx.flags.to ?? "").replace(/\\/g, "/").replace(/^\/+|\/+$/g, "");
    let failed = 0;
    for (const file of ctx.args) {
      const name = folder ? posix.join(folder, basename(file)) : basename(file);
      try {
        const r = await ctx.client.upload(file, name);
        const size = (await stat(file)).size;
        show(ctx, r, (r) => `${r.message.replace(/\.$/, "")}: ${file} → /${name} (${bytes(size)})`);
      } catch (e) {
        const told = describe(e);
        // Unreachable or refused (exit 3 or 4): every other file would fail the same way.
        if (!(e instanceof DeviceHttpError) || told.exit !== EXIT.deviceError) throw e;
        failed++;
        if (ctx.flags.json) ctx.out(e.body.trimEnd());
        ctx.err(`framefi: ${file}: ${told.line}`);
      }
    }
    return failed > 0 ? EXIT.deviceError : EXIT.ok;
  },

  async collection(ctx) {
    if (ctx.args[0] !== "use" || ctx.args[1] === undefined) throw new UsageError("FRAMEFI_COLLECTION_ACTION", {});
    expectArgs(ctx, "collection use", 3);
    const name = ctx.args[1];
    // A malformed [collection NAME] is a usage error before the device is asked; a missing one only if the device
    // has no collection of that name either.
    const set = await readCollection(name).catch((e: unknown) => e);
    if (set instanceof Error && !(set instanceof UsageError && set.code === "FRAMEFI_NO_SUCH_COLLECTION")) throw set;
    // A device that has the collection switches to it: its card swapped, no photo copied.
    if ((await deviceCollections(ctx.client))?.collections.includes(name)) {
      show(ctx, await ctx.client.useCollection(name), message);
      return EXIT.ok;
    }
    if (set instanceof Error) throw set;
    const { dir, range, keywords } = set as Awaited<ReturnType<typeof readCollection>>;
    // The frame shows the set and nothing else: what the set lacks leaves the card, beyond --max-delete too (a switch
    // replaces the set); an empty set still deletes nothing (plan.ts).
    return commands.sync!({ ...ctx, args: [dir], flags: { ...ctx.flags, delete: true, force: true }, range, keywords, set: name });
  },

  async sync(ctx) {
    expectArgs(ctx, "sync", 1);
    const dir = ctx.args[0] ?? ctx.conn.localDir;
    if (!dir) throw new UsageError("FRAMEFI_SYNC_NEEDS_FOLDER", {});
    const remoteSource = isRemoteSource(dir);
    const localDir = remoteSource ? dir : resolve(dir);
    if (!remoteSource && !(await stat(localDir).catch(() => undefined))?.isDirectory()) throw new UsageError("FRAMEFI_SYNC_NOT_A_FOLDER", { dir });
    const maxDelete = deleteLimit(ctx.flags["max-delete"]);
    const trash = ctx.flags.trash;
    const trashDays = trash === undefined ? undefined : /^\d{1,4}$/.test(trash) && Number(trash) >= 1 && Number(trash) <= 3650 ? Number(trash) : NaN;
    if (Number.isNaN(trashDays)) throw new UsageError("FRAMEFI_BAD_TRASH", { value: trash! });
    let parallel = 4;
    if (ctx.flags.parallel !== undefined) {
      parallel = /^\d+$/.test(ctx.flags.parallel) ? Number(ctx.flags.parallel) : NaN;
      if (!(parallel >= 1 && parallel <= 16)) throw new UsageError("FRAMEFI_BAD_CLI_PARALLEL", { value: ctx.flags.parallel });
    }
    const remoteDir = posix.join("/", (ctx.flags.to ?? ctx.conn.remoteDir).replace(/\\/g, "/"));
    // Before the dry run's question (sync() checks it again, as every FTP text).
    checkFtpText(ctx.flags.to === undefined ? "REMOTE_DIR" : "--to", remoteDir);
    const photos = syncPhotoOptions(ctx);
    await checkCollection(ctx);
    const dryRun = ctx.flags["dry-run"] === true;
    if (dryRun && (await ctx.client.mode()).mode !== MODE_FTP) {
      const why = "the device is in USB MSC mode, and comparing with the card needs FTP mode, which takes the card from the frame until the dry run ends";
      if (!haveTerminal()) throw new UsageError("FRAMEFI_DRY_RUN_NEEDS_FTP", { why });
      if (!(await confirm(`A dry run changes nothing, but ${why}. Switch to FTP mode for the comparison and back afterwards?`))) {
        ctx.err("Nothing done; the device stays in USB MSC mode.");
        return EXIT.ok;
      }
    }
    const quiet = ctx.flags.json || dryRun;
    const bar = !quiet && process.stderr.isTTY ? barEvents(process.stderr) : undefined;
    const events = quiet ? quietEvents(ctx.err) : (bar ?? lineEvents(ctx.out, ctx.err));

    const controller = new AbortController();
    let interrupts = 0;
    const onSignal = (): void => {
      if (++interrupts > 1) process.exit(EXIT.interrupted);
      ctx.err("Stopping: putting the device back in the mode it was in… (Ctrl-C again to quit at once)");
      controller.abort(new Error("Interrupted."));
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    let result: SyncResult;
    try {
      result = await sync(ctx.client, {
        ftp: ctx.conn.ftp,
        localDir,
        sourceSecrets: ctx.conn.source,
        // --cache alone (no photo options) still says where a share's copy goes.
        sourceCache: ctx.flags.cache ?? ctx.conn.frame.CACHE,
        remoteDir,
        delete: ctx.flags.delete === true,
        dryRun,
        stay: ctx.flags.stay === true,
        parallel,
        followLinks: ctx.flags["follow-links"] === true,
        signal: controller.signal,
        events,
        photos,
        maxDelete,
        force: ctx.flags.force === true,
        trashDays,
        confirmDeletes: haveTerminal() && !ctx.flags.yes && !dryRun ? (files) => confirmDeletes(ctx, files) : undefined,
        layout: syncLayout(ctx),
      });
    } catch (e) {
      // Ctrl-C before the sync began, while another one held the device.
      if (!controller.signal.aborted || e instanceof SyncStopped) throw e;
      throw new FrameFiError("FRAMEFI_SYNC_WAIT_INTERRUPTED", {}, { cause: e });
    } finally {
      bar?.stop();
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
    printSyncResult(ctx, result, dryRun);
    return result.failed.length > 0 ? EXIT.deviceError : EXIT.ok;
  },
};

/** The device's collections (GET /collections); undefined when it has none, or answers that with anything else. */
async function deviceCollections(client: FrameFiClient): Promise<CollectionsStatus | undefined> {
  let listed: CollectionsStatus | undefined;
  try {
    listed = await client.collections();
  } catch (e) {
    // An older device, the firmware or another server: no collections. Unreachable or refused: said as such.
    if (e instanceof ProtocolError || (e instanceof DeviceHttpError && e.status !== 401 && e.status !== 403)) return undefined;
    throw e;
  }
  const names = listed?.collections;
  const current = listed?.current;
  if (!Array.isArray(names) || !names.every((n) => typeof n === "string") || !(current === null || typeof current === "string")) return undefined;
  return listed;
}

/**
 * A device with collections takes a sync into the collection its frame has: only when that is the one the sync
 * means (--collection NAME, or the set of `collection use`), so a sync never replaces another set's photos unasked.
 */
async function checkCollection(ctx: Context): Promise<void> {
  const meant = ctx.flags.collection;
  if (meant !== undefined && !SECTION_NAME.test(meant)) throw new UsageError("FRAMEFI_BAD_COLLECTION_NAME", { value: meant });
  const device = await deviceCollections(ctx.client);
  const current = device?.current ?? null;
  if (ctx.set !== undefined) {
    if (device && current !== null) {
      throw new UsageError("FRAMEFI_COLLECTION_NOT_ON_DEVICE", { name: ctx.set, known: device.collections.join(", ") || "none", current });
    }
    return;
  }
  if (current === meant || (meant === undefined && current === null)) return;
  if (meant === undefined) throw new UsageError("FRAMEFI_SYNC_INTO_COLLECTION", { current: current! });
  const shown = current !== null ? `the collection ${current}` : device ? "no collection" : "no collection (the device has none)";
  throw new UsageError("FRAMEFI_SYNC_NOT_THAT_COLLECTION", { meant, shown });
}

/** --max-delete: "50%" or a number of files; undefined: the default. */
function deleteLimit(text: string | undefined): DeleteLimit | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d{1,9})(%?)$/.exec(text.trim());
  if (!m || (m[2] === "%" && Number(m[1]) > 100)) throw new UsageError("FRAMEFI_BAD_MAX_DELETE", { value: text });
  return m[2] === "%" ? { share: Number(m[1]) / 100 } : { files: Number(m[1]) };
}

/** On a terminal: the files --delete would remove, then the question. */
async function confirmDeletes(ctx: Context, files: string[]): Promise<boolean> {
  const shown = files.slice(0, 20);
  for (const rel of shown) ctx.err(`  would delete ${printable(rel)}`);
  if (files.length > shown.length) ctx.err(`  … and ${files.length - shown.length} more`);
  return confirm(`Delete ${files.length} file${files.length === 1 ? "" : "s"} from the card?`);
}

/** --order and --max-per-folder, else ORDER and MAX_PER_FOLDER of the .env's [frame] section. */
function syncLayout(ctx: Context): LayoutOptions | undefined {
  const pick = (flag: "order" | "max-per-folder", key: string): [string, string] | undefined =>
    ctx.flags[flag] !== undefined
      ? [ctx.flags[flag], `--${flag}`]
      : ctx.conn.layout[key] !== undefined
        ? [ctx.conn.layout[key], `${key} in the .env's [frame] section`]
        : undefined;
  const order = pick("order", "ORDER");
  const max = pick("max-per-folder", "MAX_PER_FOLDER");
  if (!order && !max && !ctx.range && !ctx.keywords) return undefined;
  return { order: order && parseOrder(...order), maxPerFolder: max && parseMaxPerFolder(...max), range: ctx.range, keywords: ctx.keywords };
}

/** The photo options of the command line over the .env's [frame] section; undefined when none is given. */
function syncPhotoOptions(ctx: Context): PhotoOptions | undefined {
  const fromFile: PhotoSettings = {};
  const fileKey = new Map<keyof PhotoSettings, string>();
  for (const [key, value] of Object.entries(ctx.conn.frame)) {
    // The .env's reader took known keys only.
    const setting = FRAME_KEYS[key]!;
    fromFile[setting] = value;
    fileKey.set(setting, key);
  }
  const given: PhotoSettings = {};
  const fromFlags = new Set<keyof PhotoSettings>();
  for (const [setting, flag] of Object.entries(PHOTO_FLAG) as [keyof PhotoSettings, keyof Flags][]) {
    const value = ctx.flags[flag];
    if (value !== undefined) {
      given[setting] = value as string & boolean;
      fromFlags.add(setting);
    }
  }
  // A size on the command line replaces the file's, whichever of fit and fill each gives.
  const sizeFromFlags = fromFlags.has("fit") || fromFlags.has("fill");
  const merged: PhotoSettings = { ...fromFile, ...(sizeFromFlags ? { fit: undefined, fill: undefined } : {}), ...given };
  if (Object.values(merged).every((v) => v === undefined || v === false)) return undefined;
  const nameOf = (key: keyof PhotoSettings): string =>
    fromFlags.has(key) || !fileKey.has(key) ? `--${PHOTO_FLAG[key]}` : `${fileKey.get(key)} in the .env's [frame] section`;
  const options = photoOptions(merged, nameOf, process.env, homedir());
  return options.profile || options.dedupe || options.limit.maxBytes || options.limit.maxFiles ? options : undefined;
}

function photoJson(p: PhotoReport): object {
  return {
    converted: p.converted,
    from_cache: p.fromCache,
    convert_seconds: Number((p.convertMs / 1000).toFixed(2)),
    source_bytes: p.sourceBytes,
    output_bytes: p.outputBytes,
    duplicates: p.duplicates.map((d) => ({ path: d.rel, same_as: d.sameAs })),
    skipped: p.skipped.map((d) => ({ path: d.rel, message: d.reason })),
    left_out: p.leftOut.map((d) => d.rel),
  };
}

/** What a sync with photo options says besides the mirror. */
function photoLines(p: PhotoReport): string[] {
  const mb = (n: number): string => (n / 1e6).toFixed(1);
  const seconds = p.convertMs / 1000;
  const lines: string[] = [];
  for (const d of p.duplicates) lines.push(`skipped ${d.rel}: the same content as ${d.sameAs}`);
  for (const d of p.skipped) lines.push(`skipped ${d.rel}: ${d.reason}`);
  for (const d of p.leftOut) lines.push(`left out ${d.rel} (${bytes(d.size)}, ${new Date(d.dateMs).toISOString().slice(0, 10)}): it does not fit the limit`);
  if (p.converted > 0 || p.fromCache > 0) {
    const rate =
      p.converted > 0 && seconds > 0
        ? ` in ${seconds.toFixed(1)} s (${(p.converted / seconds).toFixed(1)} photos/s, ${mb(p.sourceBytes / seconds)} MB/s read)`
        : "";
    const sizes = p.converted > 0 ? ` (${bytes(p.sourceBytes)} → ${bytes(p.outputBytes)})` : "";
    lines.push(`Photos: ${p.converted} converted${sizes}${rate}, ${p.fromCache} from the cache.`);
  }
  if (p.duplicates.length > 0) lines.push(`${p.duplicates.length} duplicate${p.duplicates.length === 1 ? "" : "s"} skipped.`);
  if (p.leftOut.length > 0)
    lines.push(`${p.leftOut.length} file${p.leftOut.length === 1 ? "" : "s"} left out to stay within the limit (listed above); the newest are on the card.`);
  return lines;
}

function printSyncResult(ctx: Context, r: SyncResult, dryRun: boolean): void {
  const p = r.plan;
  if (ctx.flags.json) {
    ctx.out(
      JSON.stringify({
        status: r.failed.length > 0 ? "partial" : "success",
        dry_run: dryRun,
        uploaded: dryRun ? p.uploads.map((u) => u.rel) : r.uploaded,
        uploaded_bytes: dryRun ? p.uploads.reduce((n, u) => n + u.size, 0) : r.uploadedBytes,
        deleted: dryRun ? [...p.deleteFiles, ...p.deleteDirs] : r.deleted,
        created: dryRun ? p.mkdirs : r.created,
        unchanged: p.unchanged,
        failed: r.failed.map((f) => ({ path: f.rel, message: f.reason })),
        mode: r.finalMode,
        ...(r.photos ? { photos: photoJson(r.photos) } : {}),
      }),
    );
    return;
  }
  if (dryRun) {
    for (const rel of p.deleteFiles) ctx.out(`would delete ${rel}`);
    for (const rel of p.deleteDirs) ctx.out(`would delete folder ${rel}/`);
    for (const rel of p.mkdirs) ctx.out(`would create folder ${rel}/`);
    for (const u of p.uploads) ctx.out(`would upload ${u.rel} (${bytes(u.size)}, ${u.why})`);
    if (r.photos) for (const line of photoLines(r.photos)) ctx.out(line);
    ctx.out(`${planLine(p)} Nothing was changed; the device is in ${r.finalMode} mode.`);
    return;
  }
  if (r.photos) for (const line of photoLines(r.photos)) ctx.out(line);
  const failed = r.failed.length > 0 ? `, ${r.failed.length} failed` : "";
  ctx.out(
    `Sync done: ${r.uploaded} uploaded (${bytes(r.uploadedBytes)}), ${r.deleted} deleted, ${r.created} folder${r.created === 1 ? "" : "s"} created, ${p.unchanged} unchanged${failed}. The device is in ${r.finalMode} mode.`,
  );
  if (r.failed.length > 0)
    ctx.err(`framefi: ${r.failed.length} item${r.failed.length === 1 ? "" : "s"} failed (listed above); fix them and run the same command again.`);
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

export async function main(argv: string[]): Promise<number> {
  // A sync prints a line per file: batched, so that a pipe's reader is not woken a thousand times.
  const lines = batchedLines(process.stdout);
  // Much of what is printed came from the device (names, modes, messages): a line of it must not steer the terminal.
  const out = (text: string): void => lines(printable(text));
  const err = (line: string): void => {
    lines.flush();
    process.stderr.write(printable(line) + "\n");
  };
  let json = false;
  let conn: Connection | undefined;
  try {
    const { flags, positionals } = parse(argv);
    json = flags.json === true;
    if (flags.help) {
      out(USAGE);
      return EXIT.ok;
    }
    if (flags.version) {
      out(`framefi ${version()}`);
      return EXIT.ok;
    }
    const [command, ...args] = positionals;
    if (!command) throw new UsageError("FRAMEFI_NO_COMMAND", {});
    const run = Object.hasOwn(commands, command) ? commands[command] : undefined;
    if (!run) throw new UsageError("FRAMEFI_UNKNOWN_COMMAND", { command });
    for (const name of new Set(Object.values(COMMAND_OPTIONS).flat())) {
      if (flags[name] !== undefined && !(COMMAND_OPTIONS[command] ?? []).includes(name)) {
        throw new UsageError("FRAMEFI_OPTION_NOT_FOR_COMMAND", { option: name, command });
      }
    }
    let timeoutMs = 10_000;
    if (flags.timeout !== undefined) {
      const s = Number(flags.timeout);
      if (!(s > 0 && s <= 3600)) throw new UsageError("FRAMEFI_BAD_TIMEOUT", { value: flags.timeout });
      timeoutMs = s * 1000;
    }

    if (command === "sync" && flags.all) {
      if (args.length > 0) throw new UsageError("FRAMEFI_ALL_WITH_FOLDER", {});
      return await syncAll(argv, out, err);
    }
    // `sync NAME`: a [frame NAME] of the .env (it wins over a folder of that name; ./NAME reaches the folder).
    const frames = command === "sync" || command === "collection" ? await frameNames() : [];
    const frame = command === "sync" && args.length === 1 && frames.includes(args[0]!) ? args.shift() : command === "collection" ? args[2] : undefined;
    if (frame !== undefined && !frames.includes(frame)) throw new UsageError("FRAMEFI_NO_SUCH_FRAME", { name: frame, known: frames.join(", ") || "none" });
    if (command === "collection" && frame !== undefined) args.pop();
    conn = await resolveConnection(
      { host: flags.host, user: flags.user, ftpUser: flags["ftp-user"], ftpPort: flags["ftp-port"] },
      process.env,
      process.cwd(),
      frame,
    );
    if (conn.web && conn.web.password === undefined) {
      if (!haveTerminal()) {
        throw new UsageError("FRAMEFI_NO_PASSWORD", { user: conn.web.user });
      }
      conn.web.password = await askPassword(`Enter host password for user '${conn.web.user}':`);
    }
    const found = conn;
    const client = new FrameFiClient({
      host: conn.host,
      user: conn.web?.user,
      password: conn.web?.password,
      timeoutMs,
    });
    return await run({ flags, args, client, conn: found, out, err });
  } catch (e) {
    const told = describe(e, conn);
    if (json && told.answer !== undefined) out(told.answer);
    err(`framefi: ${told.line}`);
    return told.exit;
  }
}

/**
 * Runs `framefi` as the program (bin/framefi calls it; importing this module does nothing): installs the process's
 * handlers, runs the command line and exits with its code.
 */
export function runProgram(): void {
  surviveClosedOutput();
  process.on("uncaughtException", (e) => {
    process.stderr.write(printable(`framefi: unexpected error: ${e.message}. Please report it.`) + "\n");
    process.exit(EXIT.deviceError);
  });
  // Exits at once when done: everything is awaited by then, and stdout and stderr are written synchronously on
  // Linux. Left to drain, Node 20's exit cleanup sometimes spun at 100% CPU forever with only the terminal's
  // stdout and stderr handles left (seen after syncs on a pseudo-terminal; test/client/sync.test.ts).
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
