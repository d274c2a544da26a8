// A hostile WebDAV server (an in-process node:http server) as `framefi sync`'s SOURCE: it lists names that climb
// out of the folder ("../", encoded "..", "sub/../../") and one with terminal escapes. Nothing lands outside the
// local mirror or the card's folder, the escapes are printed blanked, and the files that are fine arrive.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { readdir, readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi } from "./fixtures/cli.js";

const NAMES = ["../escape1.jpg", "..%2F..%2Fescape2.jpg", "%2e%2e/escape3.jpg", "sub/../../escape4.jpg", "ok.jpg", "bad%1B%5D0%3BPWNED%07.jpg"];

function multistatus(path: string): string {
  const file = (n: string): string =>
    `<d:response><d:href>${path}${n}</d:href><d:propstat><d:prop><d:resourcetype/><d:getcontentlength>5</d:getcontentlength>` +
    "<d:getlastmodified>Mon, 01 Jan 2024 00:00:00 GMT</d:getlastmodified></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>";
  return (
    `<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>${path}</d:href><d:propstat><d:prop><d:resourcetype><d:collection/>` +
    `</d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>${NAMES.map(file).join("")}</d:multistatus>`
  );
}

describe("framefi sync from a hostile WebDAV server", () => {
  let dev: RunningDevice;
  let server: Server;
  let home: string;
  before(async () => {
    [dev, home] = await Promise.all([startDevice(), tempDir("framefi-hostile-share-")]);
    server = createServer((req, res) => {
      if (req.method === "PROPFIND") {
        res.writeHead(207, { "content-type": "application/xml" }).end(multistatus(req.url!.replace(/\/?$/, "/")));
      } else if (req.method === "GET") res.writeHead(200, { "content-length": 5 }).end("EVIL!");
      else res.writeHead(405).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });
  after(async () => {
    server?.close();
    await dev?.stop();
    await removeDir(home);
  });

  test("names that climb out land nowhere; escapes are blanked; the fine file arrives", async () => {
    const cache = join(home, "deep", "cache");
    const { port } = server.address() as AddressInfo;
    const r = await framefi([
      "--host",
      `127.0.0.1:${dev.port}`,
      "sync",
      "--ftp-port",
      String(dev.ftpPort),
      `webdav://127.0.0.1:${port}/dav/`,
      "--to",
      "/in",
      "--cache",
      cache,
    ]);
    assert.ok(r.code === 0 || r.code === 1, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/, "no control character reaches the terminal");
    assert.equal(await readFile(join(dev.card, "in", "ok.jpg"), "utf8"), "EVIL!");
    for (const root of [home, dev.card]) {
      const all = await readdir(root, { recursive: true });
      assert.deepEqual(
        all.filter((p) => p.includes("escape")),
        [],
        `nothing climbed out into ${root}`,
      );
    }
  });
});
