// FTP path arithmetic: a client's argument names a card path relative to the session's folder. What the path
// leads to (and whether it stays inside the card) is the card's to say: see card/card.ts.
import { posix } from "node:path";
import { CardError } from "../card/card.js";

/** The card path ("/a/b") a client argument names, relative to `cwd`; `..` stops at the card's root. */
export function cardPath(cwd: string, arg: string): string {
  if (arg.includes("\0")) throw new CardError("DEVICE_NUL_IN_PATH", {});
  // A plain name in the current folder (a sync's every file) needs no normalising: `cwd` is normalised already.
  if (arg !== "" && arg !== "." && arg !== ".." && !arg.includes("/")) return cwd === "/" ? "/" + arg : cwd + "/" + arg;
  const joined = posix.normalize(arg.startsWith("/") ? arg : posix.join(cwd, arg));
  const clamped = posix.normalize(posix.join("/", joined));
  return clamped.length > 1 && clamped.endsWith("/") ? clamped.slice(0, -1) : clamped;
}
