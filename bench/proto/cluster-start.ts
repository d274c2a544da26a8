// Starts `serve` in this process, or in N cluster workers sharing the port.
import cluster from "node:cluster";
import type { ProtoOptions } from "./options.js";

export function startMaybeClustered(opts: ProtoOptions, serve: () => void): void {
  if (opts.workers === 0) {
    serve();
    return;
  }
  if (cluster.isPrimary) {
    cluster.schedulingPolicy = opts.sched === "none" ? cluster.SCHED_NONE : cluster.SCHED_RR;
    for (let i = 0; i < opts.workers; i++) cluster.fork();
    process.on("SIGTERM", () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.kill();
      process.exit(0);
    });
    return;
  }
  serve();
}
