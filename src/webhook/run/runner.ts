// Per-hook concurrency limits (max-concurrency, max-queue): at most `max` commands of a hook run
// at once; later ones wait, first come first served, in a queue of at most `maxQueue` entries.
// This module owns the counts of running and waiting commands per hook id.
import { queueDepth } from "../server/metrics.js";

/**
 * A granted turn: `wait` (when set) resolves true once the command may start, or false when the
 * server shut down first (the command must not run); `release` ends the turn.
 */
export interface Turn {
  wait?: Promise<boolean>;
  release(): void;
}

interface HookSlots {
  running: number;
  /** The limit given by the latest request (a reload may change it). 0 is unlimited. */
  max: number;
  waiting: ((start: boolean) => void)[];
}

const slots = new Map<string, HookSlots>();
let shuttingDown = false;

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
  let started = true;
  const release = (): void => {
    if (released || !started) return;
    released = true;
    hs.running--;
    startWaiting(hook, hs);
  };
  if (max <= 0 || (s.running < max && s.waiting.length === 0)) {
    s.running++;
    return { release };
  }
  if (shuttingDown || s.waiting.length >= maxQueue) return null;
  started = false;
  const wait = new Promise<boolean>((resolve) =>
    hs.waiting.push((start) => {
      started = start;
      resolve(start);
    }),
  );
  queueDepth(hook, s.waiting.length);
  return { wait, release };
}

function startWaiting(hook: string, s: HookSlots): void {
  const queued = s.waiting.length;
  while (s.waiting.length > 0 && (s.max <= 0 || s.running < s.max)) {
    s.running++;
    s.waiting.shift()!(true);
  }
  if (s.waiting.length !== queued) queueDepth(hook, s.waiting.length);
  if (s.running === 0 && s.waiting.length === 0 && slots.get(hook) === s) slots.delete(hook);
}

/** Commands running and waiting now, per hook id (hooks with neither are left out). */
export function turnCounts(): { hook: string; running: number; queued: number }[] {
  return [...slots].map(([hook, s]) => ({ hook, running: s.running, queued: s.waiting.length }));
}

/**
 * Graceful shutdown: commands still waiting for their turn will never start (their requests are
 * answered as failed), and no new ones queue. Returns how many were dropped.
 */
export function dropQueued(): number {
  shuttingDown = true;
  let dropped = 0;
  for (const [hook, s] of slots) {
    for (const drop of s.waiting.splice(0)) {
      drop(false);
      dropped++;
    }
    queueDepth(hook, 0);
  }
  return dropped;
}
