// The library's sync: mirrors a local folder to the device's card over FTP, as `framefi sync` does (the CLI calls
// this). The FTP client and the photo pipeline load at the first call, so that importing the library stays cheap.
import { homedir } from "node:os";
import { FrameFiError } from "./index.js";
import type { FrameFiClient } from "./index.js";
import { SyncStopped } from "../sync/errors.js";
import type { SyncEvents, SyncResult } from "../sync/sync.js";
import type { PhotoOptions, PhotoSettings } from "../photos/profile.js";
import type { DeleteLimit } from "../sync/plan.js";
import type { SourceSecrets } from "../sources/source.js";
import type { LayoutOptions } from "../sync/layout.js";

/** The firmware's FTP port and login, used when none is given and the device announces no port. */
const FIRMWARE_FTP = { port: 21, user: "user", password: "password" };

export interface SyncFolderOptions {
  /** The local folder to mirror; or a share (webdav://, webdavs://, sftp://, smb://), fetched into a local mirror first. */
  localDir: string;
  /** A share's secrets (default: FRAMEFI_SOURCE_PASSWORD, FRAMEFI_SOURCE_KEY_FILE, FRAMEFI_SOURCE_KNOWN_HOSTS). */
  sourceSecrets?: SourceSecrets;
  /** Where a share's local copy goes (`<folder>/sources/<id>`) when no photo options say: --cache; default ~/.cache/framefi. */
  sourceCache?: string | undefined;
  /** The folder on the card; default "/". */
  remoteDir?: string;
  /** Delete what is on the card but not in the folder. */
  delete?: boolean;
  /** Compare and report, change nothing on the card (the device is in FTP mode for the comparison, then as before). */
  dryRun?: boolean;
  /** Leave the device in FTP mode at the end (default: back to USB MSC mode). */
  stay?: boolean;
  /** FTP connections at once, 1–16; default 4 (the firmware serves one). */
  parallel?: number;
  /** Also upload what links leading outside the folder point to (default: skip them). */
  followLinks?: boolean;
  /** The device's FTP server; default: the client's host, the port the device announces (else 21), user:password. */
  ftp?: { host?: string; port?: number | undefined; user?: string | undefined; password?: string | undefined };
  /** Aborting stops the sync and puts the device back in the mode it was in. */
  signal?: AbortSignal;
  /** Hears what the sync does, as it does it; every method is optional. */
  events?: Partial<SyncEvents>;
  /** Photos converted for the frame, a capacity limit or --dedupe: see framePhotos(). */
  photos?: PhotoOptions;
  /** The order a frame plays (files get sortable prefixes) and at most this many files a folder: see layout.ts. */
  layout?: LayoutOptions;
  /** How long to wait for a mode switch and for the FTP server; default 30 s. */
  waitMs?: number;
  /** The most `delete` removes in one sync without `force`: a share of the card's files or a number; default half. */
  maxDelete?: DeleteLimit;
  /** Delete beyond `maxDelete` (never when the source lists no file). */
  force?: boolean;
  /** Move what `delete` removes to .trash/ on the card and keep it this many days (when a tenth of the card is free). */
  trashDays?: number;
  /** Asked with the files `delete` would remove, before any is; false keeps them. */
  confirmDeletes?: (files: string[]) => Promise<boolean>;
}

/** A share's secrets from the environment. */
export function sourceSecretsFromEnv(env: NodeJS.ProcessEnv): SourceSecrets {
  return { password: env.FRAMEFI_SOURCE_PASSWORD, keyFile: env.FRAMEFI_SOURCE_KEY_FILE, knownHosts: env.FRAMEFI_SOURCE_KNOWN_HOSTS };
}

/**
 * The folder a sync reads: `localDir` itself, or, for a share, its mirror in the cache folder
 * (`<cache>/sources/<id>`), brought up to date first; a share that cannot be read throws before the device is touched.
 */
async function sourceFolder(options: SyncFolderOptions, signal: AbortSignal, step: (text: string) => void): Promise<string> {
  const [{ isRemoteSource, parseRemoteSource }, { fetchSource }, { cacheDir }, { createHash }, { join }] = await Promise.all([
    import("../sources/source.js"),
    import("../sources/rclone.js"),
    import("../photos/profile.js"),
    import("node:crypto"),
    import("node:path"),
  ]);
  if (!isRemoteSource(options.localDir)) return options.localDir;
  const source = parseRemoteSource(options.localDir, options.sourceSecrets ?? sourceSecretsFromEnv(process.env), homedir());
  const cache = options.photos?.cacheDir ?? cacheDir(options.sourceCache, process.env, homedir());
  const dest = join(cache, "sources", createHash("sha256").update(source.key).digest("hex").slice(0, 16));
  step(`Fetching ${source.display}…`);
  await fetchSource(source, dest, signal);
  return dest;
}

