// Debounce (hook field "debounce"): a burst of triggers becomes one run. Each trigger of a hook
// (re)starts its quiet period; when a whole period passes without another trigger, the last
// trigger runs and the earlier ones of the burst are superseded (they never run).

export interface Pending {
  /** Starts the run (the quiet period has passed). */
  run(): void;
  /** A later trigger took this one's place (superseded), or the server is shutting down. */
  drop(reason: string, superseded: boolean): void;
}

export class Debouncer {
  private readonly waiting = new Map<string, { pending: Pending; timer: NodeJS.Timeout }>();

  /** Registers a trigger of `hook`; the one it replaces (if any) is dropped and returned true. */
  trigger(hook: string, quietMs: number, pending: Pending, supersededBy: string): boolean {
    const before = this.waiting.get(hook);
    if (before) {
      clearTimeout(before.timer);
      before.pending.drop(`debounced: superseded by ${supersededBy}`, true);
    }
    const timer = setTimeout(() => {
      this.waiting.delete(hook);
      pending.run();
    }, quietMs);
    this.waiting.set(hook, { pending, timer });
    return before !== undefined;
  }

  /** Shutdown: triggers still waiting out their quiet period never run. Returns how many. */
  dropAll(reason: string): number {
    const n = this.waiting.size;
    for (const { pending, timer } of this.waiting.values()) {
      clearTimeout(timer);
      pending.drop(reason, false);
    }
    this.waiting.clear();
    return n;
  }
}
