// What a sync needs of the card over FTP, whichever client speaks it (block-mode.ts in block mode, stream-mode.ts with
// basic-ftp in stream mode): the server to reach, the card's entries, the operations of a mirror, and a pool of
// connections handing out work. Free of basic-ftp, so a sync in block mode never loads it.
import { posix } from "node:path";
import { timeVal } from "../../shared/ftp-time.js";
import { FrameFiError } from "../errors.js";

export interface FtpTarget {
  host: string;
  /** Ports to try in order until one greets. */
  ports: readonly number[];
  user: string;
  password: string;
  /** How long a reply may take, from its command to its last line; default 10 s. */
  timeoutMs?: number | undefined;
}

/** Files and folders in a listing, and in the card's tree (card-tree.ts): a photo frame's card holds tens of thousands. */
export const MAX_ENTRIES = 250_000;
/** The longest listing line taken: a FAT path is at most 255 characters, its facts a few dozen. */
const MAX_LINE = 8 * 1024;

/** Throws unless `text` can go into an FTP command line: a CR, LF or NUL would end it and start another. */
export function checkFtpText(what: string, text: string): void {
  if (/[\r\n\0]/.test(text)) throw new FrameFiError("FRAMEFI_FTP_UNSAFE_TEXT", { what });
}

/**
 * An MLSD listing ("type=file;size=12;modify=20240101120000; a.jpg" lines) parsed as it arrives, into the folder's
 * files and folders by name: over MAX_ENTRIES of them, or an overlong line, fail it while it streams in, so that a
 * server's huge listing never sits in memory whole.
 */
export class MlsdListing {
  readonly entries = new Map<string, RemoteEntry>();
  private partial = "";

  constructor(private readonly dir: string) {}

  push(text: string): void {
    const lines = (this.partial + text).split("\n");
    this.partial = lines.pop()!;
    if (this.partial.length > MAX_LINE) throw new Error(`The FTP server's listing of ${this.dir} has a line of over ${MAX_LINE} characters.`);
    for (const line of lines) this.line(line.endsWith("\r") ? line.slice(0, -1) : line);
  }

  /** The entries, once the listing is complete. */
  end(): Map<string, RemoteEntry> {
    this.line(this.partial.endsWith("\r") ? this.partial.slice(0, -1) : this.partial);
    this.partial = "";
    return this.entries;
  }

  private line(line: string): void {
    const space = line.indexOf(" ");
    if (space < 0) return;
    const name = line.slice(space + 1);
    const facts = new Map(
      line
        .slice(0, space)
        .split(";")
        .filter(Boolean)
        .map((f) => [f.slice(0, f.indexOf("=")).toLowerCase(), f.slice(f.indexOf("=") + 1)] as const),
    );
    const type = facts.get("type")?.toLowerCase();
    if ((type !== "file" && type !== "dir") || name === "" || name === "." || name === "..") return;
    const m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.(\d{1,3}))?$/.exec(facts.get("modify") ?? "");
    const mtimeMs = m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, m[7] ? Number(m[7].padEnd(3, "0")) : 0) : undefined;
    this.entries.set(name, { type, size: Number(facts.get("size") ?? 0) || 0, mtimeMs });
    if (this.entries.size > MAX_ENTRIES) throw new FrameFiError("FRAMEFI_CARD_TOO_LARGE", { entries: MAX_ENTRIES, root: this.dir });
  }
}

/** A remote entry, by its path relative to the sync's remote folder ("2024/a.jpg"). */
export interface RemoteEntry {
  type: "file" | "dir";
  size: number;
  /** Modification time in ms since the epoch; undefined when the server's listing has none. */
  mtimeMs: number | undefined;
}

