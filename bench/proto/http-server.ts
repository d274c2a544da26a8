// Prototype: node:http transport around logic.ts, single process or clustered.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { handle, type RawRequest } from "./logic.js";
import { protoOptions } from "./options.js";
import { startMaybeClustered } from "./cluster-start.js";
import { makeSpawner } from "./spawners.js";

const opts = protoOptions();

function serve(): void {
  const spawner = makeSpawner(opts.spawn);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (opts.mode === "ok") {
      req.resume();
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers: Record<string, string> = {};
      const raw = req.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) headers[raw[i].toLowerCase()] = raw[i + 1];
      const parsed: RawRequest = {
        method: req.method ?? "GET",
        target: req.url ?? "/",
        headers,
        body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks),
        remoteAddr: `${req.socket.remoteAddress}:${req.socket.remotePort}`,
      };
      const out = handle(parsed);
      if (out !== "execute") {
        res.writeHead(out.status, out.headers).end(out.body);
        return;
      }
      spawner.run("/bin/true", [], { cwd: "/tmp", env: { HOOK_X: "1" } }).then(
        (r) => {
          if (r.code === 0) res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(r.output);
          else res.writeHead(500).end("Error occurred while executing the hook's command. Please check your logs for more details.");
        },
        () => res.writeHead(500).end("spawn failed"),
      );
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(opts.port, "127.0.0.1");
}

startMaybeClustered(opts, serve);
