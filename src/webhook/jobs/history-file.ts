// The -jobs-file on disk: a header line, then one job per line (JSON), appended each time a job
// changes; the last line of an id wins. Each flush writes only what changed, so its cost follows
// the changes, not the history's size. Once the file is more than twice its size after the last
// rewrite (plus 1 MiB), it is rewritten with one line per job: a new file renamed over the old one,
// written a slice per turn of the event loop, so the server goes on answering meanwhile. The file
// thus holds at most about twice the history (-jobs-keep jobs of -jobs-output bytes) plus 1 MiB.
// A history of version 1 (one JSON document, written whole) is still read, and rewritten as lines.
import { closeSync, openSync, readSync, renameSync, rmSync, writeSync, constants } from "node:fs";
import { isJob, type Job } from "./job.js";

const HEADER = '{"version":2}\n';
/** Slack over twice the size after the last rewrite before the file is rewritten. */
const REWRITE_SLACK = 1 << 20;
/** About this many bytes are written per slice of a rewrite. */
const SLICE_BYTES = 1 << 20;

/** Writes all of `text` at the file's current offset; returns its length in bytes. */
function writeAll(fd: number, text: string): number {
  const b = Buffer.from(text, "utf8");
  for (let off = 0; off < b.length; ) off += writeSync(fd, b, off);
  return b.length;
}

/** One rewrite of the file: a temporary file filled a slice at a time, then renamed over it. */
class Rewrite {
  private readonly fd: number;
  private next = 0;
  private open = true;
  size = 0;

  constructor(
    private readonly path: string,
    private readonly tmp: string,
    private readonly jobs: Job[],
  ) {
    // Created afresh (O_EXCL; mode 0600: outputs may hold secrets): a symlink planted at the temporary name is removed, never followed.
    rmSync(tmp, { force: true });
    this.fd = openSync(tmp, "wx", 0o600);
    this.size = writeAll(this.fd, HEADER);
  }

  /** Writes the next slice; true once every job is written. */
  step(): boolean {
    const lines: string[] = [];
    let bytes = 0;
    while (this.next < this.jobs.length && bytes < SLICE_BYTES) {
      const line = JSON.stringify(this.jobs[this.next++]) + "\n";
      lines.push(line);
      bytes += line.length;
    }
    if (lines.length > 0) this.size += writeAll(this.fd, lines.join(""));
    return this.next >= this.jobs.length;
  }

  finish(): void {
    this.close();
    renameSync(this.tmp, this.path);
  }

  abort(): void {
    this.close();
    rmSync(this.tmp, { force: true });
  }

  private close(): void {
    if (this.open) closeSync(this.fd);
    this.open = false;
  }
}

export class HistoryFile {
  /** Bytes in the file as written here. */
  private size = 0;
  /** Its size after the last rewrite; -1 while it must be rewritten before lines are appended (missing, version 1, a failed write). */
  private rewritten = -1;
  private rewrite: Rewrite | undefined;

  constructor(readonly path: string) {}

  /** Whether the next write must be a rewrite. */
  get due(): boolean {
    return !this.appendable || this.size > 2 * this.rewritten + REWRITE_SLACK;
  }

  /** Whether lines may be appended (else only a rewrite makes the file right). */
  get appendable(): boolean {
    return this.rewritten >= 0;
  }

  /** Whether a rewrite is under way (between its slices). */
  get busy(): boolean {
    return this.rewrite !== undefined;
  }

  /**
   * The job records of the file, in the order written (an id may come several times: the last wins).
   * Throws the fs error when it cannot be read, or Error saying what is wrong when it is not a job history.
   */
  read(): Job[] {
    const jobs: Job[] = [];
    let version = 0;
    let lineNo = 0;
    let cut = false;
    const take = (line: string, last: boolean): void => {
      lineNo++;
      // No newline at the end: a line appended now would continue it.
      cut ||= last;
      if (lineNo === 1) {
        const head = JSON.parse(line) as { version?: unknown; jobs?: unknown };
        if (Array.isArray(head?.jobs)) {
          version = 1;
          for (const [i, j] of head.jobs.entries()) {
            if (!isJob(j)) throw new Error(`job #${i + 1} is malformed`);
            jobs.push(j);
          }
        } else if (head?.version === 2) version = 2;
        else throw new Error('no "jobs" list');
        return;
      }
      if (version === 1) throw new Error("text after the history");
      let job: unknown;
      try {
        job = JSON.parse(line);
      } catch (e) {
        // A crash in the middle of an append cuts the last line: the changes on it are lost, not the history.
        if (last) return;
        throw e;
      }
      if (!isJob(job)) throw new Error(`line ${lineNo} is not a job`);
      jobs.push(job);
    };
    this.size = readLines(this.path, take);
    if (lineNo === 0) throw new Error("the file is empty");
    this.rewritten = version === 2 && !cut ? this.size : -1;
    return jobs;
  }

  /** Appends the jobs' records (synchronously: they are what changed since the last flush). */
  append(jobs: Job[]): void {
    if (jobs.length === 0) return;
    let fd: number | undefined;
    try {
      // Not through a symlink planted at the file's name (a rewrite renames over it instead).
      fd = openSync(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
      this.size += writeAll(fd, jobs.map((j) => JSON.stringify(j) + "\n").join(""));
    } catch (e) {
      this.rewritten = -1;
      throw e;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Rewrites the file with `jobs`, a slice per turn of the event loop. Resolves when done or cancelled; rejects when a write failed. */
  async rewriteSoon(jobs: Job[]): Promise<void> {
    const rw = this.start(jobs);
    try {
      while (!rw.step()) {
        await new Promise((resolve) => setImmediate(resolve));
        if (this.rewrite !== rw) return;
      }
      this.end(rw);
    } catch (e) {
      this.cancel();
      throw e;
    }
  }

  /** Rewrites the file with `jobs` now (shutdown). Throws when a write failed. */
  rewriteNow(jobs: Job[]): void {
    const rw = this.start(jobs);
    try {
      while (!rw.step()) {}
      this.end(rw);
    } catch (e) {
      this.cancel();
      throw e;
    }
  }

  /** Abandons a rewrite under way: the file stays as it was. */
  cancel(): void {
    const rw = this.rewrite;
    this.rewrite = undefined;
    rw?.abort();
  }

  private start(jobs: Job[]): Rewrite {
    this.cancel();
    this.rewrite = new Rewrite(this.path, `${this.path}.${process.pid}.tmp`, jobs);
    return this.rewrite;
  }

  private end(rw: Rewrite): void {
    rw.finish();
    this.rewrite = undefined;
    this.size = this.rewritten = rw.size;
  }
}

/** Calls `take` with each line of the file (without its newline; `last` for a final line with none). Returns the file's size. */
function readLines(path: string, take: (line: string, last: boolean) => void): number {
  const fd = openSync(path, "r");
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    let parts: Buffer[] = [];
    let size = 0;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      size += n;
      let from = 0;
      for (let nl = chunk.indexOf(10, 0); nl >= 0 && nl < n; nl = chunk.indexOf(10, from)) {
        parts.push(chunk.subarray(from, nl));
        const line = Buffer.concat(parts).toString("utf8");
        parts = [];
        from = nl + 1;
        if (line !== "") take(line, false);
      }
      if (from < n) parts.push(Buffer.from(chunk.subarray(from, n)));
    }
    const rest = Buffer.concat(parts).toString("utf8");
    if (rest !== "") take(rest, true);
    return size;
  } finally {
    closeSync(fd);
  }
}
