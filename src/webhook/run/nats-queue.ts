// The shared queue on NATS JetStream (-queue nats://HOST:PORT). Each hook has its own durable
// stream (file storage, work-queue retention) and one pull consumer every instance pulls from:
// - max-concurrency over all instances is the consumer's max_ack_pending: a job is acked when its
//   command has ended, and kept alive with in-progress acks while it runs;
// - max-queue is the stream's max_msgs (max-concurrency + max-queue, new messages refused: 429);
// - a job whose instance died is redelivered after ack_wait (-queue-ack-wait);
// - de-duplication: the first job id of a delivery is kept in a key-value bucket (an atomic
//   create), and the delivery id is also the message id JetStream de-duplicates within the window;
// - output of captured and streamed hooks travels on core NATS subjects the receiving instance
//   subscribed to before publishing the job.
import { createHash, randomUUID } from "node:crypto";
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
  type KV,
  type NatsConnection,
  type NatsError,
  type Subscription,
} from "nats";
import { MAX_DEDUP_WINDOW } from "../hooks/dedup.js";
import type { HookRequest } from "../hooks/hook.js";
import type { Log } from "../server/log.js";
import type { QueueSigner } from "./queue-signing.js";
import { decodeRequest, encodeRequest, type ExecuteResult, type JobExecutor, type JobRecorder, type JobSubmission, type QueueHook, type SharedQueue, type Submitted } from "./queue.js";

export class QueueConnectError extends Error {
  readonly code = "QUEUE_CONNECT";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QueueConnectError";
  }
}

export interface NatsQueueOptions {
  /** -queue: one or more comma-separated nats:// or tls:// URLs, optionally with user:password@. */
  url: string;
  /** How long a job may go without an ack or heartbeat before another instance gets it. */
  ackWaitMs: number;
  log: Log;
  /** Runs a job pulled here; undefined when this instance does not serve the hook (it is handed back). */
  execute: (...args: Parameters<JobExecutor>) => Promise<ExecuteResult> | undefined;
  recorder?: JobRecorder;
  /** -queue-key-file: signs what this instance publishes and refuses what is not signed with the key. */
  signer?: QueueSigner;
}

/** The job as it travels in the stream. */
interface JobMessage {
  id: string;
  hook: string;
  req: Record<string, unknown>;
  /** Core NATS subject prefix for output chunks (".o") and the end (".e"); absent when nobody waits. */
  reply?: string;
}

/** Our reply subjects: what a job message may name (never another subject of the NATS account). */
const REPLY = /^webhook\.out\.[0-9a-f-]{36}$/;

/** A job message as published by submit(); throws Error saying what is wrong with anything else. */
function parseJobMessage(data: Uint8Array): JobMessage {
  const v = JSON.parse(Buffer.from(data).toString()) as Partial<JobMessage> | null;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not a JSON object");
  if (typeof v.id !== "string" || typeof v.hook !== "string") throw new Error('no "id" or "hook" string');
  if (typeof v.req !== "object" || v.req === null || Array.isArray(v.req)) throw new Error('no "req" object');
  if (v.reply !== undefined && (typeof v.reply !== "string" || !REPLY.test(v.reply))) throw new Error('"reply" is not a webhook.out subject');
  return v as JobMessage;
}

/** Key-value bucket holding the first job id of each delivery id. */
const DELIVERIES_BUCKET = "webhook_deliveries";

/** How long one pull request waits for work before the next is sent. */
const PULL_EXPIRES_MS = 2000;
/** Jobs of a hook without max-concurrency one instance runs at once. */
const UNLIMITED_LOCAL = 256;
/** Pause between attempts after NATS failed (reconnecting is the client's own job). */
const RETRY_MS = 1000;
const PUBLISH_TIMEOUT_MS = 5000;

/** A hook id as a subject token, stream name and key part: [A-Za-z0-9-] kept, every other byte as _XX. */
export function token(id: string): string {
  let out = "";
  for (const b of Buffer.from(id, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9-]/.test(c) ? c : "_" + b.toString(16).padStart(2, "0");
  }
  return out === "" ? "_" : out;
}

