// The output of the commands running in this process, as it comes, for the console's live view
// (-console). The one owner of it: LocalDispatch pushes each command's chunks under its job id, the
// console's event streams listen. A late listener first gets the tail seen so far (at most `keep`
// bytes); a run's entry goes when its command ends (the job record then holds the output).
import type { OutputSink } from "../run/spawn.js";

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

  constructor(private readonly keep: number) {}

  /** A command of job `id` starts: the sink for its output, and the call for its end. */
  open(id: string): { sink: OutputSink; close: () => void } {
    const run: Run = { tail: [], size: 0, listeners: new Set() };
    this.runs.set(id, run);
    const sink: OutputSink = (c) => {
      run.tail.push(c);
      run.size += c.length;
      while (run.tail.length > 1 && run.size - run.tail[0]!.length >= this.keep) run.size -= run.tail.shift()!.length;
      for (const l of run.listeners) l.output(c);
    };
    const close = (): void => {
      if (this.runs.get(id) === run) this.runs.delete(id);
      for (const l of run.listeners) l.ended();
      run.listeners.clear();
    };
    return { sink, close };
  }

  /** Listens to job `id`'s running command: the output so far, or undefined when none runs here. */
  listen(id: string, l: LiveListener): { sofar: Buffer; stop: () => void } | undefined {
    const run = this.runs.get(id);
    if (!run) return undefined;
    run.listeners.add(l);
    return { sofar: Buffer.concat(run.tail), stop: () => run.listeners.delete(l) };
  }
}
