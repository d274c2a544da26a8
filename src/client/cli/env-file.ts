// Reads the firmware scripts' `.env` file (scripts/.env.tmpl of nicholaswilde/frame-fi): shell-style
// KEY=value lines. Supported: `export KEY=…`, "double quotes" (with \" \\ \$ \` escapes), 'single quotes',
// unquoted values ending at whitespace before a `#` comment. Variable expansion is not supported. Sections of
// our own may follow the firmware's variables (the firmware's scripts never see them when they come last): after
// a `[frame]` line, keys are the sync's frame profile; `[frame NAME]` is one of several frames (its address,
// folder, logins and profile), `[profile NAME]` a profile frames share, `[collection NAME]` a named set of photos.
// A section's keys are returned as "SECTION.KEY" ("frame kitchen.HOST"), upper-cased.
import { readFile } from "node:fs/promises";
import { FrameFiError } from "../errors.js";
import { FRAME_KEYS } from "../photos/profile.js";
import { LAYOUT_KEYS } from "../sync/layout.js";

/** The variables the firmware's sync.sh reads. */
export const ENV_KEYS = ["FTP_HOST", "FTP_USER", "FTP_PASSWORD", "WEB_SERVER_USER", "WEB_SERVER_PASSWORD", "LOCAL_DIR", "REMOTE_DIR"] as const;
export type EnvKey = (typeof ENV_KEYS)[number];
export type EnvValues = Partial<Record<string, string>>;

/** A .env file that cannot be read, or a line of it that is not KEY=value: exit code 2. */
export class EnvFileError extends FrameFiError {
  override name = "EnvFileError";
}

const PROFILE_KEYS = [...Object.keys(FRAME_KEYS), ...LAYOUT_KEYS];
/** Where a frame of several is, how to log in, what it shows. */
export const FRAME_SECTION_KEYS = [
  "HOST",
  "SOURCE",
  "REMOTE_DIR",
  "WEB_SERVER_USER",
  "WEB_SERVER_PASSWORD",
  "FTP_USER",
  "FTP_PASSWORD",
  "FTP_PORT",
  "SOURCE_PASSWORD",
  "SOURCE_KEY_FILE",
  "SOURCE_KNOWN_HOSTS",
  "PROFILE",
  ...PROFILE_KEYS,
];
export const COLLECTION_KEYS = ["SOURCE", "FOLDER", "FROM", "TO", "KEYWORDS"];
/** A frame's, profile's or collection's name: what a command line and an MQTT option can carry safely. */
export const SECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** The keys a section takes, by its header: "frame", "frame NAME", "profile NAME", "collection NAME". */
function sectionKeys(header: string): readonly string[] | undefined {
  const [kind, name, ...rest] = header.split(/\s+/);
  if (rest.length > 0 || (name !== undefined && !SECTION_NAME.test(name))) return undefined;
  if (kind === "frame") return name === undefined ? PROFILE_KEYS : FRAME_SECTION_KEYS;
  if (name === undefined) return undefined;
  if (kind === "profile") return PROFILE_KEYS;
  if (kind === "collection") return COLLECTION_KEYS;
  return undefined;
}

/** The names of the sections of a kind ("frame" → the NAMEs of every [frame NAME]), in the file's order. */
export function sectionNames(values: EnvValues, kind: string): string[] {
  const names = new Set<string>();
  for (const key of Object.keys(values)) {
    const m = /^(\S+) (\S+)\./.exec(key);
    if (m?.[1] === kind) names.add(m[2]!);
  }
  return [...names];
}

/** Parses the text of a .env file; a line that is not KEY=value (or a known [section]) is an error naming the line. */
export function parseEnv(text: string, file = ".env"): EnvValues {
  const values: EnvValues = {};
  let section: string | undefined;
  let keys: readonly string[] = [];
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const header = /^\[\s*([^\]]*?)\s*\]$/.exec(line);
    if (header) {
      const name = header[1]!.replace(/\s+/g, " ");
      const known = sectionKeys(name);
      if (!known) throw new EnvFileError("FRAMEFI_ENV_UNKNOWN_SECTION", { file, line: i + 1, section: header[1]! });
      section = name;
      keys = known;
      return;
    }
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new EnvFileError("FRAMEFI_ENV_NOT_KEY_VALUE", { file, line: i + 1 });
    const value = parseValue(m[2]!);
    if (value === undefined) throw new EnvFileError("FRAMEFI_ENV_OPEN_QUOTE", { file, line: i + 1, key: m[1]! });
    if (value.rest.trim() !== "" && !/^\s+#/.test(value.rest)) {
      throw new EnvFileError("FRAMEFI_ENV_TEXT_AFTER_VALUE", { file, line: i + 1, key: m[1]! });
    }
    // Our sections' keys are case-blind (host= or HOST=); the firmware's variables are not.
    const key = section === undefined ? m[1]! : m[1]!.toUpperCase();
    if (section !== undefined && !keys.includes(key)) {
      throw new EnvFileError("FRAMEFI_ENV_UNKNOWN_KEY", { file, line: i + 1, key: m[1]!, section, keys: keys.join(", ") });
    }
    values[section === undefined ? key : `${section}.${key}`] = value.value;
  });
  return values;
}

/** The value, and what follows a quoted value on its line (only a comment may). */
function parseValue(text: string): { value: string; rest: string } | undefined {
  if (text.startsWith('"')) {
    let out = "";
    for (let i = 1; i < text.length; i++) {
      const c = text[i]!;
      if (c === "\\" && i + 1 < text.length && '"\\$`'.includes(text[i + 1]!)) out += text[++i];
      else if (c === '"') return { value: out, rest: text.slice(i + 1) };
      else out += c;
    }
    return undefined;
  }
  if (text.startsWith("'")) {
    const end = text.indexOf("'", 1);
    return end < 0 ? undefined : { value: text.slice(1, end), rest: text.slice(end + 1) };
  }
  // Unquoted, the shell ends the value at the first blank: what follows is not part of it.
  const [value = "", ...rest] = text
    .replace(/\s+#.*$/, "")
    .trim()
    .split(/\s+/);
  return { value, rest: rest.join(" ") };
}

/** Reads `path` if it exists; a missing file is an empty set of values. */
export async function readEnvFile(path: string): Promise<EnvValues> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new EnvFileError("FRAMEFI_ENV_UNREADABLE", { file: path, reason: (e as NodeJS.ErrnoException).code ?? (e as Error).message });
  }
  return parseEnv(text, path);
}