export const streamName = (hook: string): string => `WEBHOOK_${token(hook)}`;
export const jobSubject = (hook: string): string => `webhook.jobs.${token(hook)}`;
const CONSUMER = "run";

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
      throw new QueueConnectError(`-queue ${JSON.stringify(describeServers(raw))} is not a URL: give nats://HOST:PORT`, { cause: e });
    }
    if (u.protocol !== "nats:" && u.protocol !== "tls:") throw new QueueConnectError(`-queue ${describeServers(raw)}: the scheme must be nats:// or tls://`);
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
  private connected = true;
  private deliveries: KV | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly opts: NatsQueueOptions,
  ) {
    this.address = describeServers(opts.url);
    void this.watchStatus();
  }

  /** Connects and checks JetStream; throws QueueConnectError naming the address when it cannot. */
  static async connect(opts: NatsQueueOptions): Promise<NatsQueue> {
    const address = describeServers(opts.url);
    let nc: NatsConnection;
    try {
      nc = await connect({ ...connectOptions(opts.url), name: "webhook", maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 5000 });
    } catch (e) {
      if (e instanceof QueueConnectError) throw e;
      throw new QueueConnectError(`cannot connect to the NATS server at ${address} (-queue): ${(e as Error).message}; start nats-server -js there or fix -queue`, { cause: e });
    }
    try {
      const jsm = await nc.jetstreamManager();
      return new NatsQueue(nc, nc.jetstream(), jsm, opts);
    } catch (e) {
      await nc.close();
      throw new QueueConnectError(`the NATS server at ${address} (-queue) has no JetStream (${(e as Error).message}): start it with -js`, { cause: e });
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
      }
    }
  }

  async serve(hooks: QueueHook[]): Promise<void> {
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
        const claim = await this.claimDelivery(job.hook, job.deliveryId, job.id);
        if (claim.first !== undefined) return { kind: "duplicate", id: claim.first };
        const submitted = await this.publish(job);
        // A delivery refused is not remembered: its redelivery must run.
        if (submitted.kind !== "queued" && submitted.kind !== "duplicate") await this.deliveries!.delete(claim.key, { previousSeq: claim.revision }).catch(() => undefined);
        return submitted;
      }
      return await this.publish(job);
    } catch (e) {
      return this.refused(e);
    }
  }

  /** Why NATS refused a job, as the hook server answers it (429 when the hook's stream is full). */
  private refused(e: unknown): Submitted {
    const description = (e as NatsError).api_error?.description ?? (e as Error).message;
    if (/maximum messages/i.test(description)) return { kind: "full" };
    return { kind: "unavailable", reason: `NATS did not take the job: ${description}` };
  }

  /** Publishes a job on its hook's stream. */
  private async publish(job: JobSubmission): Promise<Submitted> {
    try {
      const msg: JobMessage = { id: job.id, hook: job.hook.id, req: encodeRequest(job.req) as Record<string, unknown> };
      let sub: Subscription | undefined;
      let result: Promise<ExecuteResult> | undefined;
      if (job.onOutput) {
        msg.reply = `webhook.out.${randomUUID()}`;
        ({ sub, result } = this.awaitResult(msg.reply, job.onOutput));
      }
      const data = Buffer.from(JSON.stringify(msg));
      if (data.length > this.nc.info!.max_payload) {
        sub?.unsubscribe();
        return { kind: "unavailable", reason: `the job (${data.length} bytes) is larger than the NATS server's max_payload of ${this.nc.info!.max_payload} bytes`, tooLarge: true };
      }
      try {
        const h = natsHeaders();
        h.set("Webhook-Job", job.id);
        const ack = await this.js.publish(jobSubject(job.hook.id), data, {
          headers: this.opts.signer?.sign(jobSubject(job.hook.id), data, h) ?? h,
          timeout: PUBLISH_TIMEOUT_MS,
          ...(job.deliveryId !== undefined && job.hook.dedupWindowMs > 0 ? { msgID: job.deliveryId } : {}),
        });
        if (ack.duplicate) {
          sub?.unsubscribe();
          return { kind: "duplicate", id: job.id };
        }
      } catch (e) {
        sub?.unsubscribe();
        throw e;
      }
      this.opts.recorder?.record({ id: job.id, hook: job.hook.id, state: "queued", attempt: 0, at: Date.now() });
      return result ? { kind: "queued", id: job.id, result } : { kind: "queued", id: job.id };
    } catch (e) {
      return this.refused(e);
    }
  }

  /** The first job id of this delivery within the window, or the key and revision this job claimed it with. */
  private async claimDelivery(hook: QueueHook, deliveryId: string, jobId: string): Promise<{ first: string; key?: never; revision?: never } | { first?: never; key: string; revision: number }> {
    this.deliveries ??= await this.js.views.kv(DELIVERIES_BUCKET, { history: 1, ttl: MAX_DEDUP_WINDOW, storage: StorageType.File });
    const kv = this.deliveries;
    const id = deliveryId.length <= 100 ? token(deliveryId) : createHash("sha256").update(deliveryId).digest("hex");
    const key = `${token(hook.id)}.${id}`;
    const value = Buffer.from(jobId);
    for (;;) {
      try {
        return { key, revision: await kv.create(key, value) };
      } catch {
        const entry = await kv.get(key);
        if (!entry || entry.operation !== "PUT") continue; // removed meanwhile: claim again
        if (Date.now() - entry.created.getTime() < hook.dedupWindowMs) return { first: Buffer.from(entry.value).toString() };
        try {
          return { key, revision: await kv.update(key, value, entry.revision) };
        } catch {
          continue; // another instance claimed it first: read again
        }
      }
    }
  }

  /** Subscribes to a job's output before it is published. */
  private awaitResult(reply: string, onOutput: (chunk: Buffer) => void): { sub: Subscription; result: Promise<ExecuteResult> } {
    let resolve!: (r: ExecuteResult) => void;
    const result = new Promise<ExecuteResult>((r) => (resolve = r));
    const sub = this.nc.subscribe(`${reply}.*`, {
      callback: (err, m) => {
        if (err) return;
        const refusal = this.opts.signer?.refusal(m.subject, m.data, m.headers);
        if (refusal) {
          this.opts.log.always(`NATS queue: ignored a message on ${m.subject} with ${refusal} (-queue-key-file)`);
          return;
        }
        if (m.subject.endsWith(".o")) {
          onOutput(Buffer.from(m.data));
          return;
        }
        let end: { error?: unknown; timedOut?: unknown };
        try {
          end = JSON.parse(Buffer.from(m.data).toString()) as typeof end;
          if (typeof end !== "object" || end === null || (end.error !== undefined && typeof end.error !== "string")) throw new Error("not an end message");
        } catch {
          this.opts.log.print(`NATS queue: ignored an unreadable end message on ${m.subject}`);
          return;
        }
        sub.unsubscribe();
        resolve({ output: Buffer.alloc(0), ...(typeof end.error === "string" ? { error: end.error } : {}), ...(end.timedOut === true ? { timedOut: true } : {}) });
      },
    });
    return { sub, result };
  }

  /** Runs one job pulled from a hook's consumer; acks it when its command has ended. */
  private async work(m: JsMsg): Promise<void> {
    const log = this.opts.log;
    // Anyone who may publish on the job subjects can put anything there: a message that is not
    // one of ours is dropped for good, never retried (it would fault every instance in turn).
    let job: JobMessage;
    let req: HookRequest;
    const refusal = this.opts.signer?.refusal(m.subject, m.data, m.headers);
    if (refusal) {
      log.always(`NATS queue: refused a job message with ${refusal} (stream ${m.info.stream}, sequence ${m.seq}; -queue-key-file): nothing runs`);
      m.term();
      return;
    }
    try {
      job = parseJobMessage(m.data);
      req = decodeRequest(job.req);
    } catch (e) {
      log.print(`NATS queue: dropped an unreadable job message (stream ${m.info.stream}, sequence ${m.seq}): ${(e as Error).message}`);
      m.term();
      return;
    }
    const attempt = m.info.redeliveryCount;
    const heartbeat = setInterval(() => m.working(), Math.max(100, this.opts.ackWaitMs / 3));
    try {
      if (attempt > 1) log.print(`[${job.id}] ${job.hook}: attempt ${attempt} (the instance that ran it before did not finish it)`, { rid: job.id, hook: job.hook });
      const reply = job.reply;
      const onOutput = reply ? (c: Buffer) => this.notify(`${reply}.o`, c) : undefined;
      const running = this.opts.execute(job.hook, req, onOutput);
      if (!running) {
        m.nak(RETRY_MS);
        return;
      }
      this.opts.recorder?.record({ id: job.id, hook: job.hook, state: "running", attempt, at: Date.now() });
      const result = await running;
      if (this.handingBack && result.error !== undefined) {
        m.nak();
        log.print(`[${job.id}] ${job.hook}: handed back to the queue (this instance is shutting down)`, { rid: job.id, hook: job.hook });
        return;
      }
      if (reply) this.notify(`${reply}.e`, Buffer.from(JSON.stringify({ error: result.error, timedOut: result.timedOut })));
      this.opts.recorder?.record({
        id: job.id,
        hook: job.hook,
        state: result.timedOut ? "timed-out" : result.error === undefined ? "succeeded" : "failed",
        attempt,
        at: Date.now(),
        ...(result.error !== undefined ? { error: result.error } : {}),
      });
      await this.ack(m, job);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Publishes an output chunk or the end notice of a job, signed with -queue-key-file's key. */
  private notify(subject: string, data: Buffer): void {
    const headers = this.opts.signer?.sign(subject, data);
    this.nc.publish(subject, data, headers ? { headers } : {});
  }

  /**
   * Acks a finished job, again while the server is away (until -queue-ack-wait has passed): a lost
   * ack would hold one of the hook's max-concurrency slots until the job is redelivered.
   */
  private async ack(m: JsMsg, job: JobMessage): Promise<void> {
    const until = Date.now() + this.opts.ackWaitMs;
    for (;;) {
      try {
        await m.ackAck({ timeout: Math.min(PUBLISH_TIMEOUT_MS, this.opts.ackWaitMs) });
        return;
      } catch (e) {
        if (Date.now() >= until) {
          this.opts.log.print(`[${job.id}] ${job.hook}: the NATS server did not confirm the job's end (${(e as Error).message}): it may run again`, { rid: job.id, hook: job.hook });
          return;
        }
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  private handingBack = false;

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
    await this.nc.drain().catch(() => undefined);
  }
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
