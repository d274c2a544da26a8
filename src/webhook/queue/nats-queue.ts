// The shared queue on NATS JetStream (-queue nats://HOST:PORT). Each hook has its own durable
// stream (file storage, work-queue retention) and one pull consumer every instance pulls from:
// - max-concurrency over all instances is the consumer's max_ack_pending: a job is acked when its
//   command has ended, and kept alive with in-progress acks while it runs;
// - max-queue is the stream's max_msgs (max-concurrency + max-queue, new messages refused: 429);
// - a job whose instance died is redelivered after ack_wait (-queue-ack-wait);
// - de-duplication: the first job id of a delivery is kept in a key-value bucket (an atomic
//   create), and the delivery id is also the message id JetStream de-duplicates within the window;
// - every job's record lives in a key-value bucket (kv-records.ts), written before the job is
//   published and at each change; the attempt number is the record's;
// - retry: a failed attempt goes back to the stream (nak with the backoff delay), so any instance
//   runs the next one; debounce: a pulled job waits out its quiet period (nak with the time left)
//   and is dropped when a later trigger of its hook is in the stream; rate-limit: one window per
//   hook in a key-value bucket, counted with compare-and-set;
// - output of captured and streamed hooks travels on a core NATS subject the receiving instance
//   subscribed to before publishing the job; the end is the job's final record, which that
//   instance receives as it is stored and otherwise reads back (after a reconnect, and every few
//   seconds), so a lost message never leaves a request without its answer;
// - -queue-key-file (signing.ts): job messages, output chunks and job records are signed, and
//   what is not signed with the key is refused: a job message runs nothing, a chunk is not output,
//   a record neither ends a waiting request nor shows in /jobs. An instance without the key leaves
//   signed jobs to the instances with it; a request whose job left the stream without its record
//   ending (refused by an instance with another key, or none) is answered with an error.
import { type ErrorArgs, WebhookError } from "../errors.js";
import { randomUUID } from "node:crypto";
import {
  AckPolicy,
  connect,
  DiscardPolicy,
  headers as natsHeaders,
  nanos,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  type NatsError,
  type StoredMsg,
  type Subscription,
} from "nats";
import type { HookRequest } from "../hooks/hook.js";
import { FINAL_STATES, isJob, type Job } from "../jobs/job.js";
import { JetStreamPublisher } from "./js-publish.js";
import { decodeRecord, KvRecords, refusedRecord } from "./kv-records.js";
import type { RetentionOptions } from "../jobs/memory-records.js";
import { JobStore } from "../jobs/store.js";
import type { Log } from "../log/log.js";
import { compareSigning, DeliveryClaims, RateWindows } from "./kv-state.js";
import { jobRecordSubject, jobSubject, streamName } from "./names.js";
import { received } from "./received.js";
import { QueueSigner } from "./signing.js";
import {
  decodeRequest,
  encodeRequest,
  type JobOutcome,
  type JobRunner,
  type JobSubmission,
  type QueueHook,
  type RateVerdict,
  type SharedQueue,
  type Submitted,
} from "./queue.js";
import { begin } from "../trace/trace.js";

export class QueueConnectError extends WebhookError {
  constructor(
    ...args: ErrorArgs<
      "WEBHOOK_QUEUE_NOT_A_URL" | "WEBHOOK_QUEUE_SCHEME" | "WEBHOOK_QUEUE_UNREACHABLE" | "WEBHOOK_QUEUE_NO_JETSTREAM" | "WEBHOOK_QUEUE_NO_BUCKET"
    >
  ) {
    super(...args);
    this.name = "QueueConnectError";
  }
}

export interface NatsQueueOptions {
  /** -queue: one or more comma-separated nats:// or tls:// URLs, optionally with user:password@. */
  url: string;
  /** How long a job may go without an ack or heartbeat before another instance gets it. */
  ackWaitMs: number;
  log: Log;
  /** Runs the jobs pulled here. */
  runner: JobRunner;
  /** The shared job records: retention (-jobs-keep, -jobs-max-age) and output kept (-jobs-output). */
  jobs: RetentionOptions & { outputBytes: number };
  /** -queue-key-file: signs what this instance publishes and stores, and refuses what is not signed with the key (without a key, neither). */
  signer: QueueSigner;
}

