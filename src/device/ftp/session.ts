// One control connection's session: its state (login, folder, pending REST, ALLO and RNFR), and the dispatch of
// each command line to the registry (commands/), one at a time.
import type { Socket } from "node:net";
import type { CardPath } from "../card/card.js";
import { COMMANDS, type CommandSession } from "./commands/index.js";
import { Control } from "./control.js";
import { SessionData } from "./data-channel.js";
import { plainAddress } from "./data.js";
import { ALL_FACTS, type Fact } from "./listing.js";
import { cardPath } from "./paths.js";
import { cardReply, Reply } from "./replies.js";
import type { SessionContext } from "./types.js";

/** From connecting to a successful login: an idle stranger does not hold a connection slot for long. */
const LOGIN_TIMEOUT_MS = 30_000;
/** Commands a client may send before logging in (clients need about six: FEAT, OPTS, USER, PASS...). */
const MAX_COMMANDS_BEFORE_LOGIN = 20;

export class Session implements CommandSession {
  /** The client's address ("::ffff:" stripped). */
  readonly peer: string;
  readonly label: string;
  readonly data: SessionData;
  user: string | undefined;
  loggedIn = false;
  cwd = "/";
  facts = new Set<Fact>(ALL_FACTS);
  announced: number | undefined;
  restOffset = 0;
  renameFrom: string | undefined;
  private failures = 0;
  private commandsBeforeLogin = 0;
  private readonly loginTimer: NodeJS.Timeout;
  /** Aborted when the session closes: ends a throttled login's wait. */
  private readonly ended = new AbortController();
  private readonly control: Control;
  private shuttingDown = false;
  /** Resolves once the session is fully closed (transfer aborted and cleaned up, sockets gone). */
  readonly closed: Promise<void>;
  private markClosed!: () => void;

  constructor(
    private readonly socket: Socket,
    readonly ctx: SessionContext,
  ) {
    this.peer = plainAddress(socket.remoteAddress);
    this.label = `${this.peer}:${socket.remotePort}`;
    this.closed = new Promise((r) => (this.markClosed = r));
    this.control = new Control(socket, {
      // ABOR must reach a running transfer now, not after it (RFC 959 §4.1.3).
      arrived: (line) => {
        if (line.trim().toUpperCase() === "ABOR") this.data.abortByClient();
      },
      run: (line, utf8) => this.run(line, utf8),
      closing: () => this.shuttingDown,
    });
    this.data = new SessionData({
      options: ctx.options,
      control: this.control,
      peer: this.peer,
      readBuffer: ctx.readBuffer,
      log: ctx.log,
      closing: () => this.shuttingDown,
    });
    socket.on("timeout", () => void this.close("421 Idle timeout; closing the connection."));
    socket.on("error", () => undefined);
    socket.on("end", () => void this.close());
    socket.on("close", () => void this.close());
    this.loginTimer = setTimeout(() => void this.close("421 Login timeout; closing the connection."), LOGIN_TIMEOUT_MS);
    ctx.log(`ftp ${this.label}: connected`);
    this.reply(220, "FrameFi FTP server ready.");
  }

  get authenticated(): boolean {
    return this.loggedIn;
  }

  get closing(): boolean {
    return this.shuttingDown;
  }

  get ending(): AbortSignal {
    return this.ended.signal;
  }

  get localAddress(): string | undefined {
    return this.socket.localAddress;
  }

  /** Ends the session: aborts a transfer (removing its partial file), closes data and control connections. */
  async close(goodbye?: string): Promise<void> {
    if (this.shuttingDown) return this.closed;
    this.shuttingDown = true;
    clearTimeout(this.loginTimer);
    this.ended.abort();
    await this.data.shutdown();
    if (goodbye && !this.socket.destroyed) this.socket.end(goodbye + "\r\n");
    this.socket.destroy();
    this.ctx.log(`ftp ${this.label}: closed${goodbye?.startsWith("421") ? `: ${goodbye}` : ""}`);
    this.markClosed();
    return this.closed;
  }

  reply(code: number, text: string, lines?: string[]): void {
    this.control.reply(code, text, lines);
  }

  loginSucceeded(): void {
    this.loggedIn = true;
    clearTimeout(this.loginTimer);
  }

  loginFailed(): number {
    return ++this.failures;
  }

  path(arg: string): string {
    try {
      return cardPath(this.cwd, arg);
    } catch (e) {
      return cardReply(e);
    }
  }

  async existing(arg: string): Promise<{ path: string; real: string }> {
    const path = this.path(arg);
    return { path, real: await this.ctx.card.existing(path).catch(cardReply) };
  }

  entry(path: string): Promise<CardPath> {
    return this.ctx.card.creatable(path).catch(cardReply);
  }

  takeRest(): number {
    const offset = this.restOffset;
    this.restOffset = 0;
    return offset;
  }

  /** Runs one command line; its failure is its reply (an unexpected one is logged and answered 451). */
  private async run(line: string, utf8: boolean): Promise<void> {
    const space = line.indexOf(" ");
    const verb = (space < 0 ? line : line.slice(0, space)).toUpperCase();
    const arg = space < 0 ? "" : line.slice(space + 1);
    try {
      await this.dispatch(verb, arg, utf8);
    } catch (e) {
      if (e instanceof Reply) this.reply(e.replyCode, e.text);
      else {
        this.ctx.log(`ftp ${this.label}: ${verb.slice(0, 20)} failed: ${(e as Error).message.slice(0, 300)}`);
        this.reply(451, "Local error; please try again.");
      }
    }
  }

  private async dispatch(verb: string, arg: string, utf8: boolean): Promise<void> {
    if (!this.loggedIn && ++this.commandsBeforeLogin > MAX_COMMANDS_BEFORE_LOGIN) {
      await this.close("421 Too many commands before login; closing the connection.");
      return;
    }
    const command = COMMANDS.get(verb);
    if (!this.loggedIn && !command?.beforeLogin) throw new Reply(530, "Please log in with USER and PASS.");
    if (!command?.keepsAllo) this.announced = undefined;
    if (!command?.keepsRest) this.restOffset = 0;
    if (!command?.keepsRename) this.renameFrom = undefined;
    if (!command) throw new Reply(502, `Command not implemented: ${verb.slice(0, 20)}.`);
    // Latin-1 "é" and "è" would both decode to U+FFFD: one name for two files, the first overwritten.
    if (!utf8) throw new Reply(553, "File name not allowed: the command is not valid UTF-8; set the FTP client's encoding to UTF-8.");
    await command.handler(this, arg, verb);
  }
}
