// The FTP server's public types: what the device passes in and what it gets back.
import type { CardFileSystem } from "../card/card.js";
import type { LoginThrottle } from "../auth/throttle.js";

export interface FtpServerOptions {
  /** The card folder; every client path is confined to it. */
  root: string;
  /** Every path and every write goes through the card: it confines paths, names temp files and counts space. */
  card: CardFileSystem;
  /** Address to listen on for control and passive data connections. */
  host: string;
  /** Control port; 0 picks a free one (see `address()`). */
  port: number;
  user: string;
  password: string;
  /** Inclusive range of ports for passive data connections; any free port when omitted. */
  passivePortRange?: [number, number];
  /** IPv4 address announced in PASV replies (when clients reach us through NAT); default: the control connection's local address. */
  publicAddress?: string;
  /** Whether MODE B (block mode: one data connection for many transfers) is offered; the firmware refuses it. */
  blockMode: boolean;
  /** Failed logins per address: delays and refusals (shared with other login surfaces). */
  throttle: LoginThrottle;
  /** Called when a file transfer (STOR, APPE, RETR) starts, after the 150 reply, and when it ends, done or not. */
  onTransfer?: (phase: "start" | "end", transfer: { direction: "upload" | "download"; path: string; bytes: number; ok: boolean }) => void;
  /** One line per notable event (connections, logins, transfers, errors). Never contains a password. */
  log?: (line: string) => void;
}

export interface FtpServer {
  /** Listens; rejects with a clear error when the root is missing or the port is taken. */
  start(): Promise<void>;
  /** Closes every control and data connection, aborts transfers (removing their partial files) and frees the ports. */
  stop(): Promise<void>;
  /** The bound address while started. */
  address(): { host: string; port: number } | undefined;
}

/** What every session of a server shares. */
export interface SessionContext {
  options: FtpServerOptions;
  card: CardFileSystem;
  log: (line: string) => void;
  /** What every data connection of the server reads into (see DataSocket). */
  readBuffer: Buffer;
}
