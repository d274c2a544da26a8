// The console's run list: the jobs kept, newest first, filtered by hook, state, exit code, time
// range and text in the output (or id), as the query string of /console/api/runs says.
import { type Job, summary } from "../jobs/job.js";

/** Runs listed at most. */
const MAX_LISTED = 500;
/** Longest search text, in characters. */
const MAX_QUERY = 200;

export interface RunFilter {
  hook?: string;
  state?: string;
  exitCode?: number;
  /** Milliseconds since the epoch: runs created at or after / before. */
  since?: number;
  until?: number;
  text?: string;
}

/** The filter a query string gives; anything unreadable is left out (it filters nothing). */
export function parseFilter(query: string): RunFilter {
  const p = new URLSearchParams(query);
  const f: RunFilter = {};
  const str = (k: string): string | undefined => {
    const v = p.get(k)?.trim();
    return v ? v.slice(0, MAX_QUERY) : undefined;
  };
  const hook = str("hook");
  if (hook) f.hook = hook;
  const state = str("state");
  if (state) f.state = state;
  const exit = str("exit");
  if (exit !== undefined && /^-?\d{1,4}$/.test(exit)) f.exitCode = Number(exit);
  const since = Date.parse(str("since") ?? "");
  if (!Number.isNaN(since)) f.since = since;
  const until = Date.parse(str("until") ?? "");
  if (!Number.isNaN(until)) f.until = until;
  const text = str("q");
  if (text) f.text = text.toLowerCase();
  return f;
}

export function matches(job: Job, f: RunFilter): boolean {
  if (f.hook !== undefined && job.hook !== f.hook) return false;
  if (f.state !== undefined && job.state !== f.state) return false;
  if (f.exitCode !== undefined && job.exitCode !== f.exitCode) return false;
  const created = Date.parse(job.created);
  if (f.since !== undefined && created < f.since) return false;
  if (f.until !== undefined && created >= f.until) return false;
  if (f.text !== undefined && !job.output.toLowerCase().includes(f.text) && !job.id.toLowerCase().includes(f.text)) return false;
  return true;
}

/** The runs to list (summaries), newest first, and whether more matched. */
export function listRuns(jobs: Job[], f: RunFilter): { runs: ReturnType<typeof summary>[]; more: boolean } {
  const runs: ReturnType<typeof summary>[] = [];
  for (const j of jobs) {
    if (!matches(j, f)) continue;
    if (runs.length === MAX_LISTED) return { runs, more: true };
    runs.push(summary(j));
  }
  return { runs, more: false };
}
