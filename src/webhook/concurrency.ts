// Per-hook concurrency limits (max-concurrency, max-queue): at most `max` commands of a hook run
// at once; later ones wait, first come first served, in a queue of at most `maxQueue` entries.
// This module owns the counts of running and waiting commands per hook id.
import { queueDepth } from "./metrics.js";

/** A granted turn: `wait` (when set) resolves once the command may start; `release` ends the turn. */
export interface Turn {
  wait?: Promise<void>;
  release(): void;
}

interface HookSlots {
  running: number;
  /** The limit given by the latest request (a reload may change it). 0 is unlimited. */
  max: number;
  waiting: (() => void)[];
}

const slots = new Map<string, HookSlots>();

/**
 * Takes a turn for one command of `hook`: at once when fewer than `max` run (or max is 0),
 * queued when the queue has room, or null when it is full (the caller answers 429).
 */
export function takeTurn(hook: string, max: number, maxQueue: number): Turn | null {
  let s = slots.get(hook);
  if (!s) slots.set(hook, (s = { running: 0, max, waiting: [] }));
  s.max = max;
  const hs = s;
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    hs.running--;
    startWaiting(hook, hs);
  };
  if (max <= 0 || (s.running < max && s.waiting.length === 0)) {
    s.running++;
    return { release };
  }
  if (s.waiting.length >= maxQueue) return null;
  const wait = new Promise<void>((resolve) => hs.waiting.push(resolve));
  queueDepth(hook, s.waiting.length);
  return { wait, release };
}

function startWaiting(hook: string, s: HookSlots): void {
  const queued = s.waiting.length;
  while (s.waiting.length > 0 && (s.max <= 0 || s.running < s.max)) {
    s.running++;
    s.waiting.shift()!();
  }
  if (s.waiting.length !== queued) queueDepth(hook, s.waiting.length);
  if (s.running === 0 && s.waiting.length === 0 && slots.get(hook) === s) slots.delete(hook);
}

/** Commands running and waiting now, per hook id (hooks with neither are left out). */
export function turnCounts(): { hook: string; running: number; queued: number }[] {
  return [...slots].map(([hook, s]) => ({ hook, running: s.running, queued: s.waiting.length }));
}
