// Command-line options shared by the transport prototypes.
import { parseArgs } from "node:util";

export interface ProtoOptions {
  port: number;
  /** 0 = single process; N = cluster with N workers. */
  workers: number;
  sched: "rr" | "none";
  /** "ok": answer 200 "ok" without reading anything (the machine's ceiling); "hook": run logic.ts. */
  mode: "ok" | "hook";
  spawn: string;
}

export function protoOptions(): ProtoOptions {
  const { values } = parseArgs({
    options: {
      port: { type: "string", default: "9000" },
      workers: { type: "string", default: "0" },
      sched: { type: "string", default: "rr" },
      mode: { type: "string", default: "hook" },
      spawn: { type: "string", default: "pipes" },
    },
  });
  return {
    port: Number(values.port),
    workers: Number(values.workers),
    sched: values.sched === "none" ? "none" : "rr",
    mode: values.mode === "ok" ? "ok" : "hook",
    spawn: values.spawn ?? "pipes",
  };
}
