// Open connections in all and per client address, for the transport's caps (-max-connections,
// -max-connections-per-ip). An IPv6 client counts per /64, the block one host usually holds; a Unix
// socket's clients have no address and count in the total only.
import type { Socket } from "node:net";

export interface ConnectionCaps {
  /** Open connections at once over all clients; 0 is no limit. */
  total: number;
  /** Open connections at once from one address (IPv6: one /64); 0 is no limit. */
  perAddress: number;
}

/** Which cap a refused connection hit. */
export type CapReached = "total" | "address";

/** The address a client is counted under: IPv4 as it is, IPv6 as its /64, undefined for a Unix socket. */
export function clientKey(ip: string | undefined): string | undefined {
  if (ip === undefined || !ip.includes(":")) return ip;
  if (ip.startsWith("::ffff:") && ip.includes(".")) return ip.slice(7);
  const bare = ip.split("%")[0]!;
  const [head = "", tail] = bare.split("::");
  const groups = (part: string): string[] => (part === "" ? [] : part.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g])));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

export class ConnectionCounts {
  private open = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly caps: ConnectionCaps) {}

  /** Counts `socket` until it closes; when a cap is reached, counts nothing and says which. */
  admit(socket: Socket): CapReached | undefined {
    if (this.caps.total > 0 && this.open >= this.caps.total) return "total";
    const key = this.caps.perAddress > 0 ? clientKey(socket.remoteAddress) : undefined;
    const n = key === undefined ? 0 : (this.byAddress.get(key) ?? 0);
    if (key !== undefined && n >= this.caps.perAddress) return "address";
    this.open++;
    if (key !== undefined) this.byAddress.set(key, n + 1);
    socket.once("close", () => {
      this.open--;
      if (key === undefined) return;
      const left = this.byAddress.get(key)! - 1;
      if (left === 0) this.byAddress.delete(key);
      else this.byAddress.set(key, left);
    });
    return undefined;
  }
}