/** One logged-in connection with the operations a mirror needs. Paths are absolute on the server. */
export interface RemoteConnection {
  list(dir: string): Promise<Map<string, RemoteEntry>>;
  /** Creates a folder and its missing parents. */
  ensureDir(path: string): Promise<void>;
  mkdir(path: string): Promise<void>;
  removeFile(path: string): Promise<void>;
  removeDir(path: string): Promise<void>;
  /** Moves a file (RNFR, RNTO); the folder it goes to must exist. */
  rename(from: string, to: string): Promise<void>;
  /**
   * Sends the local file `abs` of `size` bytes to `remotePath`, with `mtimeMs` as its time when given (MFMT);
   * `onBytes` hears the bytes sent so far. `fresh`: the card had no file of that name when the sync looked (its
   * time may then be sent without waiting for the upload's answer). A local file that cannot be read, or changes
   * while it is sent, fails with LocalFileError and is not kept.
   */
  upload(abs: string, size: number, remotePath: string, mtimeMs: number | undefined, onBytes: (sent: number) => void, fresh?: boolean): Promise<void>;
  /** Replaces a broken connection with a fresh login. */
  reconnect(): Promise<void>;
  close(): void;
  /** Drops the connection at once, a transfer included, so that the server keeps no part of a file. */
  abort(): void;
}

/** A refusal the FTP server answered (a 4xx/5xx reply, its number in `reply`): the connection is still good. */
export class FtpReplyError extends FrameFiError {
  override readonly name = "FtpReplyError";
  constructor(
    readonly reply: number,
    message: string,
  ) {
    super("FRAMEFI_FTP_REFUSED", { reply: message });
  }
}

/**
 * The reply number of a server's refusal (ours, or basic-ftp's FTPError, told by name so that this module need not
 * load it) that leaves the connection good: not 421, with which a server closes it (an idle timeout, say). Undefined
 * for any other error.
 */
export function replyCode(e: unknown): number | undefined {
  const reply = e instanceof FtpReplyError ? e.reply : e instanceof Error && e.name === "FTPError" ? (e as { code?: unknown }).code : undefined;
  return typeof reply === "number" && reply !== 421 ? reply : undefined;
}

export function isReply(e: unknown): e is Error {
  return replyCode(e) !== undefined;
}

/** Milliseconds as the seconds an error message gives ("2.5"). */
export function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** A server that serves one client at a time (the firmware's) may leave extra logins hanging: give up sooner. */
export const EXTRA_LOGIN_TIMEOUT_MS = 3_000;

/**
 * The sync's connections to the card, handing out work to whichever is free, and whether the server takes MFMT
 * (uploads can carry their local time).
 */
export class CardPool<C extends RemoteConnection> {
  private readonly live: Set<C>;

  constructor(
    connections: C[],
    readonly canSetTimes: boolean,
  ) {
    this.live = new Set(connections);
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Runs `work` on each item (of a list, or of a queue as they come), each connection taking the next item when it is free. A `work` that throws takes
   * its connection out of service for good; the others carry on. Throws the first such error when no
   * connection is left.
   */
  async each<T>(items: Iterable<T> | AsyncIterable<T>, work: (conn: C, item: T) => Promise<void>): Promise<void> {
    const it = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
    let firstError: unknown;
    const worker = async (conn: C): Promise<void> => {
      try {
        for (let next = await it.next(); !next.done; next = await it.next()) await work(conn, next.value);
      } catch (e) {
        firstError ??= e;
        this.live.delete(conn);
        conn.close();
      }
    };
    await Promise.all([...this.live].map(worker));
    if (this.live.size === 0) throw firstError ?? new Error("No FTP connection is left.");
  }

  close(): void {
    for (const c of this.live) c.close();
  }

  /** Drops every connection at once, transfers included. */
  abort(): void {
    for (const c of this.live) c.abort();
  }
}

/** Joins a remote folder and a relative posix path into an absolute server path. */
export function remoteJoin(root: string, rel: string): string {
  // The card's root and a path from the local tree (names read from folders, joined by "/") need no normalising.
  if (root === "/" && rel !== "" && !rel.split("/").some((s) => s === "" || s === "." || s === "..")) return "/" + rel;
  return posix.join("/", root, rel);
}

/** An MFMT refused as unknown (a server that listed it in FEAT all the same): the file stays, without its time. */
export function mfmtUnknown(code: number): boolean {
  return [500, 501, 502, 504].includes(code);
}

/** MFMT's argument: the time in UTC as YYYYMMDDHHMMSS. */
export function mfmtTime(ms: number): string {
  return timeVal(new Date(Math.floor(ms / 1000) * 1000));
}
