// -options-file: flags kept in a file (adnanh/webhook #326), one per line, as on the command line
// but without shell quoting: "-name value", "-name=value" or "name value" (the value is the rest of
// the line, spaces and all), "-name" alone for a boolean. Blank lines and lines starting with "#"
// are skipped. The flags take effect where -options-file stands among the arguments, so a flag after
// it on the command line wins, and repeatable flags (-hooks, -header) add up.
import { readFileSync } from "node:fs";

/** One flag of a flags file, as an argument, and where it stands ("file:line"). */
export interface FileArgument {
  arg: string;
  where: string;
}

/** The lines of a flags file as "-name=value" / "-name" arguments; throws Error naming the file and line. */
export function readOptionsFile(path: string): FileArgument[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new Error(`cannot read ${path} (${err.code === "ENOENT" ? "no such file or directory" : err.message})`);
  }
  const args: FileArgument[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "").trim();
    if (line === "" || line.startsWith("#")) return;
    const m = /^--?([A-Za-z][\w-]*)(?:[ \t=]\s*(.*))?$/.exec(line) ?? /^([A-Za-z][\w-]*)(?:[ \t=]\s*(.*))?$/.exec(line);
    if (!m) throw new Error(`${path}:${i + 1}: a line holds one flag, such as "-port 9000" or "verbose"`);
    if (m[1] === "options-file") throw new Error(`${path}:${i + 1}: an options file cannot name another options file`);
    args.push({ arg: m[2] === undefined ? `-${m[1]}` : `-${m[1]}=${m[2]}`, where: `${path}:${i + 1}` });
  });
  return args;
}
