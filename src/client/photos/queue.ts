// A queue between producers (conversions) and consumers (FTP connections): consumers wait for the next item
// until the queue is closed and empty. And the limit on conversions at once.
import { availableParallelism } from "node:os";

/** How many conversions (and file reads) run at once: one per core. */
export const WORKERS = availableParallelism();

/** Runs `fn` on every item, at most `limit` at once. */
export async function forEachLimited<T>(items: Iterable<T>, limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = items[Symbol.iterator]();
  const worker = async (): Promise<void> => {
    for (let next = it.next(); !next.done; next = it.next()) await fn(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly waiting: ((r: IteratorResult<T, undefined>) => void)[] = [];
  private closed = false;

  push(item: T): void {
    const take = this.waiting.shift();
    if (take) take({ value: item, done: false });
    else this.items.push(item);
  }

  /** No more items: waiting consumers finish once the queue is empty. */
  close(): void {
    this.closed = true;
    for (const take of this.waiting.splice(0)) take({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.waiting.push(resolve));
      },
    };
  }
}
