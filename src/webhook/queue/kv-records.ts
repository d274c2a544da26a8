// Job records in JetStream key-value storage (-queue): every instance reads and writes the same
// records, so /jobs answers the same everywhere. One key per job, its id (bucket webhook_jobs, file
// storage, one revision kept). Retention as in-process: the bucket forgets a record -jobs-max-age
// after its last change and keeps at most -jobs-keep records (the least recently changed go first).
// With -queue-key-file every record is stored signed (signing.ts) and one that is not signed
// with the key is never read as a record: not by /jobs, not by a request waiting for its job's end.
import {
  DiscardPolicy,
  nanos,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type KV,
  type KvEntry,
  type NatsConnection,
  type NatsError,
} from "nats";
import { isJob, type Job } from "../jobs/job.js";
import type { RetentionOptions } from "../jobs/memory-records.js";
import type { JobRecords } from "../jobs/records.js";
import { type JetStreamPublisher, wrongLastSequence } from "./js-publish.js";
import { JOBS_BUCKET, jobKey, jobKeySubject } from "./names.js";
import type { QueueSigner } from "./signing.js";

/** How long a record's write may take (a key-value put's own default). */
const WRITE_TIMEOUT_MS = 5000;
/** How long reading the records for /jobs may take. */
const READ_TIMEOUT_MS = 5000;
/** Bytes of a record's message left for NATS headers. */
const HEADER_ROOM = 1024;
/** Suffixes tried for an id already taken before giving up. */
const MAX_SUFFIX = 100;

/**
 * A record as stored (sealed by `signer`), in at most `maxBytes` when its output can be cut to fit
 * (its tail is kept, `outputCut` tells). Every record is encoded here and read by decodeRecord.
 */
function encodeRecord(job: Job, maxBytes: number, signer: QueueSigner): Buffer {
  const subject = jobKeySubject(jobKey(job.id));
  let fitted = job;
  let data = signer.seal(subject, Buffer.from(JSON.stringify(fitted)));
  while (data.length > maxBytes && (fitted.output !== "" || (fitted.stderr ?? "") !== "")) {
    const half = (s: string): string => s.slice(Math.ceil(s.length / 2));
    fitted = {
      ...fitted,
      output: half(fitted.output),
      outputCut: job.outputCut ?? Buffer.byteLength(job.output),
      ...(fitted.stderr !== undefined ? { stderr: half(fitted.stderr) } : {}),
    };
    data = signer.seal(subject, Buffer.from(JSON.stringify(fitted)));
  }
  // -jobs-replay: a kept body that still does not fit is given up (the job then cannot be replayed).
  const request = fitted.request;
  if (data.length > maxBytes && request?.body !== undefined) {
    const { body, ...rest } = request;
    fitted = { ...fitted, request: { ...rest, bodyCut: Buffer.byteLength(body, "base64") } };
    data = signer.seal(subject, Buffer.from(JSON.stringify(fitted)));
  }
  return data;
}

/**
 * The record stored on `subject` (its key's subject), or why it is refused (-queue-key-file: not
 * signed with the key); undefined for anything else that is not a record (written by another client).
 */
export function decodeRecord(
  subject: string,
  value: Uint8Array,
  signer: QueueSigner,
): { job: Job; refusal?: never } | { refusal: string; job?: never } | undefined {
  const { data, refusal } = signer.unseal(subject, value);
  if (refusal !== undefined) return { refusal };
  try {
    const v = JSON.parse(Buffer.from(data).toString()) as unknown;
    return isJob(v) ? { job: v } : undefined;
  } catch {
    return undefined;
  }
}

/** The line logged for a record refused by decodeRecord. */
export function refusedRecord(subject: string, refusal: string): string {
  return `NATS queue: ignored a job record on ${subject} with ${refusal} (-queue-key-file)`;
}

