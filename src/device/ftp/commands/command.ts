// An FTP command as the registry holds it (as ftp-srv's commands): the verbs it answers to, when it may run, and
// its handler, which replies through the session or throws a Reply.
import type { CardPath } from "../../card/card.js";
import type { SessionData } from "../data-channel.js";
import type { Fact } from "../listing.js";
import type { SessionContext } from "../types.js";

export interface Command {
  /** The verb and its aliases (RFC 775's X-verbs). */
  verbs: readonly string[];
  /** Allowed before login. */
  beforeLogin?: boolean;
  /** Keeps a REST offset for the transfer that follows (a transfer consumes it itself). */
  keepsRest?: boolean;
  /** Keeps the size ALLO announced for the next upload. */
  keepsAllo?: boolean;
  /** Keeps the name RNFR chose (only RNTO, which takes it). */
  keepsRename?: boolean;
  handler(session: CommandSession, arg: string, verb: string): void | Promise<void>;
}

/** What a command sees of its session: its state, its replies, and the card paths its arguments name. */
export interface CommandSession {
  readonly ctx: SessionContext;
  /** The client's address and port, for log lines. */
  readonly label: string;
  /** The client's address ("::ffff:" stripped). */
  readonly peer: string;
  /** The address the client reached us on (what PASV announces unless told otherwise). */
  readonly localAddress: string | undefined;
  readonly data: SessionData;
  /** Aborted when the session closes: ends a throttled login's wait. */
  readonly ending: AbortSignal;
  readonly closing: boolean;
  user: string | undefined;
  loggedIn: boolean;
  cwd: string;
  facts: Set<Fact>;
  /** The size ALLO announced for the next upload. */
  announced: number | undefined;
  restOffset: number;
  renameFrom: string | undefined;
  reply(code: number, text: string, lines?: string[]): void;
  close(goodbye?: string): Promise<void>;
  /** The login succeeded: the session may run every command. */
  loginSucceeded(): void;
  /** A failed login; returns how many this session had. */
  loginFailed(): number;
  /** The card path a client argument names ("/a/b"); a Reply when it cannot name one. */
  path(arg: string): string;
  /** The card path an argument names and the real path of what is there; a Reply when nothing is. */
  existing(arg: string): Promise<{ path: string; real: string }>;
  /** The entry at a card path itself, to make, remove or rename it (a symlink stays a link); its folder must exist. */
  entry(path: string): Promise<CardPath>;
  /** The REST offset, consumed. */
  takeRest(): number;
}
