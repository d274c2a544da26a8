// Whether a process is alive, for the files that name their owner by pid (the hook server's -pidfile, the
// client's per-device sync lock).

/** Whether a process with this pid exists (EPERM: it exists, it is just not ours to signal). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