export class KvRecords implements JobRecords {
  private readonly writes = new WeakMap<Job, Promise<void>>();
  /** Jobs with a put queued behind an earlier write, not begun yet. */
  private readonly waitingPut = new WeakSet<Job>();
  /** Every write under way, for close. */
  private readonly pending = new Set<Promise<void>>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    /** Writes the records (kv.get, kv.watch and kv.delete stay nats.js's). */
    private readonly publisher: JetStreamPublisher,
    /** The NATS server's max_payload less room for the message's headers. */
    private readonly maxBytes: number,
    private readonly signer: QueueSigner,
    private readonly warn: (message: string) => void,
  ) {}

  /** Opens (creating or re-configuring) the bucket with the retention given; `maxBytes` is the NATS server's max_payload. */
  static async open(
    nc: NatsConnection,
    js: JetStreamClient,
    jsm: JetStreamManager,
    publisher: JetStreamPublisher,
    retention: RetentionOptions & { maxBytes: number },
    signer: QueueSigner,
    warn: (message: string) => void,
  ): Promise<KvRecords> {
    const kv = await js.views.kv(JOBS_BUCKET, { history: 1, storage: StorageType.File });
    const name = `KV_${JOBS_BUCKET}`;
    const { config } = await jsm.streams.info(name);
    // Old records make room for new ones (the bucket default refuses new ones when full). The
    // stream's de-duplication window (unused here) may not outlast max_age.
    const maxAge = nanos(retention.maxAgeMs);
    const duplicates = maxAge > 0 && (config.duplicate_window ?? 0) > maxAge ? { duplicate_window: maxAge } : {};
    await jsm.streams.update(name, { ...config, max_age: maxAge, max_msgs: retention.keep, discard: DiscardPolicy.Old, ...duplicates });
    return new KvRecords(nc, kv, publisher, retention.maxBytes - HEADER_ROOM, signer, warn);
  }

  add(job: Job): void {
    this.write(job, () => this.create(job));
  }

  changed(job: Job): void {
    // A put still waiting for its turn stores the job as it is when it runs: this change is in it.
    if (this.waitingPut.has(job)) return;
    this.waitingPut.add(job);
    this.write(job, async () => {
      this.waitingPut.delete(job);
      const key = jobKey(job.id);
      const data = encodeRecord(job, this.maxBytes, this.signer);
      if (!attemptStarting(job)) {
        await this.publisher.publish(jobKeySubject(key), data, { timeoutMs: WRITE_TIMEOUT_MS });
        return;
      }
      // An attempt starts: nothing waits on this record, not even the command (a later put, on
      // the same connection, is stored after it).
      this.nc.publish(jobKeySubject(key), data);
    });
  }

  stored(job: Job): Promise<void> {
    return this.writes.get(job) ?? Promise.resolve();
  }

  async get(id: string): Promise<Job | undefined> {
    const e = await this.kv.get(jobKey(id));
    return e && e.operation === "PUT" ? this.read(e) : undefined;
  }

  /** A stored entry's record, undefined when it is none; one not signed with the key is logged and ignored. */
  private read(e: KvEntry): Job | undefined {
    const subject = jobKeySubject(e.key);
    const r = decodeRecord(subject, e.value, this.signer);
    if (r?.refusal !== undefined) this.warn(refusedRecord(subject, r.refusal));
    return r?.job;
  }

  /** Removes a record (a job the queue refused: it never existed). */
  async remove(job: Job): Promise<void> {
    await this.stored(job).catch(() => undefined);
    await this.kv.delete(jobKey(job.id));
  }

  /** Reads every record (a hook's are not kept apart: ids are unique over all hooks). */
  async list(hook?: string): Promise<Job[]> {
    const jobs = await this.all();
    return jobs.filter((j) => hook === undefined || j.hook === hook).sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : 0));
  }

  held(): Iterable<Job> {
    return [];
  }

  /** Waits for the writes under way (before the connection is drained). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  /** Runs `step` after the job's earlier writes, so changes are stored in order. */
  private write(job: Job, step: () => Promise<void>): void {
    const next = (this.writes.get(job) ?? Promise.resolve()).catch(() => undefined).then(step);
    const settled = next.catch((e: Error) => this.warn(`cannot store the record of job ${job.id} in the NATS key-value bucket ${JOBS_BUCKET}: ${e.message}`));
    this.writes.set(job, next);
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
  }

  /**
   * Stores a new record; an id another job has gets the next free suffix. Anything else stored there (a
   * deletion, another client's value) is replaced, only if it is still what was read: of requests racing
   * for one id, one gets it.
   */
  private async create(job: Job): Promise<void> {
    const base = job.id;
    let suffix = 2;
    let expect = 0;
    for (let tries = 0; ; tries++) {
      const key = jobKey(job.id);
      try {
        const data = encodeRecord(job, this.maxBytes, this.signer);
        await this.publisher.publish(jobKeySubject(key), data, { expectLastSubjectSeq: expect, timeoutMs: WRITE_TIMEOUT_MS });
        return;
      } catch (e) {
        if (!wrongLastSequence(e) || tries > MAX_SUFFIX) throw e;
        const there = await this.kv.get(key);
        const record = there?.operation === "PUT" && this.read(there) !== undefined;
        if (there && !record && there.revision !== expect) {
          expect = there.revision;
          continue;
        }
        job.id = `${base}-${suffix++}`;
        expect = 0;
      }
    }
  }

  /** Every record, read through a short-lived ordered consumer (the last value of each key). */
  private async all(): Promise<Job[]> {
    const jobs: Job[] = [];
    let initialized = false;
    let watch: Awaited<ReturnType<KV["watch"]>> | undefined;
    // Called once the last value there was has come (at once, within watch(), when there were none).
    watch = await this.kv.watch({ ignoreDeletes: true, initializedFn: () => ((initialized = true), watch?.stop()) });
    if (initialized) watch.stop();
    const w = watch;
    const timer = setTimeout(() => w.stop(new Error(`no answer within ${READ_TIMEOUT_MS}ms`) as NatsError), READ_TIMEOUT_MS);
    try {
      for await (const e of w as AsyncIterable<KvEntry>) {
        if (e.operation !== "PUT") continue;
        const job = this.read(e);
        if (job) jobs.push(job);
      }
    } finally {
      clearTimeout(timer);
    }
    return jobs;
  }
}

/** Whether the job's last change was the start of an attempt (its record is read back by nobody before the attempt ends). */
function attemptStarting(job: Job): boolean {
  const last = job.attempts[job.attempts.length - 1];
  return job.state === "running" && last !== undefined && last.ended === undefined;
}
