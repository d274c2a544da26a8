// The hook field deduplicate (ours, with -queue): its default and longest window.
import { parseGoDuration } from "../go/duration.js";
import type { Hook } from "../hooks/hook.js";

export const DEDUP_WINDOW_DEFAULT = "10m";
/** 24 hours, in milliseconds: the longest window (how long delivery ids are kept). */
export const MAX_DEDUP_WINDOW = 24 * 3600_000;

/** The hook's de-duplication window in milliseconds; 0 when it does not de-duplicate. */
export function dedupWindowMs(hook: Hook): number {
  return hook.deduplicate?.id ? parseGoDuration(hook.deduplicate.window ?? DEDUP_WINDOW_DEFAULT) : 0;
}
