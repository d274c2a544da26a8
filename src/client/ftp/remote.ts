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
