// Writing to an FTP data connection that stays open: the device's downloads and listings, the client's uploads.
import type { Socket } from "node:net";

/**
 * Writes `buffers` at once (one writev) and resolves when the kernel has them, which paces the writer. Rejects
 * with the socket's error, or with `closed()` when the socket is closed, before or meanwhile.
 */
export function writeAll(socket: Socket, buffers: readonly Buffer[], closed: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    const finish = (failure?: Error | null): void => {
      socket.off("close", onClose).off("error", finish);
      if (failure) reject(failure);
      else resolve();
    };
    const onClose = (): void => finish(closed());
    if (socket.destroyed) return onClose();
    socket.on("close", onClose).on("error", finish);
    socket.cork();
    for (const [i, b] of buffers.entries()) socket.write(b, i === buffers.length - 1 ? finish : undefined);
    socket.uncork();
  });
}
