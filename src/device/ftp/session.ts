// One control connection: reads commands, checks the login, and runs them one at a time.
import { sameSecret } from "../../shared/secret.js";
import { setTimeout as sleep } from "node:timers/promises";
import type { Socket } from "node:net";
import { isIP } from "node:net";
import { activeChannel, listenPassive, parseEprt, parsePort, PassivePort, pasvAddress, plainAddress, type DataChannel, type DataSocket } from "./data.js";
import { ALL_FACTS, factsLine, listLine, type Fact } from "./listing.js";
import { parseTimeVal, timeVal } from "../../shared/ftp-time.js";
import { CardError, type CardFileSystem, type CardPath, type CardWrite } from "../card/card.js";
import { cardPath } from "./paths.js";
import { freeSpaceText, fsReply, pathReply, quote, Reply } from "./replies.js";
import { receiveFile, sendFile, sendText, ShortUploadError } from "./transfer.js";
import type { FtpServerOptions } from "./types.js";
import { ThrottledError } from "../auth/throttle.js";

const MAX_LINE = 8192;
/** Commands read ahead of the one running; beyond this we stop reading until they are done. */
const MAX_QUEUED = 64;
const IDLE_TIMEOUT_MS = 5 * 60_000;
/** From connecting to a successful login: an idle stranger does not hold a connection slot for long. */
const LOGIN_TIMEOUT_MS = 30_000;
/** Commands a client may send before logging in (clients need about six: FEAT, OPTS, USER, PASS...). */
const MAX_COMMANDS_BEFORE_LOGIN = 20;
const MAX_LOGIN_FAILURES = 3;

/** Commands allowed before login. */
const OPEN = new Set(["USER", "PASS", "QUIT", "FEAT", "SYST", "NOOP", "OPTS", "AUTH", "HELP"]);
/** Commands that consume a REST offset, and those that may come between REST and the transfer. */
const TRANSFERS = new Set(["RETR", "STOR", "APPE", "LIST", "NLST", "MLSD"]);
const KEEPS_REST = new Set(["REST", "PASV", "EPSV", "PORT", "EPRT", "TYPE"]);
/** An ALLO size holds for the next upload; these may come between. */
const KEEPS_ALLO = new Set([...KEEPS_REST, "ALLO", "STOR", "APPE"]);

const FEATURES = ["EPSV", "MDTM", "MFMT", "MLST type*;size*;modify*;perm*;", "PASV", "REST STREAM", "SITE FREE", "SIZE", "TVFS", "UTF8"];

interface Transfer {
  /** Stops the transfer by destroying its data connection (at once, or as soon as it comes). */
  abort(): void;
  done: Promise<void>;
}

export interface SessionContext {
  options: FtpServerOptions;
  card: CardFileSystem;
  log: (line: string) => void;
  /** What every data connection of the server reads into (see DataSocket). */
  readBuffer: Buffer;
}

export class Session {
  /** The client's address ("::ffff:" stripped). */
  readonly peer: string;
  private readonly label: string;
  private user: string | undefined;
  private loggedIn = false;
  private failures = 0;
  private commandsBeforeLogin = 0;
  private readonly loginTimer: NodeJS.Timeout;
  /** Aborted when the session closes: ends a throttled login's wait. */
  private readonly ending = new AbortController();
  private announced: number | undefined;
  private cwd = "/";
  private restOffset = 0;
  private renameFrom: string | undefined;
  private facts = new Set<Fact>(ALL_FACTS);
  /** MODE B: transfers are framed in blocks and share one data connection, kept open between them. */
  private blockMode = false;
  private data: DataChannel | undefined;
  private passivePort: PassivePort | undefined;
  private transfer: Transfer | undefined;
  private abortedByClient = false;
  private pending: Buffer = Buffer.alloc(0);
  private queue: string[] = [];
  private running = false;
  private closing = false;
  /** Resolves once the session is fully closed (transfer aborted and cleaned up, sockets gone). */
  readonly closed: Promise<void>;
  private markClosed!: () => void;

