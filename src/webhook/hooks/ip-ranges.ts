// IP addresses and CIDR ranges for the ip-whitelist match: the reference's checks of "ip-range"
// (space-separated), and the ranges of an "ip-list-file" (ours: one a line, # comments).

/** An address as 4 or 16 bytes, or undefined when it does not parse. */
export function parseIp(s: string): number[] | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(s)) {
    const parts = s.split(".").map(Number);
    if (parts.some((p, i) => p > 255 || (s.split(".")[i]!.length > 1 && s.split(".")[i]!.startsWith("0")))) return undefined;
    return parts;
  }
  if (!s.includes(":") || !/^[0-9a-fA-F:.]+$/.test(s)) return undefined;
  let tail: number[] = [];
  let text = s;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIp(s.slice(lastColon + 1));
    if (v4?.length !== 4) return undefined;
    tail = v4;
    text = s.slice(0, lastColon + 1) + "0:0";
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string): number[] | undefined => {
    if (h === "") return [];
    const out: number[] = [];
    for (const g of h.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      const n = parseInt(g, 16);
      out.push(n >> 8, n & 0xff);
    }
    return out;
  };
  const a = groups(halves[0]!);
  const b = halves.length === 2 ? groups(halves[1]!) : [];
  if (!a || !b) return undefined;
  let bytes: number[];
  if (halves.length === 2) {
    if (a.length + b.length > 14) return undefined;
    bytes = [...a, ...new Array<number>(16 - a.length - b.length).fill(0), ...b];
  } else {
    if (a.length !== 16) return undefined;
    bytes = a;
  }
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function toV4(ip: number[]): number[] | undefined {
  if (ip.length === 4) return ip;
  const mapped = ip.slice(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff;
  return mapped ? ip.slice(12) : undefined;
}

/** A CIDR range ready to check addresses against: an IPv4-mapped IPv6 range of 96 bits or more is its IPv4 range. */
export interface Net {
  bytes: number[];
  bits: number;
}

/** The range "ip/bits" as Go's ParseCIDR and IPNet.Contains see it; undefined when it is not one. */
function parseNet(range: string): Net | undefined {
  const slash = range.indexOf("/");
  const net = parseIp(range.slice(0, slash));
  const bitsText = range.slice(slash + 1);
  const bits = /^\d+$/.test(bitsText) ? Number(bitsText) : NaN;
  if (!net || !(bits <= net.length * 8)) return undefined;
  const v4 = net.length === 16 && bits >= 96 ? toV4(net) : undefined;
  return v4 ? { bytes: v4, bits: bits - 96 } : { bytes: net, bits };
}

/** An address in both forms a range may need: IPv4 (also when IPv4-mapped) and IPv6. */
interface Addr {
  v4: number[] | undefined;
  v6: number[] | undefined;
}

function contains(net: Net, addr: Addr): boolean {
  const bytes = net.bytes.length === 4 ? addr.v4 : addr.v6;
  if (!bytes) return false;
  for (let bit = 0; bit < net.bits; bit++) {
    const mask = 0x80 >> (bit & 7);
    if ((bytes[bit >> 3]! & mask) !== (net.bytes[bit >> 3]! & mask)) return false;
  }
  return true;
}

/** The network of `bytes` under a prefix of `bits`, as a string key. */
function networkKey(bytes: readonly number[], bits: number): string {
  let key = `${bytes.length}/${bits}:`;
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i));
    key += `${bytes[i]! & (0xff00 >> keep) & 0xff}.`;
  }
  return key;
}

/**
 * The ranges of an ip-list-file, parsed once: a check costs a lookup per prefix length the file
 * uses, not a comparison per range (a list of thousands must not make every request dear).
 */
export class NetSet {
  private readonly networks = new Set<string>();
  /** The (address length, prefix length) pairs present. */
  private readonly shapes: [4 | 16, number][] = [];

  constructor(nets: readonly Net[]) {
    const seen = new Set<string>();
    for (const net of nets) {
      this.networks.add(networkKey(net.bytes, net.bits));
      const shape = `${net.bytes.length}/${net.bits}`;
      if (!seen.has(shape)) this.shapes.push([net.bytes.length as 4 | 16, net.bits]);
      seen.add(shape);
    }
  }

  has(addr: Addr): boolean {
    for (const [length, bits] of this.shapes) {
      const bytes = length === 4 ? addr.v4 : addr.v6;
      if (bytes && this.networks.has(networkKey(bytes, bits))) return true;
    }
    return false;
  }
}

/**
 * Whether "ip:port" (IPv6 in brackets) falls in one of the space-separated CIDR ranges (read as the
 * reference does, on each request), or in `nets` (an ip-list-file's, parsed when read).
 */
export function checkIpWhitelist(remoteAddr: string, ipRange: string, nets?: NetSet): boolean {
  let ip = remoteAddr.replace(/^[ [\]]+|[ [\]]+$/g, "");
  const colon = ip.lastIndexOf(":");
  if (colon !== -1) ip = ip.slice(0, colon).replace(/^[ [\]]+|[ [\]]+$/g, "");
  const parsed = parseIp(ip);
  if (!parsed) throw new Error(`invalid IP address found in remote address '${remoteAddr}'`);
  const addr: Addr = { v4: toV4(parsed), v6: parsed.length === 16 ? parsed : undefined };
  for (let range of ipRange.split(/\s+/).filter(Boolean)) {
    if (!range.includes("/")) range += "/32";
    const net = parseNet(range);
    if (!net) throw new Error(`invalid CIDR address: ${range}`);
    if (contains(net, addr)) return true;
  }
  return nets?.has(addr) ?? false;
}

/** The ranges of an ip-list-file's text (a bare address is the range of it alone), or the first line that is not one (from 1). */
export function parseIpList(text: string): Net[] | { line: number; text: string } {
  const out: Net[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") continue;
    const slash = line.indexOf("/");
    const ip = parseIp(slash === -1 ? line : line.slice(0, slash));
    const bitsText = slash === -1 ? String((ip?.length ?? 0) * 8) : line.slice(slash + 1);
    const net = ip && /^\d{1,3}$/.test(bitsText) ? parseNet(`${slash === -1 ? line : line.slice(0, slash)}/${bitsText}`) : undefined;
    if (!net) return { line: i + 1, text: line };
    out.push(net);
  }
  return out;
}
