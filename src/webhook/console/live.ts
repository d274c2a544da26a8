// The output of the commands running in this process, as it comes, for the console's live view
// (-console). The one owner of it: LocalDispatch pushes each command's chunks under its job id, the
// console's event streams listen. A late listener first gets the tail seen so far (at most `keep`
// bytes); a run's entry goes when its command ends (the job record then holds the output). With
// -queue a relay carries the chunks to the consoles of the other instances (queue/live-relay.ts).
import type { OutputSink } from "../run/spawn.js";

/** Output between instances: published by the one running the command, received by the others' consoles. */
export interface LiveRelay {
  publish(id: string, chunk: Buffer): void;
  /** Calls `onChunk` with each chunk of job `id` published from now on; the call returned stops it. */
  subscribe(id: string, onChunk: (chunk: Buffer) => void): () => void;
}

export interface LiveListener {
  output(chunk: Buffer): void;
  /** The command ended (its job record has the rest). */
  ended(): void;
}

interface Run {
  tail: Buffer[];
  size: number;
  listeners: Set<LiveListener>;
}

export class LiveOutput {
  private readonly runs = new Map<string, Run>();
  private relay: LiveRelay | undefined;

  constructor(private readonly keep: number) {}

  /** -queue: chunks go to and come from the other instances too. */
  relayThrough(relay: LiveRelay): void {
    this.relay = relay;
  }

  /** A command of job `id` starts: the sink for its output, and the call for its end. */
  open(id: string): { sink: OutputSink; close: () => void } {
    const run: Run = { tail: [], size: 0, listeners: new Set() };
    this.runs.set(id, run);
    const sink: OutputSink = (c) => {
      run.tail.push(c);
      run.size += c.length;
      while (run.tail.length > 1 && run.size - run.tail[0]!.length >= this.keep) run.size -= run.tail.shift()!.length;
      for (const l of run.listeners) l.output(c);
      this.relay?.publish(id, c);
    };
    const close = (): void => {
      if (this.runs.get(id) === run) this.runs.delete(id);
      for (const l of run.listeners) l.ended();
      run.listeners.clear();
    };
    return { sink, close };
  }

  /**
   * Listens to job `id`'s running command: the output so far, or undefined when none runs here.
   * With a relay, a command running elsewhere (or later here) is listened to through it (no output so far).
   */
  listen(id: string, l: LiveListener): { sofar: Buffer; stop: () => void } | undefined {
    const run = this.runs.get(id);
    if (!run) return this.relay && { sofar: Buffer.alloc(0), stop: this.relay.subscribe(id, (c) => l.output(c)) };
    run.listeners.add(l);
    return { sofar: Buffer.concat(run.tail), stop: () => run.listeners.delete(l) };
  }
}