/** The job as it travels in the stream. */
interface JobMessage {
  id: string;
  hook: string;
  req: Record<string, unknown>;
  /** Core NATS subject prefix for output chunks (".o"); absent when nobody waits. */
  reply?: string;
  /** debounce: the hook's quiet period in ms. */
  debounce?: number;
  /** The job's record as stored before the message was published: its first delivery starts from it instead of reading it back. */
  record?: Job;
}

/** A request waiting for its job's end. */
interface Waiter {
  result: Promise<JobOutcome>;
  cancel(): void;
  /** The job's message is in the stream at `seq`: from now on, its leaving without an end is noticed. */
  published(stream: string, seq: number): void;
}

/** Our reply subjects: what a job message may name (never another subject of the NATS account). */
const REPLY = /^webhook\.out\.[0-9a-f-]{36}$/;

/** A job message as it is published. Every job message is encoded here and read by parseJobMessage. */
function encodeJobMessage(msg: JobMessage): Buffer {
  return Buffer.from(JSON.stringify(msg));
}

/** A job message as published by submit(); throws Error saying what is wrong with anything else. */
function parseJobMessage(data: Uint8Array): JobMessage {
  const v = JSON.parse(Buffer.from(data).toString()) as Partial<JobMessage> | null;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not a JSON object");
  if (typeof v.id !== "string" || typeof v.hook !== "string") throw new Error('no "id" or "hook" string');
  if (typeof v.req !== "object" || v.req === null || Array.isArray(v.req)) throw new Error('no "req" object');
  if (v.reply !== undefined && (typeof v.reply !== "string" || !REPLY.test(v.reply))) throw new Error('"reply" is not a webhook.out subject');
  if (v.debounce !== undefined && !(typeof v.debounce === "number" && v.debounce > 0)) throw new Error('"debounce" is not a positive number');
  if (v.record !== undefined && !(isJob(v.record) && v.record.id === v.id && v.record.hook === v.hook)) throw new Error('"record" is not the job\'s record');
  return v as JobMessage;
}

/** How long one pull request waits for work before the next is sent. */
const PULL_EXPIRES_MS = 2000;
/** Jobs of a hook without max-concurrency one instance runs at once. */
const UNLIMITED_LOCAL = 256;
/** Pause between attempts after NATS failed (reconnecting is the client's own job). */
const RETRY_MS = 1000;
const PUBLISH_TIMEOUT_MS = 5000;
/** How often a request waiting for a job's end reads its record, in case the stored record's message was missed. */
const RECHECK_MS = 5000;
/** Job messages after a debounced one read to find a later trigger signed with the key (-queue-key-file). */
const MAX_LATER_READ = 256;

const CONSUMER = "run";
/** JetStream's acknowledgement of a message (what JsMsg.ack sends to its reply subject). */
const ACK = Buffer.from("+ACK");
/** JetStream's error code for a message that is not in the stream (acked, refused, or never there). */
const NO_MESSAGE = 10037;

/** The -queue URLs without their credentials: what messages may name. */
export function describeServers(url: string): string {
  return url
    .split(",")
    .map((u) => u.trim().replace(/\/\/[^@/]*@/, "//"))
    .join(",");
}

function connectOptions(url: string): { servers: string[]; user?: string; pass?: string; token?: string; tls?: Record<string, never> } {
  const servers: string[] = [];
  let user: string | undefined;
  let pass: string | undefined;
  let tls = false;
  for (const raw of url.split(",").map((u) => u.trim())) {
    let u: URL;
    try {
      u = new URL(raw.includes("://") ? raw : `nats://${raw}`);
    } catch (e) {
      throw new QueueConnectError("WEBHOOK_QUEUE_NOT_A_URL", { servers: JSON.stringify(describeServers(raw)) }, { cause: e });
    }
    if (u.protocol !== "nats:" && u.protocol !== "tls:") throw new QueueConnectError("WEBHOOK_QUEUE_SCHEME", { servers: describeServers(raw) });
    if (u.protocol === "tls:") tls = true;
    if (u.username !== "" && user === undefined) {
      user = decodeURIComponent(u.username);
      pass = u.password === "" ? undefined : decodeURIComponent(u.password);
    }
    servers.push(`${u.hostname}:${u.port || "4222"}`);
  }
  const auth = user === undefined ? {} : pass === undefined ? { token: user } : { user, pass };
  return { servers, ...auth, ...(tls ? { tls: {} } : {}) };
}

