// The client's errors in one table, as fastify's lib/errors.js: each row a code, the one-line message (what happened,
// then what to do; `{name}` is a part the thrower fills in), and the exit code `framefi` ends with. `cli`, where
// given, says the same in the command line's own terms (its options and commands) where the library's would not.
// Codes are FRAMEFI_ and SCREAMING_SNAKE, as Node's ERR_* and fastify's FST_ERR_*: the prefix keeps them apart from
// the system's codes (ECONNRESET, …) that reach the same `code` property through a cause.
// A message that starts in lower case and has no full stop is a reason printed after a file's name, in a list whose
// last line says what to do; a message that ends with a part ({deviceMessage}, {reply}, …) ends with text from the
// device, the FTP server or a cause, which says what to do.
import { fill, messagesOf, type TableArgs, type TableParts } from "../shared/message-template.js";

/** The exit codes of `framefi` (its --help and docs/library.md list them). */
export const EXIT = {
  ok: 0,
  /** The device reported an error (or some files of a sync failed). */
  deviceError: 1,
  usage: 2,
  unreachable: 3,
  auth: 4,
  /** Stopped by Ctrl-C, as shells report SIGINT. */
  interrupted: 130,
} as const;

export interface Row {
  readonly message: string;
  readonly exit: number;
  readonly cli?: string;
}

