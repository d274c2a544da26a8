// A session's data side: the data connection PASV, EPSV, PORT and EPRT prepare, the transfer running on it, and
// the reply each transfer ends with. In stream mode a connection carries one transfer; in block mode (MODE B) it
// is kept for the next ones.
import { CardError } from "../card/card.js";
import type { Control } from "./control.js";
import { activeChannel, listenPassive, PassivePort, type DataChannel, type DataSocket } from "./data.js";
import { cardReply, Reply } from "./replies.js";
import { DeviceError } from "../errors.js";
import type { FtpServerOptions } from "./types.js";

export interface FileTransfer {
  direction: "upload" | "download";
  path: string;
}

interface Transfer {
  /** Stops the transfer by destroying its data connection (at once, or as soon as it comes). */
  abort(): void;
  done: Promise<void>;
}

export interface DataChannelContext {
  options: FtpServerOptions;
  control: Control;
  /** The client's address: the only one data connections may come from or go to. */
  peer: string;
  /** What every data connection of the server reads into (see DataSocket). */
  readBuffer: Buffer;
  log: (line: string) => void;
  closing(): boolean;
}

export class SessionData {
  /** MODE B: transfers are framed in blocks and share one data connection, kept open between them. */
  blockMode = false;
  private data: DataChannel | undefined;
  private passivePort: PassivePort | undefined;
  private transfer: Transfer | undefined;
  private abortedByClient = false;

  constructor(private readonly ctx: DataChannelContext) {}

  /** Whether a data connection is prepared for the next transfer. */
  get prepared(): boolean {
    return this.data !== undefined;
  }

  /** ABOR arrived while a transfer runs: stops it now (RFC 959 §4.1.3); ABOR's own turn then answers 226. */
  abortByClient(): void {
    if (!this.transfer) return;
    this.abortedByClient = true;
    this.transfer.abort();
  }

  /** Whether the transfer ABOR answers for was stopped by it (once). */
  takeClientAbort(): boolean {
    const aborted = this.abortedByClient;
    this.abortedByClient = false;
    return aborted;
  }

  /** Stops the transfer in progress, if any (the card taken back). */
  abortTransfer(): void {
    this.transfer?.abort();
  }

  /** Listens for the next data connection (PASV, EPSV); 425 when no port can be had. */
  async passive(label: string): Promise<DataChannel> {
    this.close();
    const { host, passivePortRange } = this.ctx.options;
    let channel: DataChannel;
    try {
      // A port range may be a single port shared by every session (--firmware-ports): then each transfer listens
      // anew and frees the port once connected. Otherwise the session keeps one port.
      if (passivePortRange) channel = await listenPassive(host, this.ctx.peer, passivePortRange, this.ctx.readBuffer);
      else {
        this.passivePort ??= await PassivePort.open(host, this.ctx.peer, this.ctx.readBuffer);
        channel = this.passivePort.next();
      }
    } catch (e) {
      this.ctx.log(`ftp ${label}: passive listen failed: ${(e as Error).message}`);
      throw new Reply(425, "Cannot open a passive data port; try again.");
    }
    if (this.ctx.closing()) {
      // closed while listening: shutdown() could not see these yet
      channel.close();
      this.passivePort?.close();
      throw new Reply(421, "Closing the connection.");
    }
    this.data = channel;
    return channel;
  }

  /** Connects to the client's address when the next transfer starts (PORT, EPRT). */
  active(host: string, port: number): void {
    this.close();
    this.data = activeChannel(host, port, this.ctx.readBuffer);
  }

  /** Drops the prepared data connection. */
  close(): void {
    this.data?.close();
    this.data = undefined;
  }

  /** The session ends: aborts a transfer (removing its partial file), closes the data connection and the port. */
  async shutdown(): Promise<void> {
    this.transfer?.abort();
    this.close();
    this.passivePort?.close();
    await this.transfer?.done.catch(() => undefined);
  }

  /**
   * Opens the prepared data connection, runs `work` on it, and replies 226 or the failure. A file transfer (`file`)
   * is reported to onTransfer when it starts and ends; `work` returns its bytes. In stream mode the connection is
   * closed after the transfer; in block mode it is kept for the next one unless the transfer failed. ABOR and the
   * session closing stop it (Transfer.abort): `work` then sees its socket destroyed.
   */
  async run(work: (socket: DataSocket) => Promise<number> | Promise<void>, file?: FileTransfer): Promise<void> {
    const channel = this.data;
    const keep = this.blockMode;
    if (!keep) this.data = undefined;
    if (!channel) throw new Reply(425, "Use PASV, EPSV or PORT first.");
    const drop = (): void => {
      channel.close();
      if (this.data === channel) this.data = undefined;
    };
    const { control } = this.ctx;
    control.transferring = true;
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
      control.reply(150, "Opening data connection.");
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
      control.reply(226, "Transfer complete.");
      if (!keep) channel.close();
      if (report) this.transferred("end", report);
    })();
    this.transfer = { abort, done };
    try {
      await done;
    } finally {
      this.transfer = undefined;
      control.transferring = false;
    }
  }

  private transferred(phase: "start" | "end", transfer: FileTransfer & { bytes: number; ok: boolean }): void {
    try {
      this.ctx.options.onTransfer?.(phase, transfer);
    } catch (e) {
      this.ctx.log(`ftp: onTransfer failed: ${(e as Error).message}`);
    }
  }
}

/**
 * A transfer's failure → the reply that says why: the card refusing an upload's bytes or its name outranks the
 * transfer being stopped; a lost connection is 426; anything else as the card's refusals are answered.
 */
function failedTransfer(e: unknown, aborted: boolean): never {
  if (e instanceof CardError && (e.row.ftp === 552 || e.code === "DEVICE_NAME_NOT_ALLOWED")) cardReply(e, "upload");
  if (e instanceof DeviceError && e.code === "DEVICE_SHORT_UPLOAD") throw new Reply(e.row.ftp!, e.message);
  if (aborted) throw new Reply(426, "Transfer aborted; the connection was closed.");
  if (e instanceof Reply) throw e;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ERR_STREAM_PREMATURE_CLOSE") throw new Reply(426, "Data connection lost; transfer aborted.");
  return cardReply(e);
}
