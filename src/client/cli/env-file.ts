// Reads the firmware scripts' `.env` file (scripts/.env.tmpl of nicholaswilde/frame-fi): shell-style
// KEY=value lines. Supported: `export KEY=…`, "double quotes" (with \" \\ \$ \` escapes), 'single quotes',
// unquoted values ending at whitespace before a `#` comment. Variable expansion is not supported. One section
// of our own may follow the firmware's variables: after a `[frame]` line, keys are the sync's frame profile,
// returned as "frame.KEY" (the firmware's scripts never see them when the section comes last).
import { readFile } from "node:fs/promises";
import { FrameFiError } from "../errors.js";
import { FRAME_KEYS } from "../photos/profile.js";

/** The variables the firmware's sync.sh reads. */
export const ENV_KEYS = ["FTP_HOST", "FTP_USER", "FTP_PASSWORD", "WEB_SERVER_USER", "WEB_SERVER_PASSWORD", "LOCAL_DIR", "REMOTE_DIR"] as const;
export type EnvKey = (typeof ENV_KEYS)[number];
export type EnvValues = Partial<Record<string, string>>;

/** A .env file that cannot be read, or a line of it that is not KEY=value: exit code 2. */
export class EnvFileError extends FrameFiError {
  override name = "EnvFileError";
}

/** The sections a .env file may have, and the keys each takes. */
const SECTIONS: Record<string, readonly string[]> = { frame: Object.keys(FRAME_KEYS) };

/** Parses the text of a .env file; a line that is not KEY=value (or a known [section]) is an error naming the line. */
export function parseEnv(text: string, file = ".env"): EnvValues {
  const values: EnvValues = {};
  let section: string | undefined;
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const header = /^\[\s*([^\]]*?)\s*\]$/.exec(line);
    if (header) {
      if (!Object.hasOwn(SECTIONS, header[1]!)) {
        throw new EnvFileError("FRAMEFI_ENV_UNKNOWN_SECTION", { file, line: i + 1, section: header[1]! });
      }
      section = header[1]!;
      return;
    }
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new EnvFileError("FRAMEFI_ENV_NOT_KEY_VALUE", { file, line: i + 1 });
    const value = parseValue(m[2]!);
    if (value === undefined) throw new EnvFileError("FRAMEFI_ENV_OPEN_QUOTE", { file, line: i + 1, key: m[1]! });
    if (value.rest.trim() !== "" && !/^\s+#/.test(value.rest)) {
      throw new EnvFileError("FRAMEFI_ENV_TEXT_AFTER_VALUE", { file, line: i + 1, key: m[1]! });
    }
    if (section !== undefined && !SECTIONS[section]!.includes(m[1]!)) {
      throw new EnvFileError("FRAMEFI_ENV_UNKNOWN_KEY", { file, line: i + 1, key: m[1]!, section, keys: SECTIONS[section]!.join(", ") });
    }
    values[section === undefined ? m[1]! : `${section}.${m[1]}`] = value.value;
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