  constructor(
    private readonly socket: Socket,
    private readonly ctx: SessionContext,
  ) {
    this.peer = plainAddress(socket.remoteAddress);
    this.label = `${this.peer}:${socket.remotePort}`;
    this.closed = new Promise((r) => (this.markClosed = r));
    socket.setNoDelay(true);
    socket.setTimeout(IDLE_TIMEOUT_MS);
    socket.on("timeout", () => void this.close("421 Idle timeout; closing the connection."));
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("error", () => undefined);
    socket.on("end", () => void this.close());
    socket.on("close", () => void this.close());
    this.loginTimer = setTimeout(() => void this.close("421 Login timeout; closing the connection."), LOGIN_TIMEOUT_MS);
    ctx.log(`ftp ${this.label}: connected`);
    this.write(220, "FrameFi FTP server ready.");
  }

  get authenticated(): boolean {
    return this.loggedIn;
  }

  /** Ends the session: aborts a transfer (removing its partial file), closes data and control connections. */
  async close(goodbye?: string): Promise<void> {
    if (this.closing) return this.closed;
    this.closing = true;
    clearTimeout(this.loginTimer);
    this.ending.abort();
    this.transfer?.abort();
    this.data?.close();
    this.data = undefined;
    this.passivePort?.close();
    await this.transfer?.done.catch(() => undefined);
    if (goodbye && !this.socket.destroyed) this.socket.end(goodbye + "\r\n");
    this.socket.destroy();
    this.ctx.log(`ftp ${this.label}: closed${goodbye?.startsWith("421") ? `: ${goodbye}` : ""}`);
    this.markClosed();
    return this.closed;
  }

  private write(code: number, text: string, lines?: string[]): void {
    if (this.socket.destroyed) return;
    if (lines) this.socket.write(`${code}-${text}\r\n${lines.map((l) => ` ${l}\r\n`).join("")}${code} End\r\n`);
    else this.socket.write(`${code} ${text}\r\n`);
  }

