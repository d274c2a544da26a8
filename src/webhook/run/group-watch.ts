// Commands started through child_process must die with the server too, even when it is killed
// with SIGKILL and no code of ours runs. A small /bin/sh process, in its own session so terminal
// signals pass it by, is told each command's process group as it starts ("+ pgid") and ends
// ("- pgid"); when its stdin closes (the server exited, however it did), it SIGKILLs the groups
// it still holds. What it cannot cover: a server killed between a command's start and the "+"
// line reaching the pipe (one write, in the same turn as the spawn), and processes the command
// moved to a group of their own.
import { spawn, type ChildProcess } from "node:child_process";

const WATCH = `g=' '
while read -r op p; do
  case $op$g in
    "+"*) g="$g$p " ;;
    "-"*" $p "*) g="\${g%% $p *} \${g#* $p }" ;;
  esac
done
for p in $g; do kill -s KILL -- "-$p"; done 2>/dev/null`;

export class GroupWatch {
  /** undefined until the first command; null when /bin/sh could not start (then nothing watches). */
  private watcher: ChildProcess | null | undefined;

  add(pgid: number): void {
    this.send(`+ ${pgid}\n`);
  }

  remove(pgid: number): void {
    this.send(`- ${pgid}\n`);
  }

  /**
   * Starts the watcher if it is not running yet. Called before a command is spawned: started lazily
   * after it, the watcher's own fork left the new command unwatched for milliseconds (a server killed
   * then orphaned it, seen in the kill -9 test); now only the write of its "+" line is in between.
   */
  start(): void {
    if (this.watcher === undefined) {
      const w = spawn("/bin/sh", ["-c", WATCH], { stdio: ["pipe", "ignore", "ignore"], detached: true });
      w.once("error", () => (this.watcher = null));
      w.once("exit", () => (this.watcher = null));
      w.stdin!.on("error", () => undefined);
      // It must neither keep the server alive nor be waited for.
      w.unref();
      (w.stdin as unknown as { unref?: () => void }).unref?.();
      this.watcher = w;
    }
  }

  private send(line: string): void {
    this.start();
    this.watcher?.stdin?.write(line);
  }
}
