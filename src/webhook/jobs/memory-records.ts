// Job records kept in this process (-jobs without -queue): in memory, newest last, at most `keep`
// of them and finished ones no older than `maxAgeMs`. With a file (history-file.ts), what changed
// is written there shortly after each change, and the history is read back at start; a file that
// cannot be read is set aside and the history starts empty.
import { renameSync } from "node:fs";
import { HistoryFile } from "./history-file.js";
import { FINAL_STATES, type Job } from "./job.js";
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
  /** Jobs changed since their last line was written. */
  private readonly dirty = new Set<Job>();
  private readonly file: HistoryFile | undefined;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: MemoryRecordsOptions,
    /** Where problems with the file are told (the server's log). */
    private readonly warn: (message: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.file = opts.file === undefined ? undefined : new HistoryFile(opts.file);
  }

  /** Reads the file's history, if any. Never throws: a bad file is set aside, with a warning. */
  load(): void {
    const file = this.file;
    if (file === undefined) return;
    let jobs: Job[];
    try {
      jobs = file.read();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return;
      if (code !== undefined) {
        this.warn(`cannot read the jobs file ${file.path} (${(e as Error).message}); starting with an empty job history`);
        return;
      }
      const aside = `${file.path}.corrupt`;
      try {
        renameSync(file.path, aside);
      } catch {
        // Left where it is: the next write replaces it.
      }
      this.warn(`the jobs file ${file.path} is not a job history (${(e as Error).message}); it was moved to ${aside} and the history starts empty`);
      return;
    }
    for (const job of jobs) {
      // An id used again after its first job was forgotten: the new job goes where new jobs go, last.
      if (this.jobs.get(job.id)?.created !== job.created) this.jobs.delete(job.id);
      this.jobs.set(job.id, job);
    }
    const at = new Date(this.now()).toISOString();
    for (const job of this.jobs.values()) {
      if (FINAL_STATES.has(job.state)) continue;
      Object.assign(job, { state: "dropped", reason: "the server stopped before the job finished", ended: at });
      this.changed(job);
    }
    this.prune();
  }

  add(job: Job): void {
    const id = job.id;
    for (let n = 2; this.jobs.has(job.id); n++) job.id = `${id}-${n}`;
    this.jobs.set(job.id, job);
    this.prune();
    this.changed(job);
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

  changed(job: Job): void {
    if (this.file === undefined) return;
    this.dirty.add(job);
    this.flushSoon();
  }

  private flushSoon(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.flush(), FLUSH_DELAY_MS);
    this.flushTimer.unref();
  }

  /** Writes what changed: appended lines, or the whole history anew when the file is due for it (rewritten a slice at a time). */
  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const file = this.file;
    // A rewrite under way: what changes meanwhile is appended once it is done.
    if (file === undefined || file.busy) return;
    this.prune();
    if (file.due) {
      // Jobs changed before the rewrite are written again after it: harmless, the last line wins.
      file.rewriteSoon([...this.jobs.values()]).then(
        () => this.flushSoon(),
        (e: Error) => this.cannotWrite(e),
      );
      return;
    }
    this.append();
  }

  /** Appends the changed jobs still held (a forgotten job needs no line). */
  private append(): void {
    const jobs = [...this.dirty].filter((j) => this.jobs.get(j.id) === j);
    this.dirty.clear();
    try {
      this.file!.append(jobs);
    } catch (e) {
      // The file is rewritten whole at the next change, so nothing is lost from it.
      this.cannotWrite(e as Error);
    }
  }

  private cannotWrite(e: Error): void {
    this.warn(`cannot write the jobs file ${this.file!.path} (${e.message}); the history stays in memory`);
  }

  /** Shutdown: what changed is written now (a rewrite under way is abandoned, the file then written as it must be). */
  close(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const file = this.file;
    if (file === undefined) return;
    file.cancel();
    this.prune();
    if (file.appendable) {
      this.append();
      return;
    }
    try {
      file.rewriteNow([...this.jobs.values()]);
    } catch (e) {
      this.cannotWrite(e as Error);
    }
  }
}