/** What framePhotos() takes: the `framefi sync` photo options, typed. */
export interface PhotoChoices {
  /** Convert photos for a frame of this size ("1024x600"): upright, at most that size, baseline JPEG. */
  fit?: string;
  /** The same, but exactly that size: cover the frame and crop what is beyond. */
  fill?: string;
  /** JPEG quality 1–100; default 85. */
  quality?: number;
  /** Files that are not photos: sent as they are (default) or left out. */
  others?: "copy" | "skip";
  /** Send files with the same content once. */
  dedupe?: boolean;
  /** At most this many files from the folder; the newest are kept. */
  maxFiles?: number;
  /** At most this much on the card in all ("90%", "2GB", "500MiB"); the newest are kept. */
  maxSize?: string;
  /** Give photos without an EXIF date taken their file's modification time. */
  dateFromMtime?: boolean;
  /** Where converted photos are kept; default $XDG_CACHE_HOME/framefi, else ~/.cache/framefi. */
  cache?: string;
  /** With fit: exactly the frame's size, the rest "blur" (of the photo), "black" or a colour ("#336699"). */
  background?: string;
  /** With fill: "smart" crops around what draws the eye (libvips' attention), "centre" (default) evenly. */
  crop?: "smart" | "centre";
  /** Two portrait photos taken within an hour side by side (a landscape frame). */
  pairPortraits?: boolean;
  /** Burn in "date", "place" or "date,place". */
  caption?: string;
  /** The caption's date format: %Y %m %d %e %B %b %H %M; default "%e %B %Y". */
  captionFormat?: string;
  /** The aspect the panel is shown at ("16:9") or its pixels' width over their height. */
  pixelAspect?: string;
}

/** Checks photo choices and makes them the `photos` option of sync(); a bad value throws, naming it. */
export async function framePhotos(choices: PhotoChoices): Promise<PhotoOptions> {
  const { photoOptions } = await import("../photos/profile.js");
  const text = (v: number | undefined): string | undefined => (v === undefined ? undefined : String(v));
  const settings: PhotoSettings = { ...choices, quality: text(choices.quality), maxFiles: text(choices.maxFiles) };
  return photoOptions(settings, (key) => `photos.${key}`, process.env, homedir());
}

/**
 * Mirrors `options.localDir` to the card: switches the device to FTP mode, uploads what is new or changed (and
 * deletes what is gone, with `delete`), then switches it back. One sync per device at a time on this machine: a
 * second waits for the first (`events.step` says so). Files that fail are in the result's `failed`; a sync that
 * cannot go on throws SyncStopped, with the device back in its mode.
 */
export async function sync(client: FrameFiClient, options: SyncFolderOptions): Promise<SyncResult> {
  const parallel = options.parallel ?? 4;
  if (!Number.isInteger(parallel) || parallel < 1 || parallel > 16) throw new FrameFiError("FRAMEFI_BAD_PARALLEL", { value: parallel });
  const ftp = options.ftp ?? {};
  if (ftp.port !== undefined && !(Number.isInteger(ftp.port) && ftp.port >= 1 && ftp.port <= 65535)) {
    throw new FrameFiError("FRAMEFI_BAD_FTP_PORT", { value: ftp.port });
  }
  const [{ sync: mirror }, { lockDevice }, { NO_EVENTS }, { checkFtpText }] = await Promise.all([
    import("../sync/sync.js"),
    import("../sync/lock.js"),
    import("../sync/progress.js"),
    import("../ftp/remote.js"),
  ]);
  // Each goes into FTP command lines: refused before the device is touched.
  const remoteDir = options.remoteDir ?? "/";
  checkFtpText("The folder on the card", remoteDir);
  checkFtpText("The FTP user", ftp.user ?? "");
  checkFtpText("The FTP password", ftp.password ?? "");
  const events = { ...NO_EVENTS, ...options.events };
  const signal = options.signal ?? new AbortController().signal;
  // Aborted before it began: SyncStopped as any stopped sync, with the mode the device is in (untouched).
  if (signal.aborted) throw new SyncStopped("Interrupted before it began.", signal.reason, (await client.mode()).mode, true);
  const unlock = await lockDevice(client.url, signal, () => events.step(`Waiting for another framefi sync to ${client.url} to finish…`));
  try {
    const localDir = await sourceFolder(options, signal, events.step);
    return await mirror({
      client,
      ftp: {
        host: ftp.host ?? new URL(client.url).hostname.replace(/^\[(.*)\]$/, "$1"),
        // Never a guess: the port given, else the one the device announces, else the firmware's.
        ports: [ftp.port ?? (await client.ftpPort()) ?? FIRMWARE_FTP.port],
        user: ftp.user ?? FIRMWARE_FTP.user,
        password: ftp.password ?? FIRMWARE_FTP.password,
        timeoutMs: client.timeoutMs,
      },
      localDir,
      remoteDir,
      delete: options.delete === true,
      dryRun: options.dryRun === true,
      stay: options.stay === true,
      parallel,
      followLinks: options.followLinks === true,
      signal,
      events,
      photos: options.photos,
      layout: options.layout,
      waitMs: options.waitMs,
      deleteGuard: { limit: options.maxDelete ?? { share: 0.5 }, force: options.force === true },
      confirmDeletes: options.confirmDeletes,
      trashDays: options.trashDays,
    });
  } finally {
    await unlock();
  }
}
