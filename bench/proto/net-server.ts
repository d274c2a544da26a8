// Prototype: the minimal HTTP/1.1 transport (http1.ts) around logic.ts, single process or clustered.
import { handle, type HookResponse } from "./logic.js";
import { createHttp1Server } from "./http1.js";
import { protoOptions } from "./options.js";
import { startMaybeClustered } from "./cluster-start.js";
import { makeSpawner } from "./spawners.js";

const opts = protoOptions();
const ok: HookResponse = { status: 200, headers: { "Content-Type": "text/plain" }, body: Buffer.from("ok") };
const failed: HookResponse = {
  status: 500,
  headers: { "Content-Type": "text/plain; charset=utf-8" },
  body: "Error occurred while executing the hook's command. Please check your logs for more details.",
};

function serve(): void {
  const spawner = makeSpawner(opts.spawn);
  const server = createHttp1Server({
    maxHeaderBytes: 1 << 20,
    maxBodyBytes: 10 << 20,
    idleTimeoutMs: 60_000,
    onRequest(req) {
      if (opts.mode === "ok") return ok;
      const out = handle(req);
      if (out !== "execute") return out;
      return spawner.run("/bin/true", [], { cwd: "/tmp", env: { HOOK_X: "1" } }).then(
        (r): HookResponse =>
          r.code === 0 ? { status: 200, headers: { "Content-Type": "text/plain; charset=utf-8" }, body: r.output } : failed,
      );
    },
  });
  server.listen(opts.port, "127.0.0.1");
}

startMaybeClustered(opts, serve);
