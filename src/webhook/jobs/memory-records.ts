// Job records kept in this process (-jobs without -queue): in memory, newest last, at most `keep`
// of them and finished ones no older than `maxAgeMs`. With a file, the history is written there
// shortly after each change (a new file renamed over the old one, so a crash never leaves half a
// file) and read back at start; a file that cannot be read is set aside and the history starts empty.
import { renameSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { FINAL_STATES, isJob, type Job } from "./job.js";
import type { JobRecords } from "./records.js";

export interface RetentionOptions {
  /** Jobs kept at most (the oldest finished ones go first). */
  keep: number;
  /** Finished jobs older than this are forgotten; 0 keeps them until `keep` pushes them out. */
  maxAgeMs: number;
}

export interface MemoryRecordsOptions extends RetentionOptions {
  /** -jobs-file: where the history is kept across restarts; undefined keeps it in memory only. */
  file?: string;
}

/** How long after a change the file is written: a burst of changes costs one write. */
const FLUSH_DELAY_MS = 500;

export class MemoryRecords implements JobRecords {
  private readonly jobs = new Map<string, Job>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: MemoryRecordsOptions,
    /** Where problems with the file are told (the server's log). */
    private readonly warn: (message: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reads the file's history, if any. Never throws: a bad file is set aside, with a warning. */
  load(): void {
    const file = this.opts.file;
    if (file === undefined) return;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT")
        this.warn(`cannot read the jobs file ${file} (${(e as Error).message}); starting with an empty job history`);
      return;
    }
    let jobs: Job[];
    try {
      jobs = parseJobs(text);
    } catch (e) {
      const aside = `${file}.corrupt`;
      try {
        renameSync(file, aside);
      } catch {
        // Left where it is: the next write replaces it.
      }
      this.warn(`the jobs file ${file} is not a job history (${(e as Error).message}); it was moved to ${aside} and the history starts empty`);
      return;
    }
    const at = new Date(this.now()).toISOString();
    for (const job of jobs) {
      if (!FINAL_STATES.has(job.state)) Object.assign(job, { state: "dropped", reason: "the server stopped before the job finished", ended: at });
      this.jobs.set(job.id, job);
    }
    this.prune();
  }

  add(job: Job): void {
    const id = job.id;
    for (let n = 2; this.jobs.has(job.id); n++) job.id = `${id}-${n}`;
    this.jobs.set(job.id, job);
    this.prune();
    this.changed();
  }

  stored(): Promise<void> {
    return Promise.resolve();
  }

  get(id: string): Job | undefined {
    this.prune();
    return this.jobs.get(id);
  }

  list(hook?: string): Job[] {
    this.prune();
    const out: Job[] = [];
    for (const job of this.jobs.values()) if (hook === undefined || job.hook === hook) out.push(job);
    return out.reverse();
  }

  held(): Iterable<Job> {
    return this.jobs.values();
  }

  close(): void {
    this.flush();
  }

  /** Drops finished jobs past their age, then the oldest finished ones beyond `keep`. */
  private prune(): void {
    const { keep, maxAgeMs } = this.opts;
    if (maxAgeMs > 0) {
      const oldest = this.now() - maxAgeMs;
      // Oldest first: past the first job created after the cut-off, none is old enough.
      for (const [id, job] of this.jobs) {
        if (Date.parse(job.created) >= oldest) break;
        if (FINAL_STATES.has(job.state) && Date.parse(job.ended ?? job.created) < oldest) this.jobs.delete(id);
      }
    }
    let excess = this.jobs.size - keep;
    for (const [id, job] of this.jobs) {
      if (excess <= 0) break;
      if (!FINAL_STATES.has(job.state)) continue;
      this.jobs.delete(id);
      excess--;
    }
  }

  changed(): void {
    if (this.opts.file === undefined || this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
    this.flushTimer.unref();
  }

  /** Writes the history to the file now: a temporary file renamed over it (mode 0600: outputs may hold secrets). */
  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const file = this.opts.file;
    if (file === undefined) return;
    this.prune();
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      // Created afresh (O_EXCL): a symlink planted at the temporary name is removed, never followed.
      rmSync(tmp, { force: true });
      writeFileSync(tmp, JSON.stringify({ version: 1, jobs: [...this.jobs.values()] }) + "\n", { mode: 0o600, flag: "wx" });
      renameSync(tmp, file);
    } catch (e) {
      this.warn(`cannot write the jobs file ${file} (${(e as Error).message}); the history stays in memory`);
    }
  }
}

/** The jobs of a history file; throws Error saying what is wrong. */
function parseJobs(text: string): Job[] {
  const data = JSON.parse(text) as unknown;
  if (typeof data !== "object" || data === null || !Array.isArray((data as { jobs?: unknown }).jobs)) throw new Error('no "jobs" list');
  const jobs = (data as { jobs: unknown[] }).jobs;
  for (const [i, j] of jobs.entries()) {
    if (!isJob(j)) throw new Error(`job #${i + 1} is malformed`);
  }
  return jobs as Job[];
}