  private receive(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, stripTelnet(chunk)]);
    for (let nl = this.pending.indexOf(10); nl >= 0; nl = this.pending.indexOf(10)) {
      const line = this.pending.subarray(0, nl).toString("utf8").replace(/\r$/, "");
      this.pending = this.pending.subarray(nl + 1);
      // ABOR must reach a running transfer now, not after it (RFC 959 §4.1.3).
      if (line.trim().toUpperCase() === "ABOR" && this.transfer) {
        this.abortedByClient = true;
        this.transfer.abort();
      }
      this.queue.push(line);
    }
    if (this.pending.length > MAX_LINE) {
      this.pending = Buffer.alloc(0);
      this.write(500, "Command line too long.");
    }
    if (this.queue.length > MAX_QUEUED) this.socket.pause();
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (let line = this.queue.shift(); line !== undefined && !this.closing; line = this.queue.shift()) {
      // A client that sends commands but does not read the replies: stop until it does. Meanwhile the queue
      // fills and reading pauses, so neither replies nor commands pile up in memory.
      if (this.socket.writableNeedDrain) await this.flushed();
      if (this.closing) break;
      const space = line.indexOf(" ");
      const verb = (space < 0 ? line : line.slice(0, space)).toUpperCase();
      const arg = space < 0 ? "" : line.slice(space + 1);
      try {
        await this.dispatch(verb, arg);
      } catch (e) {
        if (e instanceof Reply) this.write(e.code, e.text);
        else {
          this.ctx.log(`ftp ${this.label}: ${verb.slice(0, 20)} failed: ${(e as Error).message.slice(0, 300)}`);
          this.write(451, "Local error; please try again.");
        }
      }
    }
    this.running = false;
    this.socket.resume();
  }

  /** Resolves once the replies written so far have gone to the kernel, or the connection closed. */
  private flushed(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off("drain", done).off("close", done);
        resolve();
      };
      this.socket.on("drain", done).on("close", done);
    });
  }

  private async dispatch(verb: string, arg: string): Promise<void> {
    if (!this.loggedIn && ++this.commandsBeforeLogin > MAX_COMMANDS_BEFORE_LOGIN) {
      await this.close("421 Too many commands before login; closing the connection.");
      return;
    }
    if (!this.loggedIn && !OPEN.has(verb)) throw new Reply(530, "Please log in with USER and PASS.");
    if (!KEEPS_ALLO.has(verb)) this.announced = undefined;
    if (!TRANSFERS.has(verb) && !KEEPS_REST.has(verb)) this.restOffset = 0;
    if (verb !== "RNTO") this.renameFrom = undefined;
    switch (verb) {
      case "USER":
        return this.userCmd(arg);
      case "PASS":
        return this.passCmd(arg);
      case "QUIT":
        await this.close("221 Goodbye.");
        return;
      case "NOOP":
        return this.write(200, "OK.");
      case "SYST":
        return this.write(215, "UNIX Type: L8");
      case "FEAT":
        return this.write(211, "Features:", FEATURES);
      case "HELP":
        return this.write(
          214,
          "Commands: USER PASS PWD CWD CDUP TYPE MODE PASV EPSV PORT EPRT LIST NLST MLSD MLST SIZE MDTM MFMT STOR APPE RETR REST ABOR DELE MKD RMD RNFR RNTO ALLO SITE FREE FEAT OPTS SYST NOOP QUIT.",
        );
      case "OPTS":
        return this.optsCmd(arg);
      case "AUTH":
        throw new Reply(502, "TLS is not supported; use plain FTP on a trusted network.");
      case "PWD":
      case "XPWD":
        return this.write(257, `${quote(this.cwd)} is the current folder.`);
      case "CWD":
      case "XCWD":
        return this.cwdCmd(arg || "/");
      case "CDUP":
      case "XCUP":
        return this.cwdCmd("..");
      case "TYPE":
        return this.typeCmd(arg);
      case "MODE":
        return this.modeCmd(arg);
      case "STRU":
        if (arg.toUpperCase() !== "F") throw new Reply(504, "Only file structure is supported.");
        return this.write(200, "Structure set to F.");
      case "PASV":
        return this.pasvCmd();
      case "EPSV":
        return this.epsvCmd(arg);
      case "PORT":
        return this.portCmd(parsePort(arg));
      case "EPRT":
        return this.portCmd(parseEprt(arg));
      case "REST":
        return this.restCmd(arg);
      case "ABOR":
        if (this.abortedByClient) {
          this.abortedByClient = false;
          return this.write(226, "Abort successful.");
        }
        this.closeData();
        return this.write(225, "No transfer to abort.");
      case "LIST":
      case "NLST":
        return this.listCmd(verb, arg);
      case "MLSD":
        return this.mlsdCmd(arg);
      case "MLST":
        return this.mlstCmd(arg);
      case "SIZE":
        return this.sizeCmd(arg);
      case "MDTM":
        return this.mdtmCmd(arg);
      case "MFMT":
        return this.mfmtCmd(arg);
      case "RETR":
        return this.retrCmd(arg);
      case "STOR":
      case "APPE":
        return this.storCmd(verb, arg);
      case "DELE":
        return this.deleCmd(arg);
      case "MKD":
      case "XMKD":
        return this.mkdCmd(arg);
      case "RMD":
      case "XRMD":
        return this.rmdCmd(arg);
      case "RNFR":
        return this.rnfrCmd(arg);
      case "RNTO":
        return this.rntoCmd(arg);
      case "ALLO":
        return this.alloCmd(arg);
      case "SITE":
        return this.siteCmd(arg);
      default:
        throw new Reply(502, `Command not implemented: ${verb.slice(0, 20)}.`);
    }
  }

  // --- login ---

  private userCmd(arg: string): void {
    this.user = arg;
    this.loggedIn = false;
    this.write(331, "Please specify the password.");
  }

  private async passCmd(arg: string): Promise<void> {
    if (this.user === undefined) throw new Reply(503, "Login with USER first.");
    if (this.loggedIn) return this.write(230, "Already logged in.");
    const { throttle } = this.ctx.options;
    try {
      const wait = throttle.admit(this.peer);
      if (wait > 0) await sleep(wait, undefined, { signal: this.ending.signal });
    } catch (e) {
      if (this.closing) return;
      if (!(e instanceof ThrottledError)) throw e;
      this.ctx.log(`ftp ${this.label}: login refused: too many failed logins from ${this.peer}`);
      await this.close(`421 ${e.message}`);
      return;
    }
    const { user, password } = this.ctx.options;
    const userOk = sameSecret(this.user, user);
    const passOk = sameSecret(arg, password);
    if (userOk && passOk) {
      this.loggedIn = true;
      clearTimeout(this.loginTimer);
      throttle.succeeded(this.peer, "ftp");
      this.ctx.log(`ftp ${this.label}: logged in`);
      return this.write(230, "Login successful.");
    }
    this.failures++;
    const { failures, delayMs } = throttle.failed(this.peer, "ftp");
    const next = delayMs > 0 ? `; the next attempt from this address waits ${Math.ceil(delayMs / 1000)} s` : "";
    this.ctx.log(`ftp ${this.label}: login failed (${failures} in a row from ${this.peer}${next})`);
    this.user = undefined;
    if (this.failures >= MAX_LOGIN_FAILURES) {
      await this.close("530 Login incorrect. Too many failures; closing the connection.");
      return;
    }
    throw new Reply(530, "Login incorrect.");
  }

  /** ALLO size: the size of the file the next STOR/APPE sends (lftp sends it). A shorter upload is not kept. */
  private alloCmd(arg: string): void {
    const size = arg.trim().split(/\s+/)[0] ?? "";
    this.announced = /^\d{1,15}$/.test(size) ? Number(size) : undefined;
    this.write(202, "No storage allocation necessary.");
  }

  /** SITE FREE, worded as the firmware's FTP server does (its parameter exactly "FREE"), with the card's figures. */
  private async siteCmd(arg: string): Promise<void> {
    const what = arg.replace(/^ +/, "");
    if (what !== "FREE") throw new Reply(500, `Unknown SITE command ${what.slice(0, 100).replace(/[\x00-\x1f\x7f]/g, "?")}`);
    const { freeSize, totalSize } = await this.ctx.card.figures();
    this.write(200, freeSpaceText(freeSize, totalSize));
  }

  private optsCmd(arg: string): void {
    const [name = "", ...rest] = arg.trim().split(/\s+/);
    switch (name.toUpperCase()) {
      case "UTF8":
      case "UTF-8":
        return this.write(200, "Always in UTF8 mode.");
      case "MLST": {
        const wanted = (rest.join(" ") || "").toLowerCase().split(";").filter(Boolean);
        this.facts = new Set(ALL_FACTS.filter((f) => wanted.includes(f)));
        return this.write(200, `MLST OPTS ${[...this.facts].map((f) => f + ";").join("")}`);
      }
      default:
        throw new Reply(501, "Option not understood.");
    }
  }

  // --- folders ---

  private async resolveExisting(arg: string): Promise<{ path: string; real: string }> {
    const path = this.path(arg);
    return { path, real: await this.ctx.card.existing(path).catch(pathReply) };
  }

  private path(arg: string): string {
    try {
      return cardPath(this.cwd, arg);
    } catch (e) {
      return pathReply(e);
    }
  }

  /** The directory entry itself (a symlink stays a link): removing or renaming acts on it, not on its target. */
  private async entry(path: string): Promise<CardPath> {
    return this.ctx.card.creatable(path).catch(pathReply);
  }

  private async cwdCmd(arg: string): Promise<void> {
    const { path, real } = await this.resolveExisting(arg);
    if (!(await this.ctx.card.stat(real)).isDirectory()) throw new Reply(550, "Not a folder.");
    this.cwd = path;
    this.write(250, `Folder changed to ${path}.`);
  }

  private typeCmd(arg: string): void {
    const t = arg.trim().toUpperCase();
    // Both types move bytes unchanged: photos are binary, and clients rarely ask for ASCII.
    if (t === "I" || t === "L 8") return this.write(200, "Switching to Binary mode.");
    if (t === "A" || t === "A N") return this.write(200, "Switching to ASCII mode (bytes are transferred unchanged).");
    throw new Reply(504, "Only types A and I are supported.");
  }

  /** MODE S or B; a data connection kept for block mode does not carry over to the other mode. */
  private modeCmd(arg: string): void {
    const mode = arg.trim().toUpperCase();
    if (mode !== "S" && (mode !== "B" || !this.ctx.options.blockMode)) {
      throw new Reply(504, this.ctx.options.blockMode ? "Only stream (S) and block (B) modes are supported." : "Only S(tream) is supported");
    }
    if (this.blockMode !== (mode === "B")) {
      this.closeData();
      this.ctx.log(`ftp ${this.label}: ${mode === "B" ? "block" : "stream"} mode`);
    }
    this.blockMode = mode === "B";
    this.write(200, `Mode set to ${mode}.`);
  }

  private async mkdCmd(arg: string): Promise<void> {
    if (!arg) throw new Reply(501, "MKD needs a folder name.");
    const path = this.path(arg);
    const target = await this.entry(path);
    try {
      this.ctx.card.mkdir(target);
    } catch (e) {
      newNameReply(e);
    }
    this.write(257, `${quote(path)} created.`);
  }

  private async rmdCmd(arg: string): Promise<void> {
    if (!arg) throw new Reply(501, "RMD needs a folder name.");
    const { path, real } = await this.resolveExisting(arg);
    if (path === "/") throw new Reply(550, "The card's root cannot be removed.");
    if (!(await this.ctx.card.stat(real)).isDirectory()) throw new Reply(550, "Not a folder; use DELE for files.");
    await this.ctx.card.remove(await this.entry(path), "folder").catch(fsReply);
    this.write(250, "Folder removed.");
  }

  private async deleCmd(arg: string): Promise<void> {
    if (!arg) throw new Reply(501, "DELE needs a file name.");
    const { path, real } = await this.resolveExisting(arg);
    if ((await this.ctx.card.stat(real)).isDirectory()) throw new Reply(550, "That is a folder; use RMD.");
    await this.ctx.card.remove(await this.entry(path), "file").catch(fsReply);
    this.write(250, "File deleted.");
  }

  private async rnfrCmd(arg: string): Promise<void> {
    if (!arg) throw new Reply(501, "RNFR needs a name.");
    const { path } = await this.resolveExisting(arg);
    if (path === "/") throw new Reply(550, "The card's root cannot be renamed.");
    this.renameFrom = path;
    this.write(350, "Ready for RNTO.");
  }

  private async rntoCmd(arg: string): Promise<void> {
    const from = this.renameFrom;
    this.renameFrom = undefined;
    if (from === undefined) throw new Reply(503, "Send RNFR first.");
    if (!arg) throw new Reply(501, "RNTO needs a name.");
    const path = this.path(arg);
    const target = await this.entry(path);
    const source = await this.entry(from);
    try {
      this.ctx.card.rename(source, target);
    } catch (e) {
      newNameReply(e);
    }
    this.write(250, "Rename successful.");
  }

  // --- information ---

  private async sizeCmd(arg: string): Promise<void> {
    const { real } = await this.resolveExisting(arg);
    const st = await this.ctx.card.stat(real);
    if (!st.isFile()) throw new Reply(550, "Not a regular file.");
    this.write(213, String(st.size));
  }

  private async mdtmCmd(arg: string): Promise<void> {
    const { real } = await this.resolveExisting(arg);
    this.write(213, timeVal((await this.ctx.card.stat(real)).mtime));
  }

  /** MFMT time path (draft-somers-ftp-mfxx): sets a file's modification time, so syncs can compare times. */
  private async mfmtCmd(arg: string): Promise<void> {
    const space = arg.indexOf(" ");
    const when = parseTimeVal(space < 0 ? arg : arg.slice(0, space));
    if (!when || space < 0) throw new Reply(501, "Usage: MFMT YYYYMMDDHHMMSS path.");
    const { path, real } = await this.resolveExisting(arg.slice(space + 1));
    try {
      this.ctx.card.setTime(real, when);
    } catch (e) {
      fsReply(e);
    }
    this.write(213, `Modify=${timeVal(when)}; ${path}`);
  }

  private async mlstCmd(arg: string): Promise<void> {
    const { path, real } = await this.resolveExisting(arg || ".");
    const entry = await this.ctx.card.entry(real, path);
    this.write(250, `Listing ${path}`, [factsLine(entry, this.facts)]);
  }

  private async listCmd(verb: "LIST" | "NLST", arg: string): Promise<void> {
    // Clients send ls options such as "-la"; we always list the same way.
    const target = arg
      .split(" ")
      .filter((w) => !w.startsWith("-"))
      .join(" ");
    const { path, real } = await this.resolveExisting(target || ".");
    const st = await this.ctx.card.stat(real).catch(fsReply);
    const entries = st.isDirectory() ? await this.ctx.card.list(real) : [await this.ctx.card.entry(real, path.split("/").pop()!)];
    const now = Date.now();
    const text = entries.map((e) => (verb === "LIST" ? listLine(e, now) : e.name) + "\r\n").join("");
    await this.runTransfer((socket) => sendText(text, socket, this.blockMode));
  }

  private async mlsdCmd(arg: string): Promise<void> {
    const { real } = await this.resolveExisting(arg || ".");
    if (!(await this.ctx.card.stat(real)).isDirectory()) throw new Reply(501, "Not a folder; use MLST for files.");
    const text = (await this.ctx.card.list(real)).map((e) => factsLine(e, this.facts) + "\r\n").join("");
    await this.runTransfer((socket) => sendText(text, socket, this.blockMode));
  }

  // --- transfers ---

  private async retrCmd(arg: string): Promise<void> {
    const offset = this.takeRest();
    const { path, real } = await this.resolveExisting(arg);
    const st = await this.ctx.card.stat(real);
    if (!st.isFile()) throw new Reply(550, "Not a regular file.");
    if (offset > st.size) throw new Reply(554, "Restart offset is beyond the end of the file.");
    await this.runTransfer((socket) => sendFile(this.ctx.card, real, st.size, offset, socket, this.blockMode), { direction: "download", path });
    this.ctx.log(`ftp ${this.label}: sent ${path}`);
  }

  private async storCmd(verb: "STOR" | "APPE", arg: string): Promise<void> {
    const announced = this.announced;
    this.announced = undefined;
    // In block mode a refused upload drops its data connection: blocks the client sent ahead on it (as framefi sync
    // does) belong to the refused file and must not become the next one's. Stream mode keeps it, as vsftpd does.
    const { path, write, replaces } = await this.prepareUpload(verb, arg).catch((e: unknown) => {
      if (this.blockMode) this.closeData();
      throw e;
    });
    let received = 0;
    try {
      await this.runTransfer(
        async (socket) => {
          received = await receiveFile(write, socket, { announced, replaces, blocks: this.blockMode });
          return received;
        },
        { direction: "upload", path },
      );
    } finally {
      await write.abort();
    }
    this.ctx.log(`ftp ${this.label}: stored ${path} (${received} bytes)`);
  }

  /** Checks an upload's target and opens its card write; a Reply when it is refused. */
  private async prepareUpload(verb: "STOR" | "APPE", arg: string): Promise<{ path: string; write: CardWrite; replaces: boolean }> {
    const offset = this.takeRest();
    if (!arg) throw new Reply(501, `${verb} needs a file name.`);
    const path = this.path(arg);
    const target = await this.entry(path);
    this.checkNewName(target);
    // Existing content is kept for APPE and REST; through a symlink only when it stays inside the card.
    const here = this.ctx.card.entryStats(target);
    const source = here?.isSymbolicLink() ? await this.ctx.card.existing(path).catch(pathReply) : target.absolute;
    const existing = here?.isSymbolicLink() ? await this.ctx.card.stat(source).catch(() => undefined) : here;
    if (existing?.isDirectory()) throw new Reply(550, "That name is a folder.");
    const size = existing?.size ?? 0;
    if (offset > size) throw new Reply(554, "Restart offset is beyond the end of the file.");
    const keep = verb === "APPE" ? size : offset;
    if (!this.data) throw new Reply(425, "Use PASV, EPSV or PORT first.");
    // Exclusive: two uploads to one file would each start from its old content, and the later would drop the other's.
    // The card taken back (the write aborted) stops the transfer.
    const write = await this.ctx.card
      .beginWrite(target, { exclusive: source, onAbort: () => this.transfer?.abort(), ...(keep > 0 ? { keep: { from: source, bytes: keep } } : {}) })
      .catch(fsReply);
    return { path, write, replaces: existing !== undefined };
  }

  /**
   * A name the card cannot hold (the FAT rules) → 553, before any byte is sent. Synchronous, so that MKD and RNTO
   * make the entry in the same turn of the event loop: two sessions cannot both pass with case twins.
   */
  private checkNewName(target: CardPath): void {
    try {
      this.ctx.card.allowNew(target);
    } catch (e) {
      newNameReply(e);
    }
  }

  private takeRest(): number {
    const offset = this.restOffset;
    this.restOffset = 0;
    return offset;
  }

  private restCmd(arg: string): void {
    if (!/^\d+$/.test(arg.trim())) throw new Reply(501, "REST needs a byte offset.");
    // Block mode's REST takes a restart marker, which this server never sends.
    if (this.blockMode) throw new Reply(504, "REST is supported in stream mode only; send MODE S first.");
    this.restOffset = Number(arg.trim());
    this.write(350, `Restarting at ${this.restOffset}. Send STOR or RETR to start the transfer.`);
  }

  private async pasvCmd(): Promise<void> {
    const host = this.ctx.options.publicAddress ?? plainAddress(this.socket.localAddress);
    const channel = await this.openPassive();
    const address = pasvAddress(host, channel.port);
    if (!address) {
      this.closeData();
      throw new Reply(425, "PASV needs IPv4; use EPSV.");
    }
    this.write(227, `Entering Passive Mode (${address}).`);
  }

  private async epsvCmd(arg: string): Promise<void> {
    if (arg.trim().toUpperCase() === "ALL") return this.write(200, "EPSV ALL ok.");
    const channel = await this.openPassive();
    this.write(229, `Entering Extended Passive Mode (|||${channel.port}|).`);
  }

  private async openPassive(): Promise<DataChannel> {
    this.closeData();
    const { host, passivePortRange } = this.ctx.options;
    let channel: DataChannel;
    try {
      // A port range may be a single port shared by every session (--firmware-ports): then each transfer listens
      // anew and frees the port once connected. Otherwise the session keeps one port.
      if (passivePortRange) channel = await listenPassive(host, this.peer, passivePortRange, this.ctx.readBuffer);
      else {
        this.passivePort ??= await PassivePort.open(host, this.peer, this.ctx.readBuffer);
        channel = this.passivePort.next();
      }
    } catch (e) {
      this.ctx.log(`ftp ${this.label}: passive listen failed: ${(e as Error).message}`);
      throw new Reply(425, "Cannot open a passive data port; try again.");
    }
    if (this.closing) {
      // closed while listening: close() could not see these yet
      channel.close();
      this.passivePort?.close();
      throw new Reply(421, "Closing the connection.");
    }
    this.data = channel;
    return channel;
  }

  private portCmd(target: { host: string; port: number } | undefined): void {
    if (!target || !isIP(target.host)) throw new Reply(501, "Malformed address.");
    // Connecting anywhere but the client itself would let us be used to reach third parties (FTP bounce).
    if (plainAddress(target.host) !== this.peer || target.port < 1024)
      throw new Reply(504, "Data connections go only to your own address, port 1024 or above.");
    this.closeData();
    this.data = activeChannel(target.host, target.port, this.ctx.readBuffer);
    this.write(200, "PORT command successful.");
  }

  private closeData(): void {
    this.data?.close();
    this.data = undefined;
  }

  /**
   * Opens the prepared data connection, runs `work` on it, and replies 226 or the failure. A file transfer (`file`)
   * is reported to onTransfer when it starts and ends; `work` returns its bytes. In stream mode the connection is
   * closed after the transfer; in block mode it is kept for the next one unless the transfer failed. ABOR and the
   * session closing stop it (Transfer.abort): `work` then sees its socket destroyed.
   */
  private async runTransfer(work: (socket: DataSocket) => Promise<number | void>, file?: { direction: "upload" | "download"; path: string }): Promise<void> {
    const channel = this.data;
    const keep = this.blockMode;
    if (!keep) this.data = undefined;
    if (!channel) throw new Reply(425, "Use PASV, EPSV or PORT first.");
    const drop = (): void => {
      channel.close();
      if (this.data === channel) this.data = undefined;
    };
    this.socket.setTimeout(0); // a long transfer keeps the control connection quiet; that is not idleness
    let aborted = false;
    let connected: DataSocket | undefined;
    // Stopped before its data connection came, the transfer stops waiting for it (else up to 30 s: a mode switch
    // would wait that long); stopped while it was being accepted, `work` fails at once on the destroyed socket.
    const abort = (): void => {
      aborted = true;
      if (connected) connected.destroy();
      else channel.close();
    };
    const done = (async (): Promise<void> => {
      let socket: DataSocket;
      try {
        socket = connected = await channel.connect();
      } catch {
        drop();
        if (aborted) throw new Reply(426, "Transfer aborted; the connection was closed.");
        throw new Reply(425, "Cannot open the data connection.");
      }
      if (aborted) socket.destroy();
      else if (socket.closedEmpty) {
        drop();
        throw new Reply(425, "The data connection was closed; send PASV, EPSV or PORT again.");
      }
      this.write(150, "Opening data connection.");
      const report = file && { ...file, bytes: 0, ok: false };
      if (report) this.transferred("start", report);
      try {
        const bytes = await work(socket);
        if (report) Object.assign(report, { bytes: bytes ?? 0, ok: true });
      } catch (e) {
        drop();
        if (report) this.transferred("end", report);
        return failedTransfer(e, aborted);
      }
      // The client hears of its file first (its data, and a download's end, are already sent); closing the data
      // connection and the device's own bookkeeping (LED, panel, MQTT) come after.
      this.write(226, "Transfer complete.");
      if (!keep) channel.close();
      if (report) this.transferred("end", report);
    })();
    this.transfer = { abort, done };
    try {
      await done;
    } finally {
      this.transfer = undefined;
      this.socket.setTimeout(IDLE_TIMEOUT_MS);
    }
  }

  private transferred(phase: "start" | "end", transfer: { direction: "upload" | "download"; path: string; bytes: number; ok: boolean }): void {
    try {
      this.ctx.options.onTransfer?.(phase, transfer);
    } catch (e) {
      this.ctx.log(`ftp: onTransfer failed: ${(e as Error).message}`);
    }
  }
}

