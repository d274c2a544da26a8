// webdav:// and webdavs:// sources (rclone's webdav back-end). A Nextcloud or ownCloud public share link
// (https://cloud.example/s/TOKEN, here webdavs://cloud.example/s/TOKEN) is read through the server's public WebDAV
// endpoint with the token as user; a path under /remote.php/ is a user's files (an app password as the password),
// read as vendor nextcloud or owncloud, which gives rclone modification times and checksums.
import type { Backend, SourceSecrets } from "./source.js";
import { pathSegments } from "./source.js";

export function webdavBackend(url: URL, user: string, secrets: SourceSecrets, shown: string): Backend {
  const http = url.protocol.toLowerCase() === "webdavs:" ? "https" : "http";
  const segments = pathSegments(url, shown);
  const base = `${http}://${url.host}`;
  const options: Record<string, string> = { type: "webdav", vendor: "other" };
  const share = segments.indexOf("s");
  if (share >= 0 && share === segments.length - 2 && user === "") {
    // A public share link: WebDAV at /public.php/webdav, the token as user, the share's password if it has one.
    const prefix = segments.slice(0, share).map(encodeURIComponent).join("/");
    options.url = `${base}${prefix === "" ? "" : `/${prefix}`}/public.php/webdav/`;
    options.user = segments[share + 1]!;
    options.vendor = "nextcloud";
  } else {
    options.url = `${base}/${segments.map(encodeURIComponent).join("/")}`;
    if (user !== "") options.user = user;
    if (segments.includes("remote.php")) options.vendor = "nextcloud";
  }
  if (secrets.password !== undefined) options.pass = secrets.password;
  // A public link's token is its key: anyone who has it reads the share.
  return { options, path: "", secrets: ["pass"], hidden: options.vendor === "nextcloud" && share >= 0 && user === "" ? [options.user!] : [] };
}
