// Questions asked on the terminal: a password without echo (as curl does) and a yes/no confirmation.
// Both need a terminal on stdin; the prompts go to stderr so stdout stays clean for scripts.
import { FrameFiError } from "../errors.js";

/** Ctrl-C at a prompt. */
export class PromptInterrupted extends FrameFiError {
  override name = "PromptInterrupted";
  constructor() {
    super("FRAMEFI_PROMPT_INTERRUPTED", {});
  }
}

export function haveTerminal(): boolean {
  return process.stdin.isTTY === true;
}

/** Reads one line from the terminal in raw mode; `echo` false shows nothing of what is typed. */
function readTerminalLine(prompt: string, echo: boolean): Promise<string> {
  const stdin = process.stdin;
  // Echo off before the prompt shows: whatever is typed after seeing it is never echoed by the terminal.
  stdin.setRawMode(true);
  process.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let line = "";
    const finish = (err?: Error): void => {
      stdin.off("data", onData);
      stdin.off("error", finish);
      try {
        stdin.setRawMode(false);
      } catch {
        // a terminal that hung up has no mode left to restore
      }
      stdin.pause();
      process.stderr.write("\n");
      if (err) reject(err);
      else resolve(line);
    };
    const onData = (chunk: Buffer | string): void => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return finish();
        if (ch === "\u0003") return finish(new PromptInterrupted());
        if (ch === "\u0004") {
          if (line === "") return finish();
          continue;
        }
        if (ch === "\u007f" || ch === "\b") {
          if (line.length > 0) {
            line = [...line].slice(0, -1).join("");
            if (echo) process.stderr.write("\b \b");
          }
          continue;
        }
        if (ch < " ") continue;
        line += ch;
        if (echo) process.stderr.write(ch);
      }
    };
    stdin.resume();
    stdin.on("data", onData);
    stdin.once("error", finish); // the terminal hung up (EIO): the prompt fails like an interrupted one
  });
}

/** Asks for a password without echoing it. */
export function askPassword(prompt: string): Promise<string> {
  return readTerminalLine(prompt, false);
}

/** Asks a yes/no question; only "y" or "yes" (any case) is yes. */
export async function confirm(question: string): Promise<boolean> {
  const answer = await readTerminalLine(`${question} [y/N] `, true);
  return /^(y|yes)$/i.test(answer.trim());
}
