// Listening on a TCP address or a Unix socket, shared by the programs: "::" takes every IPv4 and
// IPv6 address, and falls back to 0.0.0.0 on a host without IPv6.
import type { ListenOptions, Server } from "node:net";

/** Listens once; rejects with the listen error (EADDRINUSE, EACCES…). */
export function listenOn(server: Server, options: ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    // Both listeners go either way, so a server that retries does not pile them up.
    const onError = (e: Error): void => {
      server.off("listening", onListening);
      reject(e);
    };
    const onListening = (): void => {
      server.off("error", onError);
      // Later errors are a failed accept (ENOBUFS, ENOMEM): the server goes on listening, so one must not end the
      // program. (Running out of file descriptors is handled inside libuv and never gets here.)
      server.on("error", () => undefined);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(options);
  });
}

/** Listens on every address, IPv6 and IPv4 ("::"), or on 0.0.0.0 where the host has no IPv6; the host it took. */
export async function listenEverywhere(server: Server, port: number): Promise<"::" | "0.0.0.0"> {
  try {
    await listenOn(server, { host: "::", port, ipv6Only: false });
    return "::";
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EACCES") throw e;
    await listenOn(server, { host: "0.0.0.0", port });
    return "0.0.0.0";
  }
}
