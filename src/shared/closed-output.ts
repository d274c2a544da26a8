// Every program keeps running when whoever reads its output goes away (`framefi sync | head`, a log pipe whose
// reader died, the launcher killed): without a listener, the next write's EPIPE would end the process, a sync
// midway or a device in FTP mode. What can no longer be written is dropped; there is nowhere left to say so.
export function surviveClosedOutput(): void {
  process.stdout.on("error", () => undefined);
  process.stderr.on("error", () => undefined);
}
