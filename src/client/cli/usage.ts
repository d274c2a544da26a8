// The CLI's exit codes and the error for a command line that cannot be run as given.

export const EXIT = {
  ok: 0,
  /** The device reported an error (or some files of a sync failed). */
  deviceError: 1,
  usage: 2,
  unreachable: 3,
  auth: 4,
  /** Stopped by Ctrl-C, as shells report SIGINT. */
  interrupted: 130,
} as const;

/** A command line that cannot be run as given: exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
