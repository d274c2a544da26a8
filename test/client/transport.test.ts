// The client's HTTP transport (node:http in src/client/api/index.ts) against a server in the test that records each
// request: the headers a device relies on, redirects followed as fetch followed them, uploads sized or chunked,
// the timeout, and a `framefi` that exits as soon as its last answer is in.
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { DeviceUnreachableError, FrameFiClient, FrameFiError } from "../../src/client/api/index.js";
import { framefi } from "./fixtures/cli.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const SUCCESS = JSON.stringify({ status: "success", message: "Done." });

describe("the client's HTTP transport", () => {
  let server: Server;
  let port: number;
  let seen: Seen[];
  /** How the server answers a request whose body has arrived; each test sets its own. */
  let respond: (req: IncomingMessage, res: ServerResponse) => void;
  let client: FrameFiClient;

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
        respond(req, res);
      });
    });
    // Idle connections stay open for a minute: a client that kept one would keep its process alive that long.
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
    port = (server.address() as { port: number }).port;
    client = new FrameFiClient({ host: `127.0.0.1:${port}`, user: "admin", password: "s3cret", timeoutMs: 2_000 });
  });
  beforeEach(() => {
    seen = [];
    respond = (_req, res) => res.end(SUCCESS);
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  test("a POST without a body announces Content-Length: 0, a GET none, a text body its length", async () => {
    await client.display("on");
    await client.displayStatus();
    await client.setBrightness(77);
    const [post, get, text] = seen;
    assert.equal(post!.headers["content-length"], "0");
    assert.equal(post!.headers["transfer-encoding"], undefined);
    assert.equal(get!.headers["content-length"], undefined);
    assert.equal(get!.headers["transfer-encoding"], undefined);
    assert.deepEqual([text!.headers["content-length"], text!.headers["content-type"], text!.body], ["2", "text/plain", "77"]);
    for (const s of seen) {
      assert.equal(s.headers.accept, "application/json");
      assert.equal(s.headers.authorization, "Basic " + Buffer.from("admin:s3cret").toString("base64"));
    }
  });

  test("redirects are followed: a POST answered 302 turns into a GET, and the login stays with the device's origin", async () => {
    respond = (req, res) => {
      if (req.url === "/mode/ftp") res.writeHead(302, { Location: `http://localhost:${port}/mode/msc`, "Content-Length": 0 }).end();
      else if (req.url === "/display/status") res.writeHead(301, { Location: "/display/status/" }).end();
      else res.end(JSON.stringify({ status: "success", display_status: "on", mode: "USB MSC" }));
    };
    await client.setMode("ftp");
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.headers.host, s.headers.authorization !== undefined, s.headers["content-length"]]),
      [
        ["POST", "/mode/ftp", `127.0.0.1:${port}`, true, "0"],
        ["GET", "/mode/msc", `localhost:${port}`, false, undefined],
      ],
    );
    seen = [];
    assert.equal((await client.displayStatus()).display_status, "on");
    assert.deepEqual(
      seen.map((s) => [s.url, s.headers.authorization !== undefined]),
      [
        ["/display/status", true],
        ["/display/status/", true],
      ],
    );
  });

  test("an upload of known size announces its length; a stream of unknown size goes chunked; a wrong size fails", async () => {
    let progress = 0;
    await client.upload({ name: "a.txt", data: Buffer.from("hello") }, undefined, (sent) => (progress = sent));
    assert.equal(progress, 5);
    await client.upload({ name: "b.txt", data: Readable.from([Buffer.from("ab"), Buffer.from("c")]) });
    const [sized, chunked] = seen;
    assert.equal(Number(sized!.headers["content-length"]), Buffer.byteLength(sized!.body));
    assert.match(sized!.body, /filename="a\.txt"\r\nContent-Type: application\/octet-stream\r\n\r\nhello\r\n--/);
    assert.equal(chunked!.headers["content-length"], undefined);
    assert.equal(chunked!.headers["transfer-encoding"], "chunked");
    assert.match(chunked!.body, /\r\n\r\nabc\r\n--/);
    await assert.rejects(client.upload({ name: "c.txt", data: Readable.from([Buffer.from("ab")]), size: 5 }), (e: unknown) => {
      assert.ok(e instanceof FrameFiError && !(e instanceof DeviceUnreachableError));
      assert.match(e.message, /only 2 of the 5 bytes/);
      return true;
    });
  });

  test("an answer that does not complete in time is a timeout", async () => {
    respond = (_req, res) => res.writeHead(200, { "Content-Length": 100 }).write("{");
    const quick = new FrameFiClient({ host: `127.0.0.1:${port}`, timeoutMs: 300 });
    await assert.rejects(quick.status(), (e: unknown) => {
      assert.ok(e instanceof DeviceUnreachableError);
      assert.match(e.message, /did not answer \(no answer within 300 ms\)/);
      return true;
    });
  });

  test("another web server at the address: one short line that says to check it, never the page itself", async () => {
    const page = `<!DOCTYPE HTML>\n<html><head><title>Error</title></head>\n<body>${"<p>not here</p>\n".repeat(50)}</body></html>\n`;
    respond = (req, res) => res.writeHead(req.method === "POST" ? 501 : 200, { "Content-Type": "text/html" }).end(page);
    for (const args of [["status"], ["mode", "ftp"]]) {
      const r = await framefi(["--host", `127.0.0.1:${port}`, ...args]);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr, /a web page, not the device API's JSON[.;] [Cc]heck that this is the device's address/);
      assert.ok(!r.stderr.includes("<"), "no HTML on the terminal");
    }
  });

  test("a foreign error's text: its first line, control characters blanked; a login page is a refused login", async () => {
    respond = (_req, res) => res.writeHead(500, { "Content-Type": "text/plain" }).end("line one\rline \x1b[2Jtwo\r\nthree");
    const r = await framefi(["--host", `127.0.0.1:${port}`, "status"]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "framefi: the device answered 500: line one\n");
    respond = (_req, res) => res.writeHead(401, { "Content-Type": "text/html" }).end("401 Unauthorized\n");
    const login = await framefi(["--host", `127.0.0.1:${port}`, "status"]);
    assert.equal(login.code, 4);
    assert.match(login.stderr, /refused the login \(401\)\. Give its web user and password/);
  });

  test("an address with a path: the hint says the API is at the device's root", async () => {
    respond = (_req, res) => res.writeHead(404, { "Content-Type": "text/html" }).end("<html><body>no</body></html>");
    const r = await framefi(["--host", `http://127.0.0.1:${port}/api`, "status"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /without the path \/api: e\.g\. http:\/\/127\.0\.0\.1:\d+\)$/m);
  });

  test("an address without a port is port 80, as on the firmware: the error suggests framefi-device's 8080", async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737), which no network routes: whatever listens on port 80 of this machine,
    // the request is refused, unreachable or runs into the timeout, and each of those ends with the hint.
    const r = await framefi(["--host", "192.0.2.1", "--timeout", "2", "status"]);
    assert.notEqual(r.code, 0, r.stderr);
    assert.match(r.stderr, /--host 192\.0\.2\.1 has no port, so the web API is taken at port 80.*e\.g\. 192\.0\.2\.1:8080\)$/m);
  });

  test("framefi exits right after its last answer: no socket or timer keeps it alive", async () => {
    respond = (_req, res) => res.end(JSON.stringify({ status: "success", display_status: "on" }));
    const started = Date.now();
    const r = await framefi(["--host", `127.0.0.1:${port}`, "--timeout", "30", "--json", "display"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '{"status":"success","display_status":"on"}\n');
    // Far below the 30 s timeout and the server's 60 s keep-alive.
    assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
  });
});
