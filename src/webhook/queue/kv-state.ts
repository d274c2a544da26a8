// The shared queue's state outside the job messages, in JetStream key-value buckets: each hook's
// rate-limit window (webhook_rates), the first job of each delivery (webhook_deliveries), and how
// the instance started last signs its jobs (webhook_queue), to tell a mismatch at start. With
// -queue-key-file both are stored signed (signing.ts), and a value not signed with the key is not
// believed: a forged window does not make an instance answer 429, a forged claim does not make a
// real delivery a duplicate. Either is logged and replaced by a signed one.
import { createHash } from "node:crypto";
import { StorageType, type JetStreamClient, type KV, type KvEntry } from "nats";
import { MAX_DEDUP_WINDOW } from "../hooks/run-fields.js";
import { DELIVERIES_BUCKET, kvSubject, QUEUE_BUCKET, RATES_BUCKET, token } from "./names.js";
import { wrongLastSequence } from "./js-publish.js";
import type { QueueHook, RateVerdict } from "./queue.js";
import type { QueueSigner } from "./signing.js";

const SIGNING_KEY = "signing";

/**
 * Says (with `warn`) when the instance started last on the NATS server signs its jobs otherwise
 * than this one (-queue-key-file: a key, another key, or none), then records how this one does.
 */
export async function compareSigning(js: JetStreamClient, signer: QueueSigner, warn: (message: string) => void): Promise<void> {
  const kv = await js.views.kv(QUEUE_BUCKET, { history: 1, storage: StorageType.File });
  const mine = signer.seal(kvSubject(QUEUE_BUCKET, SIGNING_KEY), Buffer.from(signer.keyed ? "signed" : "unsigned"));
  const last = await kv.get(SIGNING_KEY);
  if (last?.operation === "PUT" && !mine.equals(last.value)) {
    const theirs = Buffer.from(last.value).toString() === "unsigned" ? "without a key" : signer.keyed ? "with another key" : "with a key";
    warn(
      `NATS queue: the -queue instance started before this one signs its jobs ${theirs}, this one ${signer.keyed ? "with the key of -queue-key-file" : "without a key"}: while both run, jobs sent between them fail; give every -queue instance the same -queue-key-file`,
    );
  }
  await kv.put(SIGNING_KEY, mine);
}

/** Compare-and-set rounds of a rate-limit window before the trigger is refused as contended. */
const MAX_RATE_ROUNDS = 100;

/** A bucket's value as signer.unseal reads it: its bytes, or undefined (logged by `warn` when refused for its signature). */
function unsealed(bucket: string, e: KvEntry, signer: QueueSigner, what: string, warn: (m: string) => void): Uint8Array | undefined {
  const subject = kvSubject(bucket, e.key);
  const { data, refusal } = signer.unseal(subject, e.value);
  if (refusal !== undefined) warn(`NATS queue: ignored ${what} on ${subject} with ${refusal} (-queue-key-file): it is replaced`);
  return data;
}

/** rate-limit over all instances: one window per hook, counted with compare-and-set. */
export class RateWindows {
  /** The bucket, opened once: the first burst of triggers shares one open (a failed one is tried again). */
  private kv: Promise<KV> | undefined;

  constructor(
    private readonly js: JetStreamClient,
    private readonly signer: QueueSigner,
    private readonly warn: (message: string) => void,
  ) {}

  /** Opens the bucket (once; a failed open is tried again at the next call). */
  open(): Promise<KV> {
    this.kv ??= this.js.views.kv(RATES_BUCKET, { history: 1, storage: StorageType.File }).catch((e: unknown) => {
      this.kv = undefined;
      throw e;
    });
    return this.kv;
  }

