// Which FTP connections a sync gets: waits until the device's FTP server logs us in, then opens the pool — in
// block mode when the server takes it (block-mode.ts), else basic-ftp's stream mode (stream-mode.ts, loaded only then).
import { BlockConnection } from "./block-mode.js";
import { CardPool, EXTRA_LOGIN_TIMEOUT_MS, type FtpTarget, type RemoteConnection } from "./remote.js";
import { FtpLoginError, FtpUnreachableError } from "../sync/errors.js";

/**
 * Tries the target's ports until one logs in, retrying until `timeoutMs` passes (a refused login fails at once),
 * and opens up to `size` connections on it.
 */
export async function connectCard(target: FtpTarget, timeoutMs: number, size: number, signal?: AbortSignal): Promise<CardPool<RemoteConnection>> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    for (const port of target.ports) {
      if (signal?.aborted) throw signal.reason;
      try {
        const first = await BlockConnection.tryOpen(target, port);
        if (first) return await blockPool(first, target, port, size);
        // Retried like the probe when it fails: a server that takes one client at a time may take a moment to
        // free the slot the probe had.
        const { openStreamPool } = await import("./stream-mode.js");
        return await openStreamPool(target, port, size);
      } catch (e) {
        if (e instanceof FtpLoginError) throw e;
        const err = e as NodeJS.ErrnoException;
        last = `${port}: ${err.code ?? err.message}`;
      }
    }
    if (Date.now() > deadline) {
      const ports = target.ports.join(" or ");
      throw new FtpUnreachableError("FRAMEFI_FTP_UNREACHABLE", { host: target.host, ports, seconds: Math.round(timeoutMs / 1000), last });
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function blockPool(first: BlockConnection, target: FtpTarget, port: number, size: number): Promise<CardPool<BlockConnection>> {
  const extra = Promise.allSettled(
    Array.from({ length: Math.max(0, size - 1) }, () => withTimeout(BlockConnection.open(target, port), EXTRA_LOGIN_TIMEOUT_MS)),
  );
  const opened = async (): Promise<BlockConnection[]> => (await extra).flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  let features: Set<string>;
  try {
    features = await first.features();
  } catch (e) {
    for (const c of [first, ...(await opened())]) c.abort();
    throw e;
  }
  return new CardPool([first, ...(await opened())], features.has("MFMT"));
}

/** `opening`, or its failure after `ms`; a connection that opens later is dropped. */
function withTimeout(opening: Promise<BlockConnection>, ms: number): Promise<BlockConnection> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no login within ${ms} ms`));
      void opening.then(
        (c) => c.abort(),
        () => undefined,
      );
    }, ms);
    opening.then(
      (c) => {
        clearTimeout(timer);
        resolve(c);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
