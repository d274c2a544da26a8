// RFC 3659 time-vals (YYYYMMDDHHMMSS in UTC), as MDTM, MFMT and MLSD's "modify" fact carry them: the device's FTP
// server writes and reads them, the client sends them with MFMT.
const two = (n: number): string => String(n).padStart(2, "0");

/** RFC 3659 time-val: YYYYMMDDHHMMSS in UTC. */
export function timeVal(d: Date): string {
  return `${String(d.getUTCFullYear()).padStart(4, "0")}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}`;
}

/** Parses an RFC 3659 time-val (fractional seconds allowed); undefined when malformed. */
export function parseTimeVal(s: string): Date | undefined {
  if (!TIME_VAL.test(s)) return undefined;
  const at = (from: number, to: number): number => Number(s.slice(from, to));
  const mo = at(4, 6);
  const d = at(6, 8);
  const ms = s.length > 15 ? Number(s.slice(15).padEnd(3, "0")) : 0;
  const date = new Date(Date.UTC(at(0, 4), mo - 1, d, at(8, 10), at(10, 12), at(12, 14), ms));
  return date.getUTCMonth() === mo - 1 && date.getUTCDate() === d ? date : undefined;
}

const TIME_VAL = /^\d{14}(?:\.\d{1,3})?$/;
