// The FTP side of a sync in stream mode, on basic-ftp, for servers without block mode (the firmware's): a small
// pool of logged-in connections (several files travel at once), the card's file tree, and the operations a
// mirror needs. Loaded only when the server refused block mode (connect.ts).
import { Client, FileType } from "basic-ftp";
import { ProgressTracker } from "basic-ftp/dist/ProgressTracker.js";
import { downloadTo } from "basic-ftp/dist/transfer.js";
import { createReadStream } from "node:fs";
import { Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import {
  CardPool,
  EXTRA_LOGIN_TIMEOUT_MS,
  seconds,
  MAX_ENTRIES,
  MlsdListing,
  replyCode,
  mfmtTime,
  mfmtUnknown,
  type FtpTarget,
  type RemoteConnection,
  type RemoteEntry,
} from "./remote.js";
import { FrameFiError } from "../errors.js";
import { FtpLoginError, LocalFileError } from "../sync/errors.js";

/** Time without an answer or progress before a login, command or transfer is given up, unless --timeout says. */
const TIMEOUT_MS = 10_000;

/**
 * Ends `client`'s connection when a reply takes over `ms` from its first byte to its last line: basic-ftp times only
 * silence, which a server dripping a reply a byte at a time never lets happen.
 */
function timeReplies(client: Client, ms: number): void {
  /** When the reply being read began (0: none), the code of a multi-line one ("211"), the start of its last line. */
  let since = 0;
  let multi: string | undefined;
  let partial = "";
  client.ftp.socket.on("data", (chunk: string | Buffer) => {
    const now = Date.now();
    since ||= now;
    const lines = (partial + chunk.toString()).split("\n");
    // A line's first four characters tell its part in a reply; the rest need not be held.
    partial = lines.pop()!.slice(0, 4);
    for (const line of lines) {
      if (multi === undefined && /^\d{3}-/.test(line)) multi = line.slice(0, 3);
      else if (multi === undefined || line.startsWith(`${multi} `)) {
        multi = undefined;
        since = 0;
      }
    }
    if (partial === "" && multi === undefined) since = 0;
    else if (since === 0) since = now;
    else if (now - since > ms) client.ftp.closeWithError(new Error(`The FTP server did not answer within ${seconds(ms)} s.`));
  });
}

/**
 * Logs in; `giveUpMs` bounds the whole login (default: three replies' time; the connection's own timeout stays the
 * usual one).
 */
async function login(target: FtpTarget, port: number, giveUpMs?: number): Promise<Client> {
  const replyMs = target.timeoutMs || TIMEOUT_MS;
  // basic-ftp's timeout is silence on the control or a data connection: --timeout bounds both, as in block mode.
  const client = new Client(replyMs);
  const timer = setTimeout(() => client.close(), giveUpMs ?? 3 * replyMs);
  try {
    await client.access({ host: target.host, port, user: target.user, password: target.password, secure: false });
    timeReplies(client, replyMs);
  } catch (e) {
    client.close();
    if (replyCode(e) === 530) {
      throw new FtpLoginError(target.host, port, target.user);
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return client;
}

/** One logged-in basic-ftp connection. */
export class FtpConnection implements RemoteConnection {
  constructor(
    private client: Client,
    private readonly target: FtpTarget,
    private readonly port: number,
  ) {}

  /** Replaces a broken connection with a fresh login. */
  async reconnect(): Promise<void> {
    this.client.close();
    this.client = await login(this.target, this.port);
  }

  close(): void {
    this.client.close();
  }

  /**
   * Drops the connection at once. The data connection is reset, not closed: in FTP's stream mode a closed data
   * connection means "the file is complete", so a server would keep half a file; a reset makes it discard it.
   */
  abort(): void {
    for (const socket of [this.client.ftp.dataSocket, this.client.ftp.socket]) {
      try {
        if (socket && !socket.destroyed) socket.resetAndDestroy();
      } catch {
        socket?.destroy();
      }
    }
    this.client.close();
  }

  async list(dir: string): Promise<Map<string, RemoteEntry>> {
    if (this.client.availableListCommands[0] === "MLSD") return this.mlsd(dir);
    // LIST, bounded by basic-ftp's cap on a listing's bytes.
    const out = new Map<string, RemoteEntry>();
    const infos = await this.client.list(dir);
    if (infos.length > MAX_ENTRIES + 2) throw new FrameFiError("FRAMEFI_CARD_TOO_LARGE", { entries: MAX_ENTRIES, root: dir });
    for (const info of infos) {
      if (info.name === "." || info.name === "..") continue;
      const type = info.type === FileType.Directory ? "dir" : info.type === FileType.File ? "file" : undefined;
      if (!type) continue;
      out.set(info.name, { type, size: info.size, mtimeMs: info.modifiedAt?.getTime() });
    }
    return out;
  }

  /**
   * MLSD parsed as it streams in (basic-ftp's list() holds the whole text, then every entry, before it is counted):
   * a listing of over MAX_ENTRIES fails as soon as it has that many, and its data connection is dropped.
   */
  private async mlsd(dir: string): Promise<Map<string, RemoteEntry>> {
    const listing = new MlsdListing(dir);
    const text = new StringDecoder("utf8");
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        try {
          listing.push(text.write(chunk));
          done();
        } catch (e) {
          done(e as Error);
        }
      },
    });
    await this.client.prepareTransfer(this.client.ftp);
    await downloadTo(sink, { ftp: this.client.ftp, tracker: new ProgressTracker(), command: `MLSD ${dir}`, remotePath: "", type: "list" });
    listing.push(text.end());
    return listing.end();
  }

  /**
   * Stream mode has no end marker: the size goes ahead (ALLO), so that a server that heeds it (our device, as lftp's
   * uploads) keeps no shorter file when the client dies mid-file; one that does not may refuse ALLO, harmlessly. A
   * file that changed while it was sent is removed again.
   */
  async upload(abs: string, size: number, remotePath: string, mtimeMs: number | undefined, onBytes: (sent: number) => void): Promise<void> {
    const stream = await openLocal(abs);
    this.client.trackProgress((info) => onBytes(info.bytes));
    try {
      await this.client.send(`ALLO ${size}`).catch((e: unknown) => {
        if (replyCode(e) === undefined) throw e;
      });
      await this.client.uploadFrom(stream, remotePath);
    } finally {
      this.client.trackProgress();
      stream.destroy();
    }
    if (stream.bytesRead !== size) {
      await this.removeFile(remotePath).catch(() => undefined);
      throw LocalFileError.changed();
    }
    if (mtimeMs === undefined) return;
    await this.client.send(`MFMT ${mfmtTime(mtimeMs)} ${remotePath}`).catch((e: unknown) => {
      const reply = replyCode(e);
      if (reply === undefined || !mfmtUnknown(reply)) throw e;
    });
  }

  /** Creates a folder and its missing parents. */
  async ensureDir(path: string): Promise<void> {
    await this.client.ensureDir(path);
  }

  async mkdir(path: string): Promise<void> {
    await this.client.send(`MKD ${path}`);
  }

  async removeFile(path: string): Promise<void> {
    await this.client.remove(path);
  }

  async removeDir(path: string): Promise<void> {
    await this.client.send(`RMD ${path}`);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.client.rename(from, to);
  }
}

async function openLocal(abs: string): Promise<ReturnType<typeof createReadStream>> {
  const stream = createReadStream(abs, { highWaterMark: 256 * 1024 });
  try {
    await new Promise<void>((resolve, reject) => {
      stream.once("open", () => resolve());
      stream.once("error", reject);
    });
  } catch (e) {
    throw LocalFileError.unreadable(e);
  }
  return stream;
}

/**
 * Logs in on `port` (the greeting server found by connect.ts) and opens up to `size` connections. A server
 * that allows fewer (the firmware's allows one) still works: connections it refuses are simply not used.
 */
export async function openStreamPool(target: FtpTarget, port: number, size: number): Promise<CardPool<FtpConnection>> {
  const first = await login(target, port);
  const features = await first.features();
  const extra = await Promise.allSettled(Array.from({ length: Math.max(0, size - 1) }, () => login(target, port, EXTRA_LOGIN_TIMEOUT_MS)));
  const clients = [first, ...extra.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))];
  return new CardPool(
    clients.map((c) => new FtpConnection(c, target, port)),
    features.has("MFMT"),
  );
}