  /**
   * Counts a trigger in its hook's window. A trigger that cannot be counted is not let through
   * uncounted (that would break the limit over all instances): it is answered 503 like a job NATS refused.
   */
  async limited(hookId: string, requests: number, periodMs: number): Promise<RateVerdict> {
    try {
      const kv = await this.open();
      const key = token(hookId);
      const subject = kvSubject(RATES_BUCKET, key);
      for (let round = 0; round < MAX_RATE_ROUNDS; round++) {
        const entry = await kv.get(key);
        const now = Date.now();
        const stored = entry?.operation === "PUT" ? unsealed(RATES_BUCKET, entry, this.signer, "a rate-limit window", this.warn) : undefined;
        const held = stored && parseWindow(stored);
        const w = held && now - held.opened < periodMs ? held : { opened: now, count: 0 };
        if (w.count >= requests) return { kind: "limited", retryAfterS: Math.max(1, Math.ceil((w.opened + periodMs - now) / 1000)) };
        const value = this.signer.seal(subject, Buffer.from(JSON.stringify({ opened: w.opened, count: w.count + 1 })));
        try {
          if (entry?.operation === "PUT") await kv.update(key, value, entry.revision);
          else await kv.create(key, value);
          return { kind: "allowed" };
        } catch (e) {
          // Another instance counted a trigger meanwhile (a wrong last sequence): count again.
          if (!wrongLastSequence(e)) throw e;
        }
      }
      return { kind: "limited", retryAfterS: 1 };
    } catch (e) {
      return { kind: "unavailable", reason: `the rate-limit window could not be counted in NATS: ${(e as Error).message}` };
    }
  }
}

/** A rate-limit window as stored; undefined when unreadable (it is then opened afresh). */
function parseWindow(data: Uint8Array): { opened: number; count: number } | undefined {
  const v = parseObject(data);
  return typeof v?.opened === "number" && typeof v.count === "number" ? { opened: v.opened, count: v.count } : undefined;
}

/** A stored JSON object, or undefined when the value is none. */
function parseObject(data: Uint8Array): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(Buffer.from(data).toString()) as unknown;
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A delivery claimed by this job: `first` is the job it went to before, else the key and revision of this job's claim. */
export type Claim = { first: string; key?: never; revision?: never } | { first?: never; key: string; revision: number };

/** deduplicate over all instances: the first job id of each delivery id, kept for the hook's window. */
export class DeliveryClaims {
  /** The bucket, opened once: the first burst of deliveries shares one open (a failed one is tried again). */
  private kv: Promise<KV> | undefined;

  constructor(
    private readonly js: JetStreamClient,
    private readonly signer: QueueSigner,
    private readonly warn: (message: string) => void,
  ) {}

  /** Opens the bucket (once; a failed open is tried again at the next call). */
  open(): Promise<KV> {
    this.kv ??= this.js.views.kv(DELIVERIES_BUCKET, { history: 1, ttl: MAX_DEDUP_WINDOW, storage: StorageType.File }).catch((e: unknown) => {
      this.kv = undefined;
      throw e;
    });
    return this.kv;
  }

  /** The first job id of this delivery within the window, or the key and revision this job claimed it with. */
  async claim(hook: QueueHook, deliveryId: string, jobId: string): Promise<Claim> {
    const kv = await this.open();
    const id = deliveryId.length <= 100 ? token(deliveryId) : createHash("sha256").update(deliveryId).digest("hex");
    const key = `${token(hook.id)}.${id}`;
    // When it was claimed travels signed with the job id: a copy of an old claim put back does not start a new window.
    const value = this.signer.seal(kvSubject(DELIVERIES_BUCKET, key), Buffer.from(JSON.stringify({ job: jobId, at: Date.now() })));
    for (;;) {
      try {
        return { key, revision: await kv.create(key, value) };
      } catch {
        const entry = await kv.get(key);
        if (entry?.operation !== "PUT") continue; // removed meanwhile: claim again
        const stored = unsealed(DELIVERIES_BUCKET, entry, this.signer, "a delivery claim", this.warn);
        const held = stored && parseClaim(stored);
        if (held && Date.now() - held.at < hook.dedupWindowMs) return { first: held.job };
        try {
          return { key, revision: await kv.update(key, value, entry.revision) };
        } catch {
          // another instance claimed it first: read again
        }
      }
    }
  }

  /** Forgets this job's claim (its job was refused: the delivery's next copy must run). */
  async release(claim: { key: string; revision: number }): Promise<void> {
    await (await this.kv)?.delete(claim.key, { previousSeq: claim.revision }).catch(() => undefined);
  }
}

/** A delivery claim as stored; undefined when unreadable (it is then claimed afresh). */
function parseClaim(data: Uint8Array): { job: string; at: number } | undefined {
  const v = parseObject(data);
  return typeof v?.job === "string" && typeof v.at === "number" ? { job: v.job, at: v.at } : undefined;
}
