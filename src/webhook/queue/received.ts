// Plain publishes confirmed in bulk. A JetStream request (a key-value put, ackAck) costs the
// client about 60–100 µs of CPU (an inbox token, a timer, a reply to parse); a plain publish about
// 10, and one PING answered by PONG confirms everything the connection sent before it: the NATS
// server has read it (it handles a connection's messages in order). Used where the reply carries
// nothing the instance needs: the ack of a finished job.
import type { NatsConnection } from "nats";

/** Resolves once the NATS server has read everything `nc` sent so far; rejects after `timeoutMs` or when the connection drops first. */
export function received(nc: NatsConnection, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the NATS server did not answer within ${timeoutMs}ms`)), timeoutMs);
  });
  return Promise.race([nc.flush(), late]).finally(() => clearTimeout(timer));
}