/** A transfer's failure → the reply that says why (a file-system error through fsReply; anything else rethrown). */
function failedTransfer(e: unknown, aborted: boolean): never {
  if (e instanceof CardError && (e.code === "no-space" || e.code === "too-big")) throw new Reply(552, `Upload aborted: ${e.message}`);
  if (e instanceof CardError && e.code === "name-not-allowed") throw new Reply(553, e.message);
  if (e instanceof ShortUploadError) throw new Reply(426, `${e.message}`);
  if (aborted) throw new Reply(426, "Transfer aborted; the connection was closed.");
  if (e instanceof Reply) throw e;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ERR_STREAM_PREMATURE_CLOSE") throw new Reply(426, "Data connection lost; transfer aborted.");
  return fsReply(e);
}

/** A refused new name → 553; a file-system error through fsReply. */
function newNameReply(e: unknown): never {
  if (e instanceof CardError) throw new Reply(553, `File name not allowed: ${e.message}.`);
  return fsReply(e);
}

/** Removes Telnet IAC sequences (clients send IAC IP / IAC DM before ABOR). 0xFF never occurs in UTF-8. */
function stripTelnet(chunk: Buffer): Buffer {
  if (!chunk.includes(0xff)) return chunk;
  const out: number[] = [];
  for (let i = 0; i < chunk.length; i++) {
    const b = chunk[i]!;
    if (b !== 0xff) out.push(b);
    else if (chunk[i + 1] === 0xff) out.push(0xff), i++;
    else i += chunk[i + 1]! >= 0xfb && chunk[i + 1]! <= 0xfe ? 2 : 1;
  }
  return Buffer.from(out);
}
