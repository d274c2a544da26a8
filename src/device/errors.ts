// The device's errors in one table, as fastify's lib/errors.js: each row a code, the one-line message (what happened,
// then what to do; `{name}` is a part the thrower fills in), and the answer it gets where it can reach one: `http`,
// the web API's status; `ftp`, the FTP reply code; `exit`, framefi-device's exit code when it stops the start.
// Codes are DEVICE_ and SCREAMING_SNAKE, the client's convention (FRAMEFI_*) and Node's (ERR_*): the prefix keeps
// them apart from the system's codes (ENOSPC, EADDRINUSE, …) that reach the same `code` property through a cause.
// Texts that clients see are pinned byte for byte (the firmware's in shared/firmware.ts, FTP replies lftp and curl
// show): a row whose message says only what happened is one of those, or ends with the thrower's part.
import { errors as firmware } from "../shared/firmware.js";
import { messagesOf, type TableArgs, type TableParts } from "../shared/message-template.js";

/** The exit codes of framefi-device. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export interface Row {
  readonly message: string;
  readonly http?: number;
  readonly ftp?: number;
  readonly exit?: number;
}

export const ERRORS = {
  // The card's refusals (CardError), answered by the web upload and the FTP server alike.
  DEVICE_UNSAFE_PATH: { message: 'Invalid file name "{name}": {problem}.', http: 400, ftp: 550 },
  DEVICE_NOT_FOUND: { message: "No such file or folder.", http: 400, ftp: 550 },
  DEVICE_NUL_IN_PATH: { message: "Path contains a NUL byte.", http: 400, ftp: 550 },
  DEVICE_OUTSIDE_CARD: { message: "Permission denied: the path leads outside the card.", http: 400, ftp: 550 },
  /** The card root, an internal name, the FAT rules, a case twin: {problem} says which and what to do. */
  DEVICE_NAME_NOT_ALLOWED: { message: "{problem}", http: 400, ftp: 550 },
  DEVICE_CONTROL_CHARACTER: {
    message: 'Name not allowed: "{name}" contains a control character (bytes 0x00-0x1F or 0x7F); use a name without them.',
    http: 400,
    ftp: 553,
  },
  DEVICE_NO_SPACE: { message: "Not enough free space on the card: {free} bytes free, the file needs more.", http: 507, ftp: 552 },
  DEVICE_FILESYSTEM_FULL: {
    message: "Not enough free space on the card's filesystem: the upload was stopped and nothing was stored.",
    http: 507,
    ftp: 552,
  },
  DEVICE_TOO_BIG: { message: 'Cannot store "{name}": {problem}.', http: 507, ftp: 552 },
  /** An FTP upload refused once the client stopped sending (DEVICE_NO_SPACE or DEVICE_TOO_BIG is its cause). */
  DEVICE_CARD_FULL: { message: "Not enough space on the card.", http: 507, ftp: 552 },
  DEVICE_FILE_TOO_BIG: { message: "The card cannot hold a file this big (FAT32: under 4 GiB).", http: 507, ftp: 552 },
  DEVICE_BUSY: { message: "Another upload to this file is in progress; try again when it is done.", http: 400, ftp: 450 },
  DEVICE_FOLDER_BUSY: { message: "A file is being uploaded into this folder; try again when it is done.", http: 400, ftp: 450 },
  DEVICE_FOLDER_GONE: {
    message: 'Cannot store "{name}": its folder was renamed or removed during the upload; nothing was stored.',
    http: 400,
    ftp: 550,
  },
  DEVICE_IN_MSC_MODE: { message: firmware.uploadInMsc, http: 400, ftp: 550 },
  DEVICE_WRITE_ABORTED: { message: "The write was aborted.", http: 400, ftp: 550 },
  // A request the HTTP server cannot read (answered on the socket, before any handler).
  DEVICE_REQUEST_HEAD_LATE: { message: "The request head did not arrive in time.", http: 408 },
  DEVICE_MALFORMED_REQUEST: { message: "Malformed HTTP request: {reason}.", http: 400 },
  // The web upload.
  DEVICE_UPLOAD_CUT: { message: "The upload was cut off: the connection closed before the whole {what} arrived; nothing was stored.", http: 400 },
  DEVICE_MALFORMED_UPLOAD: { message: "Malformed multipart request: {reason}.", http: 400 },
  DEVICE_TOO_MANY_FILES: {
    message: "Too many files in one upload: at most {max}; send them in several uploads. Nothing was stored.",
    http: 413,
  },
  /** The system's message names the card's absolute path and the temp file: the code alone is shown. */
  DEVICE_UPLOAD_FAILED: { message: "Failed to write the file ({errno}); nothing was stored.", http: 500 },
  // The file system's own errors (by errno), as the web upload and the FTP server word them.
  DEVICE_QUOTA_USED_UP: { message: "The disk quota is used up: the upload was stopped and nothing was stored.", http: 507 },
  DEVICE_NAME_TOO_LONG: { message: "Invalid file name: it is too long.", http: 400 },
  DEVICE_CARD_READ_ONLY: { message: "The card folder cannot be written ({errno}): check its permissions; nothing was stored.", http: 500 },
  DEVICE_TOO_MANY_OPEN: { message: "The device has too many files open: try again in a moment; nothing was stored.", http: 503 },
  DEVICE_FTP_NOT_FOUND: { message: "No such file or folder.", ftp: 550 },
  DEVICE_FTP_EXISTS: { message: "It already exists.", ftp: 550 },
  DEVICE_FTP_NOT_EMPTY: { message: "Folder not empty.", ftp: 550 },
  DEVICE_FTP_IS_FOLDER: { message: "That is a folder.", ftp: 550 },
  DEVICE_FTP_NOT_FOLDER: { message: "Not a folder.", ftp: 550 },
  DEVICE_FTP_PERMISSION: { message: "Permission denied.", ftp: 550 },
  DEVICE_FTP_INTO_ITSELF: { message: "Invalid request (a folder cannot move into itself).", ftp: 550 },
  DEVICE_FTP_FILESYSTEM_FULL: { message: "The card's filesystem is full.", ftp: 552 },
  DEVICE_FTP_NAME_TOO_LONG: { message: "File name not allowed: a name is longer than 255 bytes or the path too long.", ftp: 553 },
  DEVICE_FTP_LINK_LOOP: { message: "Too many levels of symbolic links.", ftp: 550 },
  // FTP transfers.
  DEVICE_SHORT_UPLOAD: {
    message: "Upload incomplete: {received} of the {announced} bytes announced with ALLO arrived; the file was not changed.",
    ftp: 426,
  },
  // The USB gadget backend (GadgetError), at start-up or in a mode switch.
  DEVICE_GADGET_TOOL_MISSING: { message: "{program} is not installed; install it (apt-get install dosfstools mount)", exit: EXIT.failed },
  DEVICE_GADGET_UNSUPPORTED: { message: "the USB gadget backend cannot run here: {missing}. {hint}", exit: EXIT.failed },
  DEVICE_GADGET_BIND_FAILED: {
    message: "cannot bind the USB gadget to {udc}: {reason}; is another gadget (g_ether, g_mass_storage) using it?",
    exit: EXIT.failed,
  },
  DEVICE_GADGET_COMMAND_FAILED: { message: "cannot {what}: {command} {failure}", exit: EXIT.failed },
  DEVICE_CARD_IMAGE_MISSING: {
    message: "the card image {path} does not exist; give its size with --card-size (e.g. --card-size 8GiB) to create it",
    exit: EXIT.failed,
  },
  DEVICE_CARD_IMAGE_TOO_SMALL: { message: "--card-size must be at least 34MiB for a FAT32 card image, got {bytes} bytes", exit: EXIT.failed },
  DEVICE_FSCK_STOPPED: {
    message: "fsck.vfat did not finish checking the card image {path} ({failure}); check it by hand: fsck.vfat -a {path}",
    exit: EXIT.failed,
  },
  DEVICE_CARD_IMAGE_NOT_FAT: {
    message: "the card image {path} is not a FAT filesystem fsck.vfat can repair (exit {status}): {output}",
    exit: EXIT.failed,
  },
  // Collections (--collections): switched by the web API and MQTT.
  DEVICE_NO_SUCH_COLLECTION: {
    message:
      "No collection {name}: the collections are {known}; add {name}.img (with --usb-gadget) or a folder {name} to the device's --collections folder first.",
    http: 404,
    exit: EXIT.failed,
  },
  DEVICE_COLLECTION_NEEDS_MSC: {
    message: "The collection cannot change in FTP mode (the card is in use for uploads); switch the device back to USB MSC first (POST /mode/msc).",
    http: 409,
    exit: EXIT.failed,
  },
  DEVICE_BAD_COLLECTION_NAME: {
    message: "Not a collection name: send the name alone as the body (curl -d winter), letters, digits, - and _, up to 32, starting with a letter or digit.",
    http: 400,
  },
  DEVICE_COLLECTION_BODY_TOO_LARGE: { message: "The body is too large for a collection name (at most {limit} bytes); send the name alone.", http: 413 },
  DEVICE_NO_COLLECTIONS: {
    message: "This device has no collections: run it with --collections DIR (a folder of card images NAME.img with --usb-gadget, else of folders NAME).",
    http: 404,
  },
  DEVICE_COLLECTION_OVERRIDDEN: {
    message: "A later request switched the frame to the collection {current} before {name} went in; send it again if {name} should win.",
    http: 409,
  },
  DEVICE_COLLECTIONS_NOT_A_FOLDER: {
    message: "the collections folder {dir} (--collections) does not exist or cannot be read: give a folder that holds a folder per collection",
    exit: EXIT.failed,
  },
  DEVICE_UNMOUNT_FAILED: {
    message: "cannot unmount the card image from {mountPoint}: {output}; close what uses it (fuser -m {mountPoint})",
    exit: EXIT.failed,
  },
  // The FTP server, started by a switch to FTP mode: the switch answers 500 with this message in its own.
  DEVICE_FTP_PORT_UNAVAILABLE: { message: "Cannot listen for FTP on {host}:{port}: {reason}. Choose another FTP port.", http: 500 },
  // Start-up (printed as "framefi-device: cannot start: {message}.").
  DEVICE_PORT_IN_USE: {
    message: "port {port} is already in use (is another framefi-device running?): stop that program or pick another port with {flag}",
    exit: EXIT.failed,
  },
  DEVICE_LISTEN_NOT_PERMITTED: { message: "no permission to listen on port {port}: use a port above 1023", exit: EXIT.failed },
  DEVICE_NOT_AN_ADDRESS: {
    message: 'cannot listen on "{host}" ({flag}): it is not an address of this machine; use one of its addresses, or :: for all',
    exit: EXIT.failed,
  },
  DEVICE_CARD_NOT_A_FOLDER: { message: "the card {card} is not a folder (--card): give a folder; it is created if missing", exit: EXIT.failed },
  DEVICE_NO_PERMISSION: { message: "no permission to use {path}: check the folders given with --card and --state", exit: EXIT.failed },
  // Start-up options (OptionError): flags, FRAMEFI_* variables and the --config file. Printed after "framefi-device: ".
  DEVICE_OPTION_UNKNOWN: { message: "{problem}. Run framefi-device --help for the options.", exit: EXIT.usage },
  DEVICE_OPTION_BAD_SIZE: { message: 'invalid size "{text}": use a number with an optional unit such as 500MB, 8GiB or 1000000', exit: EXIT.usage },
  DEVICE_OPTION_SIZE_NOT_POSITIVE: { message: 'invalid size "{text}": it must be greater than zero', exit: EXIT.usage },
  DEVICE_OPTION_NOT_BOOLEAN: { message: '--{name} is on or off: use true or false (1 or 0), got "{text}"', exit: EXIT.usage },
  DEVICE_OPTION_BAD_EVERY: {
    message: '--every is a time between pulls from 1m to 30d, such as 30m, 1h or 1d, got "{text}"; give one such time',
    exit: EXIT.usage,
  },
  DEVICE_OPTION_PULL_PASSWORD_IN_URL: {
    message: "--pull {source}: a password does not go in the URL (the process list shows it); give it in --pull-password-file FILE or FRAMEFI_SOURCE_PASSWORD",
    exit: EXIT.usage,
  },
  DEVICE_OPTION_PULL_BAD_URL: {
    message: "--pull {scheme}://…: this is not a URL (not shown: it may hold a password); give a folder, or webdav://, webdavs://, sftp:// or smb://host/path",
    exit: EXIT.usage,
  },
  DEVICE_OPTION_PULL_PASSWORD_FILE: {
    message: "--pull-password-file {path} cannot be read ({reason}); give a readable file whose first line is the password",
    exit: EXIT.usage,
  },
  DEVICE_OPTION_PULL_NEEDS_SOURCE: { message: "--{name} needs --pull SOURCE: the folder or share the device fetches its photos from", exit: EXIT.usage },
  DEVICE_OPTION_NOT_INTEGER: { message: '--{name} must be a whole number, got "{text}"', exit: EXIT.usage },
  DEVICE_OPTION_OUT_OF_RANGE: { message: "--{name} must be between {low} and {high}, got {value}", exit: EXIT.usage },
  DEVICE_OPTION_BAD_PASSIVE_PORTS: {
    message: '--ftp-passive-ports must be a range LOW-HIGH of ports between 1 and 65535, e.g. 50000-50100; got "{text}"',
    exit: EXIT.usage,
  },
  DEVICE_OPTION_BAD_TOPIC: { message: '--{name} must be a non-empty MQTT topic without # or +, got "{text}"', exit: EXIT.usage },
  DEVICE_OPTION_BAD_PUBLIC_ADDRESS: {
    message: '--ftp-public-address must be an IPv4 address such as 203.0.113.5 (PASV replies carry only IPv4); got "{text}"',
    exit: EXIT.usage,
  },
  DEVICE_OPTION_HOST_HAS_PORT: {
    message:
      '{from} is "{host}", but it is the address the device listens on (an IP address or host name, no port or http://); the client\'s device address is FRAMEFI_DEVICE',
    exit: EXIT.usage,
  },
  /** Not quoted: the URL may carry a password. */
  DEVICE_OPTION_BAD_MQTT_URL: { message: "--mqtt-url is not a URL; use mqtt://[user:password@]host[:port]", exit: EXIT.usage },
  DEVICE_OPTION_BAD_MQTT_SCHEME: { message: '--mqtt-url must start with mqtt://, got "{protocol}"', exit: EXIT.usage },
  DEVICE_OPTION_GADGET_NEEDS_IMAGE: { message: "--usb-gadget needs --card-image PATH: the FAT32 image (or partition) that is the card", exit: EXIT.usage },
  DEVICE_OPTION_NEEDS_GADGET: {
    message: "{option} works on the FAT card images of --usb-gadget; add --usb-gadget --card-image PATH, or drop it",
    exit: EXIT.usage,
  },
  DEVICE_CONFIG_FILE_UNREADABLE: { message: "cannot read config file {file}: {reason}", exit: EXIT.usage },
  DEVICE_CONFIG_FILE_NOT_JSON: { message: "config file {file} is not valid JSON{where}; check its quotes, commas and brackets", exit: EXIT.usage },
  DEVICE_CONFIG_FILE_NOT_OBJECT: { message: "config file {file} must hold a JSON object whose keys are option names", exit: EXIT.usage },
  DEVICE_CONFIG_FILE_UNKNOWN_KEY: { message: 'config file {file}: unknown key "{key}" (keys are the option names of --help)', exit: EXIT.usage },
  DEVICE_CONFIG_FILE_BAD_VALUE: { message: 'config file {file}: "{key}" must be a string or a number', exit: EXIT.usage },
  // Logins.
  DEVICE_LOGIN_THROTTLED: { message: "Too many failed logins from this address; try again in {seconds} s.", ftp: 421 },
} as const satisfies Record<string, Row>;