export const ERRORS = {
  // The device's address.
  FRAMEFI_EMPTY_ADDRESS: { message: "No device address given: pass a host such as 192.168.1.50 or http://frame.local:8080.", exit: EXIT.deviceError },
  FRAMEFI_BAD_ADDRESS: { message: '"{host}" is not a device address; use host, host:port or http://host:port.', exit: EXIT.deviceError },
  FRAMEFI_BAD_SCHEME: { message: '"{host}": only http:// and https:// addresses are supported; use one of those.', exit: EXIT.deviceError },
  // No answer.
  FRAMEFI_DEVICE_UNREACHABLE: {
    message: "The device at {url} did not answer ({reason}). Check the address and that the device is on.",
    exit: EXIT.unreachable,
  },
  FRAMEFI_CERT_UNTRUSTED: {
    message:
      "The device at {url} answered with a certificate that is not trusted here ({reason}). If a private CA signed it, name that CA's certificate file in NODE_EXTRA_CA_CERTS.",
    exit: EXIT.unreachable,
  },
  FRAMEFI_CERT_INVALID: {
    message: "The device at {url} answered with a certificate that does not check out ({reason}): check the address, and the certificate's names and dates.",
    exit: EXIT.unreachable,
  },
  // The device's answers.
  FRAMEFI_DEVICE_ERROR: {
    message: "{request}: the device answered {status}: {deviceMessage}",
    cli: "the device answered {status}: {deviceMessage}",
    exit: EXIT.deviceError,
  },
  FRAMEFI_DEVICE_IN_MSC_MODE: {
    message: "{request}: the device answered {status}: {deviceMessage} Switch the device to FTP mode first.",
    cli: "the device answered {status}: {deviceMessage} Switch the device to FTP mode first: framefi mode ftp.",
    exit: EXIT.deviceError,
  },
  FRAMEFI_LOGIN_REFUSED: {
    message: "{request}: the device refused the login ({status}: {deviceMessage}). Give its web user and password.",
    // The device's own 401 message is written for curl users; framefi says what to do in its own terms.
    cli: "the device refused the login (401). Give its web user and password with -u USER[:PASSWORD] or FRAMEFI_USER.",
    exit: EXIT.auth,
  },
  FRAMEFI_FORBIDDEN: {
    message: "{request}: this account may not do that ({status}: {reason}). Use an account with full access.",
    cli: "this account may not do that ({status}: {reason}). Use an account with full access.",
    exit: EXIT.auth,
  },
  FRAMEFI_NOT_THE_API: {
    message: "{request}: {url} answered {what}, not the device API's JSON. Check that this is the device's address.",
    exit: EXIT.deviceError,
  },
  FRAMEFI_API_NOT_AT_ROOT: {
    message: "{request}: {url} answered {what}, not the device API's JSON. Give the device's address without a path, e.g. {origin}.",
    exit: EXIT.deviceError,
  },
  FRAMEFI_ANSWER_TOO_LONG: {
    message: "{request}: {url} sent an answer of over {kib} KiB, not the device API's JSON. Check that this is the device's address.",
    exit: EXIT.deviceError,
  },
  FRAMEFI_MODE_SWITCH_TIMEOUT: { message: "The device did not reach {mode} mode within {seconds} s; check it and try again.", exit: EXIT.deviceError },
  // The library's arguments.
  FRAMEFI_BAD_BRIGHTNESS: { message: "Brightness must be an integer from 0 to 255, got {value}.", exit: EXIT.deviceError },
  FRAMEFI_BAD_PARALLEL: { message: "parallel must be a whole number from 1 to 16, got {value}.", exit: EXIT.deviceError },
  FRAMEFI_BAD_FTP_PORT: { message: "ftp.port must be a whole number from 1 to 65535, got {value}.", exit: EXIT.deviceError },
  FRAMEFI_NOT_A_RESULT: { message: "answerOf() takes a result this client returned.", exit: EXIT.deviceError },
  FRAMEFI_UPLOAD_CHANGED: {
    message: "Upload of {name}: {read} the {size} bytes announced could be read; send it again once it no longer changes.",
    exit: EXIT.deviceError,
  },
  // FTP.
  FRAMEFI_FTP_UNREACHABLE: {
    message:
      "No FTP server answered at {host} port {ports} within {seconds} s ({last}). Check that the device is in FTP mode, or give its FTP port with --ftp-port.",
    exit: EXIT.unreachable,
  },
  FRAMEFI_FTP_LOGIN_REFUSED: {
    message: 'The FTP server at {host}:{port} refused user "{user}" (530). Pass the device\'s FTP user and password with --ftp-user USER:PASSWORD.',
    exit: EXIT.auth,
  },
  FRAMEFI_FTP_REFUSED: { message: "{reply}", exit: EXIT.deviceError },
  FRAMEFI_FTP_UNSAFE_TEXT: { message: "{what} holds a line break or NUL, which no FTP command can carry; remove it.", exit: EXIT.usage },
  // A sync's files.
  FRAMEFI_LOCAL_UNREADABLE: { message: "cannot read the local file ({reason})", exit: EXIT.deviceError },
  FRAMEFI_LOCAL_CHANGED: { message: "the file changed while it was being sent; run the sync again", exit: EXIT.deviceError },
  FRAMEFI_PHOTO_UNCONVERTIBLE: { message: "cannot convert this photo ({reason}); skipped", exit: EXIT.deviceError },
  FRAMEFI_PHOTO_UNDECODABLE: { message: "cannot decode this photo ({reason}); skipped", exit: EXIT.deviceError },
  FRAMEFI_PHOTO_TOO_LARGE: {
    message: "too large to decode ({width}×{height}, {size}; {kind} up to {limit} are converted); skipped",
    exit: EXIT.deviceError,
  },
  FRAMEFI_HEIC_UNDECODABLE: { message: "{reason}", exit: EXIT.deviceError },
  FRAMEFI_HEIC_OUT_OF_MEMORY: { message: "the HEIC decoder ran out of memory", exit: EXIT.deviceError },
  FRAMEFI_HEIC_STOPPED: { message: "the HEIC decoder stopped (exit code {status})", exit: EXIT.deviceError },
  FRAMEFI_SOURCE_CHANGED: { message: "it changed while the sync read it: run the sync again", exit: EXIT.deviceError },
  // The card and the photo cache, which stop a sync.
  FRAMEFI_CARD_TOO_LARGE: {
    message: "The card holds more than {entries} files and folders under {root}; sync a folder further down with --to.",
    exit: EXIT.deviceError,
  },
  FRAMEFI_CARD_TOO_DEEP: {
    message:
      "Cannot list the card: its folders nest more than {levels} levels deep under {root} ({path}…); remove the loop or sync a folder further down with --to.",
    exit: EXIT.deviceError,
  },
  FRAMEFI_CARD_UNLISTABLE: { message: "Cannot list {path} on the card: {reason}", exit: EXIT.deviceError },
  FRAMEFI_CACHE_UNUSABLE: { message: "Cannot use the photo cache {dir} ({reason}); give another folder with --cache DIR.", exit: EXIT.deviceError },
  // A sync that stopped before its end; its exit code is its cause's.
  FRAMEFI_SYNC_STOPPED: {
    message: "Sync stopped: {reason} {where} Run the sync again to finish.",
    cli: "Sync stopped: {reason} {where} Run the same command again to finish.",
    exit: EXIT.deviceError,
  },
  /** Stopped by a refused login: the cause says what to do, and the same command again would fail the same way. */
  FRAMEFI_SYNC_REFUSED: { message: "Sync stopped: {reason} {where}", exit: EXIT.auth },
  FRAMEFI_SYNC_INTERRUPTED: {
    message: "Sync interrupted. {where} Run the sync again to finish; what arrived is kept.",
    cli: "Sync interrupted. {where} Run the same command again to finish; what arrived is kept.",
    exit: EXIT.interrupted,
  },
  FRAMEFI_SYNC_WAIT_INTERRUPTED: { message: "Interrupted while waiting for the other sync; nothing was changed.", exit: EXIT.interrupted },
  // The command line.
  FRAMEFI_UNKNOWN_OPTION: { message: "Unknown option {option}; see framefi --help.", exit: EXIT.usage },
  FRAMEFI_OPTION_NEEDS_VALUE: { message: "Option {option} needs a value; see framefi --help.", exit: EXIT.usage },
  FRAMEFI_BAD_ARGUMENTS: { message: "{problem} See framefi --help.", exit: EXIT.usage },
  FRAMEFI_NO_COMMAND: { message: "No command given; see framefi --help.", exit: EXIT.usage },
  FRAMEFI_UNKNOWN_COMMAND: { message: 'Unknown command "{command}"; see framefi --help.', exit: EXIT.usage },
  FRAMEFI_OPTION_NOT_FOR_COMMAND: { message: 'Option --{option} does not apply to "{command}"; see framefi --help.', exit: EXIT.usage },
  FRAMEFI_TOO_MANY_ARGUMENTS: { message: 'Too many arguments for "{command}": {extra}. See framefi --help.', exit: EXIT.usage },
  FRAMEFI_UNKNOWN_ACTION: { message: '"{command} {value}": expected one of {allowed}.', exit: EXIT.usage },
  FRAMEFI_BAD_TIMEOUT: { message: '--timeout must be a number of seconds above 0, got "{value}".', exit: EXIT.usage },
  FRAMEFI_NO_PASSWORD: {
    message: 'No password for user "{user}" and no terminal to ask on: pass -u {user}:PASSWORD or set FRAMEFI_PASSWORD.',
    exit: EXIT.usage,
  },
  FRAMEFI_NO_DEVICE_ADDRESS: {
    message: "No device address: pass --host HOST[:PORT], set FRAMEFI_DEVICE, or run where a .env file sets FTP_HOST{old}.",
    exit: EXIT.usage,
  },
  FRAMEFI_BAD_HOST: { message: "{from}: {problem}", exit: EXIT.usage },
  FRAMEFI_BAD_PORT: { message: '{from} must be a port number from 1 to 65535, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_LED_BRIGHTNESS: { message: 'LED brightness must be a whole number from 0 to 255, got "{value}".', exit: EXIT.usage },
  FRAMEFI_WIFI_ACTION: { message: '"wifi" takes one action: framefi wifi reset.', exit: EXIT.usage },
  FRAMEFI_WIFI_NEEDS_CONFIRMATION: { message: "wifi reset needs confirmation: run it on a terminal, or pass --yes.", exit: EXIT.usage },
  FRAMEFI_UPLOAD_NEEDS_FILE: { message: "upload needs at least one FILE: framefi upload FILE... [--to DIR].", exit: EXIT.usage },
  FRAMEFI_UPLOAD_NO_FILE: { message: "{file}: no such file; nothing was uploaded. Check the path.", exit: EXIT.usage },
  FRAMEFI_UPLOAD_NOT_A_FILE: { message: "{file} is not a file; nothing was uploaded (to send a folder, use framefi sync).", exit: EXIT.usage },
  FRAMEFI_SYNC_NEEDS_FOLDER: { message: "sync needs a folder: framefi sync DIR (or LOCAL_DIR in ./.env).", exit: EXIT.usage },
  FRAMEFI_SYNC_NOT_A_FOLDER: { message: "{dir} is not a folder; give the folder of photos to sync.", exit: EXIT.usage },
  FRAMEFI_BAD_CLI_PARALLEL: { message: '--parallel must be a whole number from 1 to 16, got "{value}".', exit: EXIT.usage },
  FRAMEFI_DRY_RUN_NEEDS_FTP: { message: "Nothing compared: {why}. Switch first (framefi mode ftp), or run it on a terminal to be asked.", exit: EXIT.usage },
  // Sources other than a folder (src/client/sources/): {source} never holds a password.
  FRAMEFI_SOURCE_BAD_URL: {
    message: "{source} is not a source framefi can read ({problem}); give a folder, or webdav://, webdavs://, sftp:// or smb://host/path.",
    exit: EXIT.usage,
  },
  FRAMEFI_SOURCE_PASSWORD_IN_URL: {
    message: "{source}: a password does not go in the source (the command line is seen by others); set FRAMEFI_SOURCE_PASSWORD instead.",
    exit: EXIT.usage,
  },
  FRAMEFI_SOURCE_NO_KNOWN_HOSTS: {
    message: "{source}: the server's key cannot be checked, {file} does not exist; add it (ssh-keyscan -p PORT HOST) or set FRAMEFI_SOURCE_KNOWN_HOSTS.",
    exit: EXIT.usage,
  },
  FRAMEFI_SOURCE_HOST_KEY_MISMATCH: {
    message:
      "{source}: the server's key is not the one {file} holds for {host}, so another machine may stand in its place; nothing was read and the card was left as it is. Check with the server's owner; if its key changed, replace the line (ssh-keygen -R '{host}' -f {file}, then ssh-keyscan -p {port} {hostname} >> {file}).",
    exit: EXIT.unreachable,
  },
  FRAMEFI_SOURCE_HOST_KEY_UNKNOWN: {
    message:
      "{source}: {file} holds no key for {host}, so the server cannot be checked; nothing was read and the card was left as it is. Add its key once its owner confirms it (ssh-keyscan -p {port} {hostname} >> {file}).",
    exit: EXIT.unreachable,
  },
  FRAMEFI_SOURCE_RCLONE_FAILED: { message: "Cannot fetch {source}; check that rclone works (rclone version): {reason}", exit: EXIT.deviceError },
  FRAMEFI_SOURCE_UNREACHABLE: {
    message: "Cannot read {source}; the card was left as it is. Check the address, the login and the network: {reason}",
    exit: EXIT.unreachable,
  },
  // What --delete may remove (plan.ts holds deletes back; each is reported as a failure).
  FRAMEFI_DELETE_TOO_MANY: {
    message: "not deleted: --delete would remove {count} of the card's {total} files, more than --max-delete {max}; check the source, then rerun with --force",
    exit: EXIT.deviceError,
  },
  FRAMEFI_DELETE_TOO_MANY_PHOTOS: {
    message: "not deleted: --delete would remove {count} of the card's {total} photos, more than --max-delete {max}; check the source, then rerun with --force",
    exit: EXIT.deviceError,
  },
  FRAMEFI_DELETE_EMPTY_SOURCE: {
    message: "not deleted: the source lists no files, which looks like a failure rather than an empty album",
    exit: EXIT.deviceError,
  },
  FRAMEFI_DELETE_DECLINED: { message: "not deleted: declined at the prompt", exit: EXIT.deviceError },
  FRAMEFI_BAD_TRASH: { message: '--trash is how many days removed files are kept, 1 to 3650, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_MAX_DELETE: { message: '--max-delete is a share of the card\'s files (0% to 100%) or a number of files, got "{value}".', exit: EXIT.usage },
  // Photo options, on the command line or in the .env's [frame] section ({option} names it as the user wrote it).
  FRAMEFI_BAD_FRAME_SIZE: {
    message: '{option} takes the frame\'s size in pixels as WIDTHxHEIGHT (16 to 16384 each), e.g. 1024x600; got "{value}".',
    exit: EXIT.usage,
  },
  FRAMEFI_BAD_YES_NO: { message: '{option} is yes or no, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_MAX_SIZE: { message: '{option} takes a share of the card (1% to 100%) or a size (500MB, 2GB, 1GiB), got "{value}".', exit: EXIT.usage },
  FRAMEFI_FIT_AND_FILL: { message: "Give either {fit} or {fill}, not both.", exit: EXIT.usage },
  FRAMEFI_BAD_QUALITY: { message: '{option} is a JPEG quality from 1 to 100, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_FORMAT: { message: '{option} "{value}" is not supported: frames read baseline JPEG; use jpeg, the one format.', exit: EXIT.usage },
  FRAMEFI_NEEDS_PROFILE: { message: "{option} needs a frame profile: add {fit} WxH or {fill} WxH.", exit: EXIT.usage },
  FRAMEFI_BAD_OTHERS: { message: '{option} is copy or skip (what to do with files that are not photos), got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_MAX_FILES: { message: '{option} is a whole number of files above 0, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_BACKGROUND: { message: '{option} is blur, black or a colour (#rrggbb, #rgb, white, grey), got "{value}".', exit: EXIT.usage },
  FRAMEFI_NEEDS_FIT: { message: "{option} fills the frame around a fitted photo: add {fit} WxH (with {fill} nothing is left to fill).", exit: EXIT.usage },
  FRAMEFI_BAD_CROP: { message: '{option} is smart (keep what draws the eye) or centre, got "{value}".', exit: EXIT.usage },
  FRAMEFI_NEEDS_FILL: { message: "{option} chooses what a crop keeps: add {fill} WxH (with {fit} nothing is cropped).", exit: EXIT.usage },
  FRAMEFI_BAD_CAPTION: { message: '{option} is date, place or date,place, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_CAPTION_FORMAT: {
    message: '{option} is up to 40 characters of text with %Y %m %d %e %B %b %H %M %% (e.g. "%e %B %Y"), got "{value}".',
    exit: EXIT.usage,
  },
  FRAMEFI_BAD_PIXEL_ASPECT: {
    message: '{option} is the aspect the panel is shown at (16:9) or a pixel\'s width over its height (0.5 to 2), got "{value}".',
    exit: EXIT.usage,
  },
  FRAMEFI_FORMAT_NEEDS_CAPTION: { message: "{option} formats the caption's date: add {caption} date.", exit: EXIT.usage },
  FRAMEFI_LOOK_TOO_LARGE: {
    message: "With the picture options the frame is drawn whole, {shown} pixels for {size}, more than the 16383×16383 libvips reads: give a smaller {option}.",
    exit: EXIT.usage,
  },
  FRAMEFI_PAIR_NEEDS_LANDSCAPE: {
    message: "{option} puts two portrait photos side by side on a landscape frame, and {size} is not one; use it with a landscape size, or remove it.",
    exit: EXIT.usage,
  },
  FRAMEFI_BAD_ORDER: { message: '{option} is name, date, shuffle or shuffle:SEED, got "{value}".', exit: EXIT.usage },
  FRAMEFI_BAD_MAX_PER_FOLDER: { message: '{option} is a whole number of files above 0 (at most 9999999), got "{value}".', exit: EXIT.usage },
  FRAMEFI_NO_SUCH_PROFILE: {
    message: "[frame {frame}] names PROFILE={profile}, but the .env has no [profile {profile}] section; add it or fix the name.",
    exit: EXIT.usage,
  },
  FRAMEFI_NO_FRAMES: { message: "sync --all needs frames: the .env has no [frame NAME] section; add one per frame (HOST=, SOURCE=, …).", exit: EXIT.usage },
  FRAMEFI_ALL_WITH_FOLDER: {
    message: "sync --all syncs every [frame NAME] of the .env, each from its SOURCE; give no folder or frame name with it.",
    exit: EXIT.usage,
  },
  FRAMEFI_NO_SUCH_FRAME: { message: "The .env has no [frame {name}] section; use one of: {known}.", exit: EXIT.usage },
  FRAMEFI_NO_SUCH_COLLECTION: { message: "The .env has no [collection {name}] section; use one of: {known}.", exit: EXIT.usage },
  FRAMEFI_COLLECTION_NEEDS_SOURCE: { message: "[collection {name}] has no SOURCE; add SOURCE=the folder of its photos.", exit: EXIT.usage },
  FRAMEFI_BAD_COLLECTION_FOLDER: { message: '[collection {name}]: FOLDER "{folder}" must be a folder inside SOURCE; fix it.', exit: EXIT.usage },
  FRAMEFI_BAD_COLLECTION_KEYWORDS: {
    message: '[collection {name}]: KEYWORDS is a comma-separated list of keywords of 1 to 64 characters, got "{value}"; fix it.',
    exit: EXIT.usage,
  },
  FRAMEFI_BAD_COLLECTION_DATE: { message: '[collection {name}]: {key} is a day as 2026-12-24, got "{value}".', exit: EXIT.usage },
  FRAMEFI_COLLECTION_NOT_ON_DEVICE: {
    message:
      "Nothing synced: the device's collections are {known} and its frame shows {current}; [collection {name}] written there would replace {current}'s photos. Add {name} to the device's --collections folder, then run this again to switch to it.",
    exit: EXIT.usage,
  },
  FRAMEFI_SYNC_INTO_COLLECTION: {
    message:
      "Nothing synced: the device's frame shows the collection {current}, and this sync would write into it; add --collection {current} if that is meant, else switch first (framefi collection use NAME).",
    exit: EXIT.usage,
  },
  FRAMEFI_SYNC_NOT_THAT_COLLECTION: {
    message: "Nothing synced: --collection {meant}, but the device's frame shows {shown}; switch first (framefi collection use {meant}), then sync again.",
    exit: EXIT.usage,
  },
  FRAMEFI_BAD_COLLECTION_NAME: {
    message: '--collection is a collection\'s name: letters, digits, - and _, up to 32, got "{value}".',
    exit: EXIT.usage,
  },
  FRAMEFI_COLLECTION_ACTION: { message: "collection takes: use NAME [FRAME]; e.g. framefi collection use winter kitchen.", exit: EXIT.usage },
  // The .env file.
  FRAMEFI_ENV_UNREADABLE: { message: "Cannot read {file}: {reason}; make it readable, or remove it.", exit: EXIT.usage },
  FRAMEFI_ENV_UNKNOWN_SECTION: {
    message:
      "{file} line {line}: unknown section [{section}]; use [frame], [frame NAME], [profile NAME] or [collection NAME], a NAME of letters, digits, - and _.",
    exit: EXIT.usage,
  },
  FRAMEFI_ENV_NOT_KEY_VALUE: { message: "{file} line {line} is not KEY=value; fix or remove it.", exit: EXIT.usage },
  FRAMEFI_ENV_OPEN_QUOTE: { message: "{file} line {line}: the quote in the value of {key} is not closed; close it.", exit: EXIT.usage },
  FRAMEFI_ENV_TEXT_AFTER_VALUE: {
    message: "{file} line {line} is not KEY=value: text follows the value of {key}; put the whole value in quotes or remove the rest.",
    exit: EXIT.usage,
  },
  FRAMEFI_ENV_UNKNOWN_KEY: { message: "{file} line {line}: unknown key {key} in [{section}]; the keys are {keys}. Fix or remove the line.", exit: EXIT.usage },
  FRAMEFI_PROMPT_INTERRUPTED: { message: "Interrupted at the prompt.", exit: EXIT.interrupted },
} as const satisfies Record<string, Row>;

export type ErrorCode = keyof typeof ERRORS;

export type Parts<C extends ErrorCode> = TableParts<typeof ERRORS, C>;
export type ErrorArgs<C extends ErrorCode = ErrorCode> = TableArgs<typeof ERRORS, C>;

/** The message of `code`'s row with its parts filled in. */
export const messageOf = messagesOf(ERRORS);

/** Every error of the client (its library and its command line): `code` names its row in ERRORS. */
export class FrameFiError extends Error {
  override name = "FrameFiError";
  readonly code: ErrorCode;
  /** The parts its message was made of, for the command line's wording of the same row. */
  readonly parts: Readonly<Record<string, string | number>>;

  constructor(...[code, parts, options]: ErrorArgs) {
    super(fill(ERRORS[code].message, parts), options);
    this.code = code;
    this.parts = parts;
  }
}
