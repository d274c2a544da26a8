// Signed shared-queue messages (-queue-key-file): with a key shared by the instances, every job
// message, output chunk, job record, rate-limit window and delivery claim carries an HMAC-SHA256 of
// its subject and bytes, and one whose signature is missing or wrong is refused. Messages carry it in a header; a job record
// (stored in a key-value bucket, whose puts carry no headers) carries it in front of its bytes.
// Without a key nothing is signed or checked. The signature proves a message comes from a holder
// of the key; it does not make it fresh (a copied message or record can be published again).
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { headers as natsHeaders, type MsgHdrs } from "nats";
import { sameSecret } from "../../shared/secret.js";
import { type ErrorArgs, WebhookError } from "../errors.js";

export const SIGNATURE_HEADER = "Webhook-Signature";
/** Hex digits of a signature. */
const SIGNATURE_CHARS = 64;
/** Shorter keys are refused: guessable. */
const MIN_KEY_BYTES = 16;

export class QueueKeyError extends WebhookError {
  constructor(...args: ErrorArgs<"WEBHOOK_QUEUE_KEY_UNREADABLE" | "WEBHOOK_QUEUE_KEY_SHORT">) {
    super(...args);
    this.name = "QueueKeyError";
  }
}

/** The key in `path`, without a final line break; throws QueueKeyError (never quoting the file) when unusable. */
export function readQueueKey(path: string): Buffer {
  let key: Buffer;
  try {
    key = readFileSync(path);
  } catch (e) {
    throw new QueueKeyError("WEBHOOK_QUEUE_KEY_UNREADABLE", { path, reason: (e as NodeJS.ErrnoException).code ?? (e as Error).message }, { cause: e });
  }
  let end = key.length;
  if (end > 0 && key[end - 1] === 0x0a) end--;
  if (end > 0 && key[end - 1] === 0x0d) end--;
  key = key.subarray(0, end);
  if (key.length < MIN_KEY_BYTES) {
    throw new QueueKeyError("WEBHOOK_QUEUE_KEY_SHORT", { path, bytes: key.length, min: MIN_KEY_BYTES });
  }
  return key;
}

/** Signs and checks the queue's messages with one key (or, without a key, neither). */
export class QueueSigner {
  constructor(private readonly key: Buffer | undefined) {}

  private signature(subject: string, data: Uint8Array): string {
    return createHmac("sha256", this.key!).update(subject).update("\n").update(data).digest("hex");
  }

  /** Whether there is a key: what is not signed with it is refused. */
  get keyed(): boolean {
    return this.key !== undefined;
  }

  /**
   * The JetStream message id a delivery is published with: with a key, one a publisher without the
   * key cannot compute (and so cannot send first, to make the real delivery a duplicate); without, `id`.
   */
  messageId(id: string): string {
    return this.key ? this.signature("message-id", Buffer.from(id)) : id;
  }

  /** The headers to publish `data` on `subject` with: `h` (or none) plus the signature when there is a key. */
  sign(subject: string, data: Uint8Array, h?: MsgHdrs): MsgHdrs | undefined {
    if (!this.key) return h;
    const out = h ?? natsHeaders();
    out.set(SIGNATURE_HEADER, this.signature(subject, data));
    return out;
  }

  /** Whether a message carries a signature at all (an instance without a key leaves such jobs to the instances with one). */
  static signed(h: MsgHdrs | undefined): boolean {
    return h?.has(SIGNATURE_HEADER) === true;
  }

  /** Why a message received on `subject` is refused ("no signature", "a wrong signature"), or undefined when it may be used. */
  refusal(subject: string, data: Uint8Array, h: MsgHdrs | undefined): string | undefined {
    if (!this.key) return undefined;
    const given = h?.get(SIGNATURE_HEADER) ?? "";
    if (given === "") return "no signature";
    return sameSecret(given, this.signature(subject, data)) ? undefined : "a wrong signature";
  }

  /** A value to store under `subject`: with a key, the signature and a line break in front of `data`; without, `data`. */
  seal(subject: string, data: Uint8Array): Buffer {
    if (!this.key) return Buffer.from(data);
    return Buffer.concat([Buffer.from(`${this.signature(subject, data)}\n`), data]);
  }

  /** The bytes of a value stored under `subject` (as seal made it), or why it is refused. */
  unseal(subject: string, value: Uint8Array): { data: Uint8Array; refusal?: never } | { refusal: string; data?: never } {
    if (!this.key) return { data: value };
    const given = Buffer.from(value.subarray(0, SIGNATURE_CHARS)).toString("latin1");
    if (value[SIGNATURE_CHARS] !== 0x0a || !/^[0-9a-f]+$/.test(given)) return { refusal: "no signature" };
    const data = value.subarray(SIGNATURE_CHARS + 1);
    return sameSecret(given, this.signature(subject, data)) ? { data } : { refusal: "a wrong signature" };
  }
}