export type ErrorCode = keyof typeof ERRORS;

export type Parts<C extends ErrorCode> = TableParts<typeof ERRORS, C>;
export type ErrorArgs<C extends ErrorCode = ErrorCode> = TableArgs<typeof ERRORS, C>;

/** The message of `code`'s row with each `{name}` replaced by its part. */
export const messageOf = messagesOf(ERRORS);

/** Every error of the device: `code` names its row in ERRORS, which gives its message and its answers. */
export class DeviceError<C extends ErrorCode = ErrorCode> extends Error {
  override name = "DeviceError";
  readonly code: C;

  constructor(...[code, parts, options]: ErrorArgs<C>) {
    super(messageOf(code, parts), options);
    this.code = code;
  }

  /** Its row: the answers it gets (typed by the code, so an OptionError's `exit` is a number). */
  get row(): (typeof ERRORS)[C] & Row {
    return ERRORS[this.code];
  }
}

/** The file system's errors the web upload words itself; any other is DEVICE_UPLOAD_FAILED. */
const HTTP_ERRNO: Readonly<Record<string, ErrorCode>> = {
  ENOSPC: "DEVICE_FILESYSTEM_FULL",
  EDQUOT: "DEVICE_QUOTA_USED_UP",
  ENAMETOOLONG: "DEVICE_NAME_TOO_LONG",
  EACCES: "DEVICE_CARD_READ_ONLY",
  EPERM: "DEVICE_CARD_READ_ONLY",
  EROFS: "DEVICE_CARD_READ_ONLY",
  EMFILE: "DEVICE_TOO_MANY_OPEN",
  ENFILE: "DEVICE_TOO_MANY_OPEN",
};

