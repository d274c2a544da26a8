// Text that came from a device or another server, made safe to print: a terminal obeys control characters (escape
// sequences set its title, clear the screen, move the cursor), so every one of them is shown as a space.
import { UNPRINTABLE } from "../../shared/unprintable.js";

/** `text` with every control character (C0, DEL, C1; line breaks too) and bidirectional override shown as a space. */
export function blankControls(text: string): string {
  return text.replace(UNPRINTABLE, " ");
}

/** An answer's text cut to its first line, at most 100 characters, control characters blanked. */
export function firstLine(text: string): string {
  const line = blankControls(text.trim().split(/[\r\n]/, 1)[0]!).trim();
  return line.length > 100 ? `${line.slice(0, 100)}…` : line;
}

/** An address as given ("http://user:password@host…", "user:password@host"), its password shown as ***. */
export function hidePassword(host: string): string {
  // The authority ends at the first "/", "?" or "#" (as URL reads it); its user part at its last "@".
  return host.replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?[^/?#@:]*:)([^/?#]*)@/i, (_, head: string) => `${head}***@`);
}
