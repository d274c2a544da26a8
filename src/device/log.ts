// The device's log on stdout. A line after a quiet spell is written at once; lines that follow it within BATCH_MS
// are gathered and written together, so a sync of a thousand photos costs a few writes instead of a thousand (each
// one also wakes whatever reads the log). What is gathered is written before the process exits, and by flush()
// before a last word on stderr, so that it comes after the lines that led to it.
const BATCH_MS = 50;

export type DeviceLog = ((message: string) => void) & { flush(): void };

export function deviceLog(out: { write(text: string): unknown } = process.stdout): DeviceLog {
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
  const log = (message: string): void => {
    const line = `framefi-device: ${message}\n`;
    if (timer) {
      gathered += line;
      return;
    }
    out.write(line);
    timer = setTimeout(flush, BATCH_MS).unref();
  };
  return Object.assign(log, { flush });
}
