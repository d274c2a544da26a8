// sftp:// sources (rclone's sftp back-end, which speaks SFTP itself: no ssh program). The server's key must be in
// known_hosts (FRAMEFI_SOURCE_KNOWN_HOSTS, default ~/.ssh/known_hosts): rclone trusts any key without one, so a
// missing file is an error. A key file (FRAMEFI_SOURCE_KEY_FILE), else the password. Only the SFTP subsystem is
// used: no remote shell commands (checksums over ssh), so a server that allows SFTP only works.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { FrameFiError } from "../errors.js";
import type { Backend, RemoteSource, SourceSecrets } from "./source.js";
import { pathSegments } from "./source.js";

export function sftpBackend(url: URL, user: string, secrets: SourceSecrets, home: string, shown: string): Backend {
  const segments = pathSegments(url, shown);
  const knownHosts = secrets.knownHosts ?? join(home, ".ssh", "known_hosts");
  if (!existsSync(knownHosts)) throw new FrameFiError("FRAMEFI_SOURCE_NO_KNOWN_HOSTS", { source: shown, file: knownHosts });
  const options: Record<string, string> = {
    type: "sftp",
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? "22" : url.port,
    known_hosts_file: knownHosts,
    shell_type: "none",
    disable_hashcheck: "true",
    ask_password: "false",
    // The server follows links, so `etc -> /etc` in the share would copy /etc to the mirror and the card: a folder
    // source skips links that lead outside it, and SFTP cannot tell where a link leads, so links are skipped.
    skip_links: "true",
  };
  if (user !== "") options.user = user;
  if (secrets.keyFile !== undefined) options.key_file = secrets.keyFile;
  if (secrets.password !== undefined) options.pass = secrets.password;
  // sftp://host/~/photos is relative to the home folder (as curl reads it); any other path is absolute.
  const path = segments[0] === "~" ? segments.slice(1).join("/") : `/${segments.join("/")}`;
  return { options, path, secrets: ["pass"] };
}

/**
 * The refusal rclone reports when the server's key is not in known_hosts, or another one is there for its address
 * (golang.org/x/crypto/ssh/knownhosts' words), as our error; undefined for any other failure.
 */
export function hostKeyError(source: RemoteSource, stderr: readonly string[]): FrameFiError | undefined {
  if (source.kind !== "sftp") return undefined;
  const said = stderr.join("\n");
  const code = /knownhosts: key mismatch/.test(said)
    ? "FRAMEFI_SOURCE_HOST_KEY_MISMATCH"
    : /knownhosts: key is unknown/.test(said)
      ? "FRAMEFI_SOURCE_HOST_KEY_UNKNOWN"
      : undefined;
  if (code === undefined) return undefined;
  const { host: hostname = "", port = "22", known_hosts_file: file = "" } = source.backend.options;
  // As known_hosts writes an address: [host]:port unless the port is 22.
  const host = port === "22" ? hostname : `[${hostname}]:${port}`;
  return new FrameFiError(code, { source: source.display, file, host, hostname, port });
}