/** The file system's errors the FTP server words itself; any other is a 451 the session answers. */
const FTP_ERRNO: Readonly<Record<string, ErrorCode>> = {
  ENOENT: "DEVICE_FTP_NOT_FOUND",
  EEXIST: "DEVICE_FTP_EXISTS",
  ENOTEMPTY: "DEVICE_FTP_NOT_EMPTY",
  EISDIR: "DEVICE_FTP_IS_FOLDER",
  ENOTDIR: "DEVICE_FTP_NOT_FOLDER",
  EACCES: "DEVICE_FTP_PERMISSION",
  EPERM: "DEVICE_FTP_PERMISSION",
  EINVAL: "DEVICE_FTP_INTO_ITSELF",
  ENOSPC: "DEVICE_FTP_FILESYSTEM_FULL",
  ENAMETOOLONG: "DEVICE_FTP_NAME_TOO_LONG",
  ELOOP: "DEVICE_FTP_LINK_LOOP",
};

function errnoOf(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/** The web API's answer to a failure: the row's status and message; anything unforeseen is a 500 that says why. */
export function toHttp(e: unknown): { status: number; message: string } {
  if (e instanceof DeviceError && e.row.http !== undefined) return { status: e.row.http, message: e.message };
  const errno = errnoOf(e);
  const code = errno === undefined ? undefined : HTTP_ERRNO[errno];
  if (code !== undefined) {
    const row: Row = ERRORS[code];
    return { status: row.http!, message: code === "DEVICE_CARD_READ_ONLY" ? messageOf(code, { errno: errno! }) : row.message };
  }
  return { status: 500, message: messageOf("DEVICE_UPLOAD_FAILED", { errno: errno ?? (e as Error).name }) };
}

/** The FTP reply to a failure (code and text), or undefined for one no row foresees (the session answers 451). */
export function toFtpReply(e: unknown): { code: number; text: string } | undefined {
  if (e instanceof DeviceError && e.row.ftp !== undefined) return { code: e.row.ftp, text: e.message };
  const errno = errnoOf(e);
  const code = errno === undefined ? undefined : FTP_ERRNO[errno];
  const row: Row | undefined = code === undefined ? undefined : ERRORS[code];
  return row === undefined ? undefined : { code: row.ftp!, text: row.message };
}
