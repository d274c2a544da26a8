// Lines for a stream that something else reads (a log, a pipe): a line after a quiet spell is written at once;
// lines that follow it within BATCH_MS are gathered and written together, so a sync of a thousand photos costs a
// few writes instead of a thousand (each one also wakes whatever reads the stream). What is gathered is written
// when the process exits, and by flush() before a line on another stream, so that it comes after the lines that
// led to it.
const BATCH_MS = 50;

export type BatchedLines = ((line: string) => void) & { flush(): void };

/** Writes each line (a newline is added) to `out`, gathered as above. */
export function batchedLines(out: { write(text: string): unknown }): BatchedLines {
  let gathered = "";
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (gathered === "") return;
    const text = gathered;
    gathered = "";
    out.write(text);
  };
  process.on("exit", flush);
  const write = (line: string): void => {
    if (timer) {
      gathered += line + "\n";
      return;
    }
    out.write(line + "\n");
    timer = setTimeout(flush, BATCH_MS).unref();
  };
  return Object.assign(write, { flush });
}
