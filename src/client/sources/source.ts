// What `framefi sync SOURCE` reads: a folder on this machine, or a share — webdav:// and webdavs:// (Nextcloud,
// ownCloud, any WebDAV server), sftp://, smb:// — fetched into a local mirror first (rclone.ts), so that the plan,
// the photo pipeline and its cache see a folder either way. Secrets never stand in SOURCE: the password comes from
// FRAMEFI_SOURCE_PASSWORD, an SFTP key from FRAMEFI_SOURCE_KEY_FILE.
import { FrameFiError } from "../errors.js";
import { smbBackend } from "./smb.js";
import { sftpBackend } from "./sftp.js";
import { webdavBackend } from "./webdav.js";

export type SourceKind = "webdav" | "sftp" | "smb";

/** Where a share's secrets come from: the environment (or the config file's values, merged in by the caller). */
export interface SourceSecrets {
  password?: string | undefined;
  /** SFTP: a private key file. */
  keyFile?: string | undefined;
  /** SFTP: the known_hosts file that must hold the server's key; default ~/.ssh/known_hosts. */
  knownHosts?: string | undefined;
}

/** One rclone remote, as its options (type included); `path` is what follows "remote:" on rclone's command line. */
export interface Backend {
  options: Record<string, string>;
  path: string;
  /** Options that are secrets: obscured for rclone and never shown. */
  secrets: string[];
  /** Values never shown though rclone takes them plainly (a public share link's token). */
  hidden?: string[];
}

export interface RemoteSource {
  kind: SourceKind;
  /** The source as it may be shown: user, host and path, never a password nor a share link's token. */
  display: string;
  /** What tells this source from any other (its local mirror's name): the URL, never shown. */
  key: string;
  backend: Backend;
}

/** A source given as a URL (a scheme of ours); anything else is a folder. */
export function isRemoteSource(text: string): boolean {
  return /^(webdavs?|sftp|smb):\/\//i.test(text);
}

/** The URL's decoded path segments; ".", ".." and empty segments are refused (they would name another folder). */
export function pathSegments(url: URL, source: string): string[] {
  const parts = url.pathname.split("/").filter((p) => p !== "");
  const decoded = parts.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source, problem: "a path part is not valid percent-encoding" });
    }
  });
  for (const p of decoded) {
    if (p === "." || p === ".." || /[\0-\x1f\x7f/\\]/.test(p)) {
      throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source, problem: 'its path has ".", "..", a control character or an encoded slash' });
    }
  }
  return decoded;
}

/** SOURCE as an error may show it: a password in it as ***. The login ends at the last @ before the path ("u@x:pw@h"). */
export function hideSourcePassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:]*):[^/]*@/i, "$1:***@");
}

/** Reads SOURCE (a URL); a password in it, or an unusable URL, is an error that shows it without the password. */
export function parseRemoteSource(text: string, secrets: SourceSecrets, home: string): RemoteSource {
  let url: URL;
  const shown = hideSourcePassword(text);
  try {
    url = new URL(text);
  } catch {
    // What does not parse may hold a password with a / in it ("u:p/w@h"): only its scheme is shown.
    const scheme = /^[a-z][a-z0-9+.-]{0,15}:\/\//i.exec(text)?.[0];
    throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: scheme ? `${scheme}…` : "the source", problem: "it is not a URL" });
  }
  if (url.password !== "") throw new FrameFiError("FRAMEFI_SOURCE_PASSWORD_IN_URL", { source: shown });
  if (url.search !== "" || url.hash !== "") throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: "it has a ? query or a # part" });
  if (url.hostname === "") throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: "it has no host" });
  const kind = url.protocol.slice(0, -1).toLowerCase();
  if (!isRemoteSource(`${kind}://`)) throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: `${kind}:// is not one framefi reads` });
  // A host of dots would read as a path segment wherever the URL is joined.
  if (/^\.+$/.test(url.hostname)) throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: "its host is only dots" });
  let user: string;
  try {
    user = decodeURIComponent(url.username);
  } catch {
    throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: "the user is not valid percent-encoding" });
  }
  if (/[\0-\x1f\x7f]/.test(user)) throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: "the user has a control character" });
  const display = `${url.protocol}//${url.username === "" ? "" : `${url.username}@`}${url.host}${url.pathname.replace(/\/$/, "")}`;
  const backend =
    kind === "sftp"
      ? sftpBackend(url, user, secrets, home, shown)
      : kind === "smb"
        ? smbBackend(url, user, secrets, shown)
        : webdavBackend(url, user, secrets, shown);
  let shownPath = display;
  for (const h of backend.hidden ?? []) shownPath = shownPath.split(encodeURIComponent(h)).join("***");
  return { kind: kind === "webdavs" ? "webdav" : (kind as SourceKind), display: shownPath, key: display, backend };
}