export class NatsQueue implements SharedQueue {
  private readonly pullers = new Map<string, Puller>();
  readonly address: string;
  readonly jobs: JobStore;
  private connected = true;
  private handingBack = false;
  private readonly deliveries: DeliveryClaims;
  private readonly rates: RateWindows;
  /** Requests waiting for their job's end: each reads the job's record again when called. */
  private readonly waiting = new Set<() => void>();

  private constructor(
    readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly records: KvRecords,
    private readonly publisher: JetStreamPublisher,
    private readonly opts: NatsQueueOptions,
  ) {
    this.address = describeServers(opts.url);
    this.jobs = new JobStore(records, opts.jobs.outputBytes);
    this.deliveries = new DeliveryClaims(js, opts.signer, (m) => opts.log.always(m));
    this.rates = new RateWindows(js, opts.signer, (m) => opts.log.always(m));
    void this.watchStatus();
  }

  /** Connects, checks JetStream and opens the job records; throws QueueConnectError naming the address when it cannot. */
  static async connect(opts: NatsQueueOptions): Promise<NatsQueue> {
    const address = describeServers(opts.url);
    let nc: NatsConnection;
    try {
      // noAsyncTraces: no stack captured for every request in case it times out (about a tenth of a job's NATS CPU).
      nc = await connect({
        ...connectOptions(opts.url),
        name: "webhook",
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        timeout: 5000,
        noAsyncTraces: true,
      });
    } catch (e) {
      if (e instanceof QueueConnectError) throw e;
      throw new QueueConnectError("WEBHOOK_QUEUE_UNREACHABLE", { address, reason: (e as Error).message }, { cause: e });
    }
    let jsm: JetStreamManager;
    try {
      jsm = await nc.jetstreamManager();
    } catch (e) {
      await nc.close();
      throw new QueueConnectError("WEBHOOK_QUEUE_NO_JETSTREAM", { address, reason: (e as Error).message }, { cause: e });
    }
    const js = nc.jetstream();
    const publisher = new JetStreamPublisher(nc);
    try {
      const records = await KvRecords.open(nc, js, jsm, publisher, { ...opts.jobs, maxBytes: nc.info!.max_payload }, opts.signer, (m) => opts.log.always(m));
      // Advisory: a mismatch is also told at the first job refused.
      await compareSigning(js, opts.signer, (m) => opts.log.always(m)).catch(() => undefined);
      return new NatsQueue(nc, js, jsm, records, publisher, opts);
    } catch (e) {
      await nc.close();
      throw new QueueConnectError("WEBHOOK_QUEUE_NO_BUCKET", { address, reason: (e as Error).message }, { cause: e });
    }
  }

