// What a match reads from files of its own (ours): `secret-file` (a Kubernetes or systemd
// credential) and `ip-list-file` (allowed ranges, one a line). They are read when the hooks file
// loads, so a file that cannot be read, or a bad line, refuses the load as a bad hooks file does;
// a reload (SIGHUP, SIGUSR1, or -hotreload seeing one of them change) reads them again.
import { FROM_FILES, type FromFiles, type MatchRule } from "./hook.js";
import { NetSet, parseIpList } from "./ip-ranges.js";
import { HooksFileError } from "./config.js";
import { readSmallFile } from "../../shared/small-file.js";

/** Largest file read as a secret or an IP list: either is small, and a wrong path must not load a disk image. */
export const MAX_FILE_BYTES = 1 << 20;

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function read(path: string, code: "WEBHOOK_HOOK_SECRET_FILE" | "WEBHOOK_HOOK_IP_LIST_FILE"): string {
  let text: string;
  try {
    text = readSmallFile(path, MAX_FILE_BYTES).toString("utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new HooksFileError(code, { path, reason: err.code === "ENOENT" ? "no such file or directory" : err.message }, { cause: e });
  }
  return text;
}

/** Reads the match's files into it (FROM_FILES); throws HooksFileError when one cannot be read or holds a bad line. */
export function loadMatchFiles(m: MatchRule): void {
  const secretFiles = list(m["secret-file"]);
  const listFile = m["ip-list-file"];
  if (secretFiles.length === 0 && listFile === undefined) return;
  const loaded: FromFiles = { secrets: [], files: new Map() };
  for (const path of secretFiles) {
    const text = read(path, "WEBHOOK_HOOK_SECRET_FILE");
    loaded.files.set(path, text);
    // A credential file often ends with a newline its writer added; the secret is the line.
    const secret = text.replace(/\r?\n$/, "");
    // Blank lines alone are a file emptied by mistake, not a secret: one anybody could sign with.
    if (secret.trim() === "") throw new HooksFileError("WEBHOOK_HOOK_SECRET_FILE_EMPTY", { path });
    loaded.secrets.push(secret);
  }
  if (listFile !== undefined) {
    const text = read(listFile, "WEBHOOK_HOOK_IP_LIST_FILE");
    loaded.files.set(listFile, text);
    const ranges = parseIpList(text);
    if (!Array.isArray(ranges)) {
      const shown = ranges.text.length > 60 ? `${ranges.text.slice(0, 60)}…` : ranges.text;
      throw new HooksFileError("WEBHOOK_HOOK_IP_LIST_LINE", { path: listFile, line: ranges.line, text: JSON.stringify(shown) });
    }
    loaded.ranges = new NetSet(ranges);
  }
  m[FROM_FILES] = loaded;
}

/** The secrets a signature match checks, in order: its `secret` (one or a list), then those of its `secret-file`. */
export function matchSecrets(m: MatchRule): string[] {
  return [...list(m.secret).filter((s) => s !== ""), ...(m[FROM_FILES]?.secrets ?? [])];
}

/** The values a `value` match compares with: its `value` (the reference's "" when absent), or the secrets of its `secret-file`. */
export function matchValues(m: MatchRule): string[] {
  const fromFiles = m[FROM_FILES]?.secrets ?? [];
  if (fromFiles.length === 0) return [m.value ?? ""];
  return m.value === undefined || m.value === "" ? fromFiles : [m.value, ...fromFiles];
}

/** The files a match read, with their text then. */
export function matchFiles(m: MatchRule): ReadonlyMap<string, string> {
  return m[FROM_FILES]?.files ?? new Map();
}

/** The ranges of an ip-whitelist match's ip-list-file, parsed when it was read. */
export function matchNets(m: MatchRule): NetSet | undefined {
  return m[FROM_FILES]?.ranges;
}
