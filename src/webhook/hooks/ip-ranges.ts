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

/** Whether "ip:port" (IPv6 in brackets) falls in one of the space-separated CIDR ranges. */
export function checkIpWhitelist(remoteAddr: string, ipRange: string): boolean {
  let ip = remoteAddr.replace(/^[ [\]]+|[ [\]]+$/g, "");
  const colon = ip.lastIndexOf(":");
  if (colon !== -1) ip = ip.slice(0, colon).replace(/^[ [\]]+|[ [\]]+$/g, "");
  const parsed = parseIp(ip);
  if (!parsed) throw new Error(`invalid IP address found in remote address '${remoteAddr}'`);
  for (let range of ipRange.split(/\s+/).filter(Boolean)) {
    if (!range.includes("/")) range += "/32";
    const slash = range.indexOf("/");
    const net = parseIp(range.slice(0, slash));
    const bitsText = range.slice(slash + 1);
    const bits = /^\d+$/.test(bitsText) ? Number(bitsText) : NaN;
    if (!net || !(bits <= net.length * 8)) throw new Error(`invalid CIDR address: ${range}`);
    const netBytes = net.length === 4 ? net : toV4(net) && bits >= 96 ? toV4(net)! : net;
    const netBits = net.length === 16 && netBytes.length === 4 ? bits - 96 : bits;
    const addr = netBytes.length === 4 ? toV4(parsed) : parsed.length === 16 ? parsed : undefined;
    if (!addr || addr.length !== netBytes.length) continue;
    let inside = true;
    for (let bit = 0; bit < netBits; bit++) {
      const byte = bit >> 3;
      const mask = 0x80 >> (bit & 7);
      if ((addr[byte]! & mask) !== (netBytes[byte]! & mask)) {
        inside = false;
        break;
      }
    }
    if (inside) return true;
  }
  return false;
}

/** The ranges of an ip-list-file's text, each with its prefix length, or the first line that is not one (from 1). */
export function parseIpList(text: string): string[] | { line: number; text: string } {
  const out: string[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") continue;
    const slash = line.indexOf("/");
    const ip = parseIp(slash === -1 ? line : line.slice(0, slash));
    const bitsText = slash === -1 ? String((ip?.length ?? 0) * 8) : line.slice(slash + 1);
    const bits = /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
    if (!ip || !(bits <= ip.length * 8)) {
      return { line: i + 1, text: line };
    }
    out.push(`${slash === -1 ? line : line.slice(0, slash)}/${bits}`);
  }
  return out;
}
