// Where job records live, as the JobStore (the one owner of what a job's record says) reads and
// writes them: in this process (MemoryRecords, -jobs) or in JetStream key-value storage shared by
// every instance (KvRecords, -queue).
import type { Job } from "./job.js";

export interface JobRecords {
  /** Keeps a new job; an id already taken (a reused X-Request-Id) gets a suffix (-2, -3…), set in place by the time `stored` resolves. */
  add(job: Job): void;
  /** The job changed: store it again. Changes are stored in the order they were made. */
  changed(job: Job): void;
  /** Resolves once every change of the job so far is stored; rejects when the last one could not be. */
  stored(job: Job): Promise<void>;
  get(id: string): Job | undefined | Promise<Job | undefined>;
  /** The jobs (of one hook, when given), newest first. */
  list(hook?: string): Job[] | Promise<Job[]>;
  /** The unfinished jobs this process alone holds (they end with it); none where other instances carry them on. */
  held(): Iterable<Job>;
  /** Shutdown: what is not stored yet is stored now. */
  close(): void | Promise<void>;
}