  private async watchStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === "disconnect") {
        this.connected = false;
        this.opts.log.print(`lost the NATS server at ${this.address}: requests that cannot be queued get 503 until it is back`);
      } else if (s.type === "reconnect") {
        this.connected = true;
        this.opts.log.print(`reconnected to the NATS server at ${this.address}`);
        // A pull request sent before the server went away is never answered: send new ones.
        for (const p of this.pullers.values()) p.interrupt();
        // A job may have ended while this instance was away: its record says so.
        for (const recheck of this.waiting) recheck();
      }
    }
  }

  async serve(hooks: QueueHook[]): Promise<void> {
    // Opened before the hooks are served, not by the first trigger: under load creating a bucket can take
    // longer than a request may wait (the first triggers were answered 503).
    const buckets = [
      ...(hooks.some((h) => h.rateLimited) ? [this.rates.open()] : []),
      ...(hooks.some((h) => h.dedupWindowMs > 0) ? [this.deliveries.open()] : []),
    ];
    await Promise.all(
      buckets.map((b) =>
        b.catch((e: Error) => this.opts.log.print(`NATS queue: cannot open a key-value bucket yet (${e.message}); retried at the first trigger`)),
      ),
    );
    const wanted = new Set(hooks.map((h) => h.id));
    for (const [id, p] of this.pullers) {
      if (!wanted.has(id)) {
        p.stop();
        this.pullers.delete(id);
      }
    }
    await Promise.all(
      hooks.map(async (h) => {
        let p = this.pullers.get(h.id);
        if (!p) {
          p = new Puller(this.js, this.jsm, h, this.opts, (m) => this.work(m));
          this.pullers.set(h.id, p);
          await p.ensure().catch((e: Error) => this.opts.log.print(`NATS queue of hook ${h.id}: ${e.message} (retrying)`));
          p.start();
        } else {
          p.hook = h;
          await p.ensure().catch((e: Error) => this.opts.log.print(`NATS queue of hook ${h.id}: ${e.message} (retrying)`));
        }
      }),
    );
  }

  async submit(job: JobSubmission): Promise<Submitted> {
    if (!this.connected) return { kind: "unavailable", reason: `the NATS server at ${this.address} is unreachable` };
    try {
      if (job.deliveryId !== undefined && job.hook.dedupWindowMs > 0) {
        const claim = await this.deliveries.claim(job.hook, job.deliveryId, job.id);
        if (claim.first !== undefined) return { kind: "duplicate", id: claim.first };
        const submitted = await this.publish(job);
        // A delivery refused is not remembered: its redelivery must run.
        if (submitted.kind !== "queued" && submitted.kind !== "duplicate") await this.deliveries.release(claim);
        return submitted;
      }
      return await this.publish(job);
    } catch (e) {
      return this.refused(e);
    }
  }

  limited(hookId: string, requests: number, periodMs: number): Promise<RateVerdict> {
    if (!this.connected) return Promise.resolve({ kind: "unavailable", reason: `the NATS server at ${this.address} is unreachable` });
    return this.rates.limited(hookId, requests, periodMs);
  }

  /** Why NATS refused a job, as the hook server answers it (429 when the hook's stream is full). */
  private refused(e: unknown): Submitted {
    const description = (e as NatsError).api_error?.description ?? (e as Error).message;
    if (/maximum messages/i.test(description)) return { kind: "full" };
    return { kind: "unavailable", reason: `NATS did not take the job: ${description}` };
  }

  /** Stores the job's record, then publishes the job on its hook's stream. */
  private async publish(job: JobSubmission): Promise<Submitted> {
    const record = this.jobs.create(job.id, job.hook.id);
    try {
      await this.jobs.stored(record);
    } catch (e) {
      return this.refused(e);
    }
    const msg: JobMessage = {
      id: record.id,
      hook: job.hook.id,
      req: encodeRequest(job.req) as Record<string, unknown>,
      ...(job.debounceMs > 0 ? { debounce: job.debounceMs } : {}),
      record,
    };
    let waiter: Waiter | undefined;
    if (job.onOutput) {
      msg.reply = `webhook.out.${randomUUID()}`;
      waiter = this.awaitEnd(record, msg.reply, job.onOutput, job.onAttempt);
    }
    // A job that was not taken has no record (as a request answered 429 has no job in-process).
    const refuse = async (submitted: Submitted): Promise<Submitted> => {
      waiter?.cancel();
      await this.records.remove(record).catch(() => undefined);
      return submitted;
    };
    const data = encodeJobMessage(msg);
    if (data.length > this.nc.info!.max_payload) {
      return refuse({
        kind: "unavailable",
        reason: `the job (${data.length} bytes) is larger than the NATS server's max_payload of ${this.nc.info!.max_payload} bytes`,
        tooLarge: true,
      });
    }
    try {
      const h = natsHeaders();
      h.set("Webhook-Job", record.id);
      if (job.traceparent) h.set("traceparent", job.traceparent);
      const headers = this.opts.signer.sign(jobSubject(job.hook.id), data, h);
      const ack = await this.publisher.publish(jobSubject(job.hook.id), data, {
        ...(headers ? { headers } : {}),
        timeoutMs: PUBLISH_TIMEOUT_MS,
        ...(job.deliveryId !== undefined && job.hook.dedupWindowMs > 0 ? { msgId: this.opts.signer.messageId(job.deliveryId) } : {}),
      });
      if (ack.duplicate) return refuse({ kind: "duplicate", id: record.id });
      waiter?.published(ack.stream, ack.seq);
    } catch (e) {
      return refuse(this.refused(e));
    }
    return waiter ? { kind: "queued", id: record.id, result: waiter.result } : { kind: "queued", id: record.id };
  }

  /**
   * Subscribes, before the job is published, to its output and to its record as it is stored;
   * `result` resolves with the record's final state. The record is also read back after a
   * reconnect and every few seconds: the messages travel on core NATS, at most once. A job whose
   * message left the stream while its record did not end never will: the request gets an error.
   */
  private awaitEnd(job: Job, reply: string, onOutput: (chunk: Buffer) => void, onAttempt?: () => void): Waiter {
    let resolve!: (r: JobOutcome) => void;
    const result = new Promise<JobOutcome>((r) => (resolve = r));
    let attempts = 0;
    const subs: Subscription[] = [];
    const end = (): void => {
      for (const s of subs) s.unsubscribe();
      clearInterval(timer);
      this.waiting.delete(recheck);
    };
    const seen = (record: Job | undefined, fromRecord: boolean): void => {
      if (!record || record.id !== job.id || !this.waiting.has(recheck)) return;
      if (record.attempts.length > attempts) {
        if (attempts > 0) onAttempt?.();
        attempts = record.attempts.length;
      }
      if (!FINAL_STATES.has(record.state)) return;
      end();
      if (fromRecord)
        this.opts.log.print(`[${job.id}] ${job.hook}: the job's end was read back from its record (its stored record never arrived here)`, {
          rid: job.id,
          hook: job.hook,
        });
      resolve(outcome(record, fromRecord));
    };
    let message: { stream: string; seq: number } | undefined;
    const recheck = (): void => {
      // The message first: a job's final record is stored before its message is acked.
      (message ? this.left(message.stream, message.seq) : Promise.resolve(false))
        .then(async (left) => {
          seen(await this.records.get(job.id), true);
          if (left && this.waiting.has(recheck)) abandoned();
        })
        .catch(() => undefined);
    };
    const abandoned = (): void => {
      end();
      const why = "the job left the queue without ending: an instance refused it (is -queue-key-file the same on every -queue instance?)";
      this.opts.log.always(`[${job.id}] ${job.hook}: ${why}; answering with an error`, { rid: job.id, hook: job.hook });
      resolve({ output: Buffer.alloc(0), error: why, exitCode: null });
    };
    this.waiting.add(recheck);
    const timer = setInterval(recheck, Math.min(RECHECK_MS, this.opts.ackWaitMs));
    subs.push(
      this.nc.subscribe(`${reply}.o`, {
        callback: (err, m) => {
          if (err) return;
          const refusal = this.opts.signer.refusal(m.subject, m.data, m.headers);
          if (refusal) this.opts.log.always(`NATS queue: ignored a message on ${m.subject} with ${refusal} (-queue-key-file)`);
          else onOutput(Buffer.from(m.data));
        },
      }),
    );
    const subject = jobRecordSubject(job.id);
    subs.push(
      this.nc.subscribe(subject, {
        callback: (err, m) => {
          if (err) return;
          const record = decodeRecord(subject, m.data, this.opts.signer);
          if (!record) this.opts.log.print(`NATS queue: ignored an unreadable job record on ${subject}`);
          else if (record.refusal !== undefined) this.opts.log.always(refusedRecord(subject, record.refusal));
          else seen(record.job, false);
        },
      }),
    );
    return { result, cancel: end, published: (stream, seq) => (message = { stream, seq }) };
  }

  /** Whether the message at `seq` has left the stream (acked, or refused by an instance). */
  private async left(stream: string, seq: number): Promise<boolean> {
    try {
      await this.jsm.streams.getMessage(stream, { seq });
      return false;
    } catch (e) {
      if ((e as NatsError).api_error?.err_code === NO_MESSAGE) return true;
      throw e;
    }
  }

  /** Runs one attempt of a job pulled from a hook's consumer; acks the job when it is over, or hands it back for its next attempt. */
  private async work(m: JsMsg): Promise<void> {
    const log = this.opts.log;
    const runner = this.opts.runner;
    // Anyone who may publish on the job subjects can put anything there: a message that is not
    // one of ours is dropped for good, never retried (it would fault every instance in turn).
    let msg: JobMessage;
    let req: HookRequest;
    const refusal = this.opts.signer.refusal(m.subject, m.data, m.headers);
    if (refusal) {
      log.always(
        `NATS queue: refused a job message with ${refusal} (stream ${m.info.stream}, sequence ${m.seq}; -queue-key-file): nothing runs; if another -queue instance sent it, give it this -queue-key-file`,
      );
      m.term();
      return;
    }
    if (!this.opts.signer.keyed && QueueSigner.signed(m.headers)) {
      if (!m.info.redelivered)
        log.always(
          `NATS queue: a job message signed with a -queue-key-file (stream ${m.info.stream}, sequence ${m.seq}) is left to the instances that have the key: give this instance the same -queue-key-file`,
        );
      m.nak(RETRY_MS);
      return;
    }
    try {
      msg = parseJobMessage(m.data);
      req = decodeRequest(msg.req);
    } catch (e) {
      log.print(`NATS queue: dropped an unreadable job message (stream ${m.info.stream}, sequence ${m.seq}): ${(e as Error).message}`);
      m.term();
      return;
    }
    if (!runner.serves(msg.hook)) {
      m.nak(RETRY_MS);
      return;
    }
    const fields = { rid: msg.id, hook: msg.hook };
    const heartbeat = setInterval(() => m.working(), Math.max(100, this.opts.ackWaitMs / 3));
    try {
      let job: Job;
      try {
        // First delivered, the record is still the one stored with the message: no need to read it back.
        const fresh = m.info.deliveryCount === 1 && msg.record?.state === "queued" && msg.record.attempts.length === 0;
        job = (fresh ? msg.record : await this.records.get(msg.id)) ?? this.jobs.create(msg.id, msg.hook);
      } catch (e) {
        log.print(`[${msg.id}] ${msg.hook}: cannot read the job's record (${(e as Error).message}): it goes back to the queue`, fields);
        m.nak(RETRY_MS);
        return;
      }
      if (msg.debounce !== undefined && job.attempts.length === 0) {
        let quiet: Awaited<ReturnType<NatsQueue["quietPeriod"]>>;
        try {
          quiet = await this.quietPeriod(m, msg.debounce);
        } catch (e) {
          log.print(`[${msg.id}] ${msg.hook}: cannot read the hook's stream (${(e as Error).message}): the trigger goes back to the queue`, fields);
          m.nak(RETRY_MS);
          return;
        }
        if ("supersededBy" in quiet) {
          const reason = `debounced: superseded by ${quiet.supersededBy}`;
          log.print(`[${msg.id}] ${msg.hook}'s trigger does not run: ${reason}`, fields);
          runner.superseded(msg.hook);
          this.jobs.drop(job, reason);
          runner.ended(msg.hook, "dropped");
          await this.jobs.stored(job).catch(() => undefined);
          await this.ack(m, msg);
          return;
        }
        if (quiet.waitMs > 0) {
          m.nak(quiet.waitMs);
          return;
        }
      }
      const open = job.attempts[job.attempts.length - 1];
      if (open && open.ended === undefined) {
        log.print(
          `[${msg.id}] ${msg.hook}: attempt ${open.number} did not finish (the instance running it stopped); attempt ${open.number + 1} runs here`,
          fields,
        );
        this.jobs.abandoned(job, "the instance running it stopped before it ended");
      }
      const attempt = this.jobs.started(job);
      // Stored before the command starts, so a death from here on shows as this attempt.
      await this.jobs.stored(job).catch(() => undefined);
      const reply = msg.reply;
      const onOutput = reply ? (c: Buffer) => this.notify(`${reply}.o`, c) : undefined;
      // traces: this attempt's span, under the publisher's (the message's traceparent header).
      const pulled = begin(req, "pull", "consumer", { parent: m.headers?.get("traceparent") ?? "", nest: true });
      pulled?.setAttribute("webhook.job", msg.id);
      const result = await runner.run(msg.hook, req, onOutput);
      pulled?.end(result.error);
      this.jobs.attemptEnded(job, attempt, result);
      if (this.handingBack && result.error !== undefined) {
        await this.jobs.stored(job).catch(() => undefined);
        m.nak();
        log.print(`[${msg.id}] ${msg.hook}: handed back to the queue (this instance is shutting down)`, fields);
        return;
      }
      const wait = runner.retryIn(msg.hook, msg.id, attempt.number, result);
      if (wait !== undefined) {
        await this.jobs.stored(job).catch(() => undefined);
        m.nak(wait);
        return;
      }
      this.jobs.finish(job);
      runner.ended(msg.hook, job.state, { job: msg.id, attempt: attempt.number, result });
      await this.storeFinal(job, msg);
      await this.ack(m, msg);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Publishes an output chunk of a job, signed with -queue-key-file's key. */
  private notify(subject: string, data: Buffer): void {
    const headers = this.opts.signer.sign(subject, data);
    this.nc.publish(subject, data, headers ? { headers } : {});
  }

  /**
   * debounce: whether a later trigger of the hook is in its stream (this one is superseded), else
   * how long this one still waits (its quiet period from when it was stored).
   */
  private async quietPeriod(m: JsMsg, quietMs: number): Promise<{ supersededBy: string } | { waitMs: number }> {
    const { state } = await this.jsm.streams.info(m.info.stream);
    const later = await this.laterTrigger(m.info.stream, m.seq, state.last_seq);
    if (later !== undefined) return { supersededBy: later };
    return { waitMs: Math.max(0, Math.ceil(quietMs - (Date.now() - m.info.timestampNanos / 1e6))) };
  }

  /**
   * The id of the last trigger after sequence `seq` in the stream, or undefined when there is none.
   * Without a key that is the stream's last message, read or not. With -queue-key-file only a
   * message signed with the key counts: one sent by a publisher without the key (or already gone:
   * refused, or run) does not drop the trigger, which then runs.
   */
  private async laterTrigger(stream: string, seq: number, last: number): Promise<string | undefined> {
    const keyed = this.opts.signer.keyed;
    for (let at = last; at > seq && last - at < MAX_LATER_READ; at--) {
      let stored: StoredMsg;
      try {
        stored = await this.jsm.streams.getMessage(stream, { seq: at });
      } catch (e) {
        if (!keyed) return `a later trigger (sequence ${at})`;
        if ((e as NatsError).api_error?.err_code === NO_MESSAGE) continue;
        throw e;
      }
      if (keyed && this.opts.signer.refusal(stored.subject, stored.data, stored.header)) continue;
      try {
        return parseJobMessage(stored.data).id;
      } catch {
        return `a later trigger (sequence ${at})`;
      }
    }
    return undefined;
  }

  /**
   * Stores a job's final record, again while the server is away (until -queue-ack-wait has
   * passed): a request waiting for the job's end is answered from it.
   */
  private storeFinal(job: Job, msg: JobMessage): Promise<void> {
    return this.untilAckWait(
      (again) => {
        if (again) this.records.changed(job);
        return this.jobs.stored(job);
      },
      (e) =>
        this.opts.log.print(`[${msg.id}] ${msg.hook}: the job's final record could not be stored (${e.message}): a request waiting for it is not answered`, {
          rid: msg.id,
          hook: msg.hook,
        }),
    );
  }

  /**
   * Acks a finished job, again while the server is away (until -queue-ack-wait has passed): a lost
   * ack would hold one of the hook's max-concurrency slots until the job is redelivered.
   */
  private ack(m: JsMsg, job: JobMessage): Promise<void> {
    // A plain ack, confirmed by the server's PONG (received.ts), sent again when that does not come.
    const reply = (m as JsMsg & { reply: string }).reply;
    return this.untilAckWait(
      () => {
        this.nc.publish(reply, ACK);
        return received(this.nc, Math.min(PUBLISH_TIMEOUT_MS, this.opts.ackWaitMs));
      },
      (e) =>
        this.opts.log.print(`[${job.id}] ${job.hook}: the NATS server did not confirm the job's end (${e.message}): it may run again`, {
          rid: job.id,
          hook: job.hook,
        }),
    );
  }

  /** Tries `op` every RETRY_MS until it succeeds or -queue-ack-wait has passed; then `giveUp` with the last error. */
  private async untilAckWait(op: (again: boolean) => Promise<unknown>, giveUp: (e: Error) => void): Promise<void> {
    const until = Date.now() + this.opts.ackWaitMs;
    for (let again = false; ; again = true) {
      try {
        await op(again);
        return;
      } catch (e) {
        if (Date.now() >= until) {
          giveUp(e as Error);
          return;
        }
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  stopPulling(): void {
    for (const p of this.pullers.values()) p.stop();
  }

  /** Jobs whose commands end with an error from now on (killed by shutdown) go back to the queue. */
  handBack(): void {
    this.handingBack = true;
  }

  async close(): Promise<void> {
    this.stopPulling();
    await Promise.all([...this.pullers.values()].map((p) => p.stopped));
    await this.records.close();
    this.publisher.close();
    await this.nc.drain().catch(() => undefined);
  }
}

/** What a job's final record tells the request waiting for it. */
function outcome(job: Job, fromRecord: boolean): JobOutcome {
  const last = job.attempts[job.attempts.length - 1];
  const error = job.state === "dropped" && !last ? (job.reason ?? "the job was dropped") : job.error;
  return {
    output: Buffer.from(job.output),
    ...(error !== undefined ? { error } : {}),
    ...(job.exitCode !== undefined ? { exitCode: job.exitCode } : {}),
    ...(job.signal ? { signal: job.signal } : {}),
    ...(last?.timedOut ? { timedOut: true } : {}),
    ...(job.stderr !== undefined ? { stderr: Buffer.from(job.stderr) } : {}),
    ...(fromRecord ? { fromRecord: true as const } : {}),
    ...(job.outputCut !== undefined ? { outputCut: job.outputCut } : {}),
  };
}

/** One hook's consumer, pulled by this instance while it serves the hook. */
class Puller {
  private stopping = false;
  private inflight = 0;
  private slotFreed: (() => void) | undefined;
  private batch: ConsumerMessages | undefined;
  stopped: Promise<void> = Promise.resolve();

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    public hook: QueueHook,
    private readonly opts: NatsQueueOptions,
    private readonly work: (m: JsMsg) => Promise<void>,
  ) {}

  /** Creates or updates the hook's stream and consumer to the hook's current limits. */
  async ensure(): Promise<void> {
    const h = this.hook;
    const name = streamName(h.id);
    const stream = {
      name,
      subjects: [jobSubject(h.id)],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      max_msgs: h.maxConcurrency > 0 ? h.maxConcurrency + h.maxQueue : -1,
      duplicate_window: nanos(h.dedupWindowMs > 0 ? h.dedupWindowMs : 120_000),
    };
    try {
      await this.jsm.streams.add(stream);
    } catch {
      await this.jsm.streams.update(name, stream);
    }
    const consumer = {
      durable_name: CONSUMER,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(this.opts.ackWaitMs),
      max_ack_pending: h.maxConcurrency > 0 ? h.maxConcurrency : -1,
      max_deliver: -1,
    };
    try {
      await this.jsm.consumers.add(name, consumer);
    } catch {
      await this.jsm.consumers.update(name, CONSUMER, consumer);
    }
  }

  start(): void {
    this.stopped = this.loop();
  }

  stop(): void {
    this.stopping = true;
    this.slotFreed?.();
  }

  /** Ends the pull request under way (the loop sends a new one). */
  interrupt(): void {
    this.batch?.stop();
  }

  private get limit(): number {
    return this.hook.maxConcurrency > 0 ? this.hook.maxConcurrency : UNLIMITED_LOCAL;
  }

  private async loop(): Promise<void> {
    let consumer: Consumer | undefined;
    while (!this.stopping) {
      try {
        if (this.inflight >= this.limit) {
          await new Promise<void>((resolve) => (this.slotFreed = resolve));
          continue;
        }
        consumer ??= await this.js.consumers.get(streamName(this.hook.id), CONSUMER);
        const batch = await consumer.fetch({ max_messages: this.limit - this.inflight, expires: PULL_EXPIRES_MS });
        this.batch = batch;
        // A pull request lost with the connection would otherwise wait forever.
        const watchdog = setTimeout(() => batch.stop(), PULL_EXPIRES_MS * 3);
        try {
          await this.take(batch);
        } finally {
          clearTimeout(watchdog);
        }
      } catch (e) {
        if (this.stopping) break;
        consumer = undefined;
        this.opts.log.print(`NATS queue of hook ${this.hook.id}: ${(e as Error).message} (retrying)`);
        await new Promise((r) => setTimeout(r, RETRY_MS));
        await this.ensure().catch(() => undefined);
      }
    }
  }

  /** Starts the jobs of one pull as they arrive. */
  private async take(batch: ConsumerMessages): Promise<void> {
    for await (const m of batch) {
      if (this.stopping) {
        m.nak(); // pulled after shutdown began: straight back to the queue
        continue;
      }
      this.inflight++;
      void this.work(m)
        .catch((e: Error) => {
          this.opts.log.print(`NATS queue of hook ${this.hook.id}: a job failed to run here (${e.message}); it is dropped`);
          m.term();
        })
        .finally(() => {
          this.inflight--;
          this.slotFreed?.();
        });
    }
  }
}
