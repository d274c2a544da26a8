// smb:// sources (rclone's smb back-end: SMB2 and SMB3, no kernel mount, no smbclient): smb://user@host/share/path,
// the password from FRAMEFI_SOURCE_PASSWORD (none: a guest login). A user written DOMAIN;user gives the domain.
import { FrameFiError } from "../errors.js";
import type { Backend, SourceSecrets } from "./source.js";
import { pathSegments } from "./source.js";

export function smbBackend(url: URL, user: string, secrets: SourceSecrets, shown: string): Backend {
  const segments = pathSegments(url, shown);
  if (segments.length === 0) throw new FrameFiError("FRAMEFI_SOURCE_BAD_URL", { source: shown, problem: "it names no share: smb://host/share/folder" });
  const options: Record<string, string> = { type: "smb", host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port: url.port === "" ? "445" : url.port };
  const [domain, name] = user.includes(";") ? user.split(";", 2) : [undefined, user];
  if (domain) options.domain = domain;
  options.user = name || "guest";
  if (secrets.password !== undefined) options.pass = secrets.password;
  return { options, path: segments.join("/"), secrets: ["pass"] };
}
