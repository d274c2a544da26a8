// The console's live output across instances (-queue -console): each chunk a command writes is
// published on webhook.live.<job> (core NATS, not stored: a console that is not listening misses
// it, and the job record has the tail), sealed with -queue-key-file when given; a console showing a
// run that executes elsewhere subscribes to it. A chunk not sealed with the key is ignored.
import type { NatsConnection } from "nats";
import type { LiveRelay } from "../console/live.js";
import { jobKey } from "./names.js";
import type { QueueSigner } from "./signing.js";

const liveSubject = (id: string): string => `webhook.live.${jobKey(id)}`;

export class NatsLiveRelay implements LiveRelay {
  constructor(
    private readonly nc: NatsConnection,
    private readonly signer: QueueSigner,
  ) {}

  publish(id: string, chunk: Buffer): void {
    const subject = liveSubject(id);
    try {
      this.nc.publish(subject, this.signer.seal(subject, chunk));
    } catch {
      // The connection is down or closing: the record keeps the output's tail.
    }
  }

  subscribe(id: string, onChunk: (chunk: Buffer) => void): () => void {
    const sub = this.nc.subscribe(liveSubject(id), {
      callback: (err, m) => {
        if (err) return;
        const { data } = this.signer.unseal(m.subject, m.data);
        if (data) onChunk(Buffer.from(data));
      },
    });
    return () => sub.unsubscribe();
  }
}
