// The FTP server's public types: what the device passes in and what it gets back.
import type { LoginThrottle } from "../throttle.js";

/** What changed on the card after an FTP command completed. Paths are card paths ("/album/a.jpg"). */
export type FtpChange =
  | { type: "write"; path: string }
  | { type: "delete"; path: string }
  | { type: "mkdir"; path: string }
  | { type: "rmdir"; path: string }
  | { type: "rename"; from: string; path: string };

/** The card's free space, shared with the device's other writers (the card may be emulated smaller than its filesystem). */
export interface CardSpace {
  /** Starts counting one upload's bytes against the free space, together with every other write in progress. */
  claim(): SpaceClaim;
}

/** Rules for new names and file sizes, such as a FAT card's: a refused name gets 553, a file too big 552. */
export interface NamePolicy {
  /** Why a new entry `name` cannot be created in the folder `folder` (a real path), or undefined. */
  refuse(folder: string, name: string): Promise<string | undefined>;
  /** The largest file the card holds, in bytes. */
  maxFileBytes: number;
}

export interface SpaceClaim {
  /** Claims `bytes` more; false (claiming nothing) when the card cannot hold them. */
  grow(bytes: number): boolean;
  /** Gives the claim back once the upload's outcome is in the card's figures (after onChange for a stored file). */
  release(): void;
}

export interface FtpServerOptions {
  /** The card folder; every client path is confined to it. */
  root: string;
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
  space: CardSpace;
  /** Names and sizes the card cannot hold; every name and size allowed when omitted. */
  names?: NamePolicy;
  /** Failed logins per address: delays and refusals (shared with other login surfaces). */
  throttle: LoginThrottle;
  /** Names the device keeps for itself (its own temp files): never created, listed or reached over FTP. */
  reserved?: (name: string) => boolean;
  /** Called when a file transfer (STOR, APPE, RETR) starts, after the 150 reply, and when it ends, done or not. */
  onTransfer?: (phase: "start" | "end", transfer: { direction: "upload" | "download"; path: string; bytes: number; ok: boolean }) => void;
  /** Called after every completed write, delete, rename, mkdir and rmdir. */
  onChange?: (change: FtpChange) => void;
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
