// Details the reference fixes exactly: Go's usage layout,
// gorilla/mux routing answers, Go's JSON encoding of entire-payload, response content types (Go's sniffing),
// XML decoding and the working-directory error. Real bin/webhook, real HTTP, real commands.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { bin, freePort, removeDir, start, tempDir, type RunningProgram } from "../helpers.js";

/** Runs a program to the end and waits until its output pipes are closed too (not just 'exit'). */
function run(command: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("flags", () => {
  test("-help prints Go's usage layout on stderr and exits 0", async () => {
    const r = await run(bin("webhook"), ["-help"]);
    assert.equal(r.code, 0);
    assert.ok(
      r.stderr.startsWith(`Usage of ${bin("webhook")}:\n  -cert string\n    \tpath to the HTTPS certificate pem file (default "cert.pem")\n`),
      r.stderr,
    );
    assert.ok(r.stderr.includes("  -debug\n    \tshow debug output\n  -header value\n"), r.stderr);
    assert.ok(r.stderr.includes('  -ip string\n    \tip the webhook should serve hooks on (default "0.0.0.0")\n'));
    assert.ok(r.stderr.includes("  -port int\n    \tport the webhook should serve hooks on (default 9000)\n"));
  });

  test("a bad -header value is refused as Go's flag package does", async () => {
    const r = await run(bin("webhook"), ["-header", "novalue"]);
    assert.equal(r.code, 2);
    assert.ok(r.stderr.startsWith(`invalid value "novalue" for flag -header: header flag must be in name=value format\nUsage of ${bin("webhook")}:`), r.stderr);
  });

  test("a hooks file holding an empty list, without -verbose or -nopanic, stops with the reference's message", async () => {
    const dir = await tempDir();
    try {
      await writeFile(join(dir, "hooks.json"), "[]");
      const r = await run(bin("webhook"), ["-hooks", join(dir, "hooks.json"), "-port", String(await freePort())]);
      assert.equal(r.code, 1);
      assert.match(r.stdout, /couldn't load any hooks from file!\naborting webhook execution since the -verbose flag is set to false\./);
    } finally {
      await removeDir(dir);
    }
  });
});

describe("requests", () => {
  let dir: string;
  let server: RunningProgram;
  let base: string;

  before(async () => {
    dir = await tempDir();
    const html = join(dir, "html.sh");
    await writeFile(html, "#!/bin/sh\nprintf '<html><body>hi</body></html>'\n");
    await chmod(html, 0o755);
    const hooks = [
      {
        id: "payload",
        "execute-command": "/bin/echo",
        "include-command-output-in-response": true,
        "pass-arguments-to-command": [{ source: "entire-payload" }],
      },
      {
        id: "xml",
        "execute-command": "/bin/echo",
        "include-command-output-in-response": true,
        "pass-arguments-to-command": [
          { source: "payload", name: "feed.entry.1.title" },
          { source: "payload", name: "feed.entry.0.-lang" },
          { source: "payload", name: "feed.note.#text" },
        ],
      },
      { id: "html", "execute-command": html, "include-command-output-in-response": true },
      { id: "nocwd", "execute-command": "/bin/true", "command-working-directory": join(dir, "missing"), "include-command-output-in-response": true },
      {
        id: "xml-first",
        "execute-command": "/bin/echo",
        "include-command-output-in-response": true,
        "pass-arguments-to-command": [{ source: "entire-payload" }],
      },
      { id: "bmw", "execute-command": "/bin/true", "response-message": "BMW build queued" },
      {
        id: "printf",
        "execute-command": "/usr/bin/printf",
        "include-command-output-in-response": true,
        "pass-arguments-to-command": [{ source: "url", name: "f" }],
      },
      {
        id: "fails-json",
        "execute-command": "/bin/false",
        "include-command-output-in-response": true,
        "response-headers": [{ name: "Content-Type", value: "application/json" }],
      },
    ];
    await writeFile(join(dir, "hooks.json"), JSON.stringify(hooks));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = start(bin("webhook"), ["-hooks", join(dir, "hooks.json"), "-ip", "127.0.0.1", "-port", String(port), "-verbose"]);
    await server.waitFor(/serving hooks on/, 20_000);
  });

  after(async () => {
    await server.stop();
    await removeDir(dir);
  });

  test("entire-payload is encoded as Go's json.Marshal: sorted keys, numbers as sent, HTML-safe escapes", async () => {
    const r = await fetch(`${base}/hooks/payload`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: '{"b":"<a&b>","a":1.50,"c":[true,null]}',
    });
    assert.equal(r.status, 200);
    assert.equal(await r.text(), '{"a":1.50,"b":"\\u003ca\\u0026b\\u003e","c":[true,null]}\n');
  });

  test("XML: namespace prefixes dropped, attributes as -name, repeated elements as arrays, text as #text", async () => {
    const body = `<?xml version="1.0"?><f:feed xmlns:f="urn:x"><f:entry lang="en"><title>one</title></f:entry><f:entry><title>two</title></f:entry><note kind="k">hello</note></f:feed>`;
    const r = await fetch(`${base}/hooks/xml`, { method: "POST", headers: { "Content-Type": "application/xml" }, body });
    assert.equal(await r.text(), "two en hello\n");
  });

  test("XML: the first element is decoded and the rest never read; what comes before it is checked as Go's decoder checks it", async () => {
    // Each checked against adnanh/webhook 2.8.2 answering the same body.
    const cases: [string, string][] = [
      ["<a>1</a><b>2</b>", '{"a":"1"}'],
      ["<a>1</a>trailing", '{"a":"1"}'],
      ["<a>1</a><", '{"a":"1"}'],
      ["junk<a>1</a>", '{"a":"1"}'],
      ["\ufeff<a>1</a>", '{"a":"1"}'],
      ['<!-- <b>x</b> --><?pi x?><!DOCTYPE a [<!ENTITY e "v">]><a x="1>2"><b/></a>tail', '{"a":{"-x":"1\\u003e2","b":""}}'],
      ['<?xml version="1.0" encoding="ISO-8859-1"?><a>1</a>', "null"],
      ["</a><a>1</a>", "null"],
      ["<a><b>1</a>", "null"],
      // What Go's decoder refuses before the element, and how it reads the declaration
      ["a & b <r>1</r>", "null"],
      ["&#0;<r>1</r>", "null"],
      ["&#65;<r>1</r>", '{"r":"1"}'],
      ["<r>&toString;</r>", "null"],
      ["<r>&#xD800;&#x1F600;</r>", '{"r":"\ufffd\ud83d\ude00"}'],
      ["]]><r>1</r>", "null"],
      ["a\u0001<r>1</r>", "null"],
      ["<!-x><r>1</r>", "null"],
      ["<!-- a -- b --><r>1</r>", "null"],
      ["<? ?><r>1</r>", "null"],
      ['<?xml version="1.1"?><r>1</r>', "null"],
      ['<?xml version="1.0" encoding = "latin1"?><r>1</r>', '{"r":"1"}'],
      ['<?xml version="1.0" xencoding="latin1"?><r>1</r>', "null"],
      ['<!DOCTYPE r PUBLIC "a>b" "<c/>"><r>1</r>', '{"r":"1"}'],
      ['<!DOCTYPE a [<!ENTITY x "]><b>">]><r>1</r>', '{"r":"1"}'],
    ];
    for (const [body, payload] of cases) {
      const r = await fetch(`${base}/hooks/xml-first`, { method: "POST", headers: { "Content-Type": "application/xml" }, body });
      assert.equal(await r.text(), `${payload}\n`, body);
    }
    const notUtf8 = await fetch(`${base}/hooks/xml-first`, {
      method: "POST",
      headers: { "Content-Type": "application/xml" },
      body: Buffer.from("\xff\xfe<r>1</r>", "latin1"),
    });
    assert.equal(await notUtf8.text(), "null\n");
  });

  test("HTML output is sent as text/html, as Go's content sniffing does", async () => {
    const r = await fetch(`${base}/hooks/html`);
    assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(await r.text(), "<html><body>hi</body></html>");
  });

  test("any body is typed by Go's whole sniffing table, even plain words that start like a signature", async () => {
    // Each checked against adnanh/webhook 2.8.2 (built with Go) answering the same request.
    assert.equal((await fetch(`${base}/hooks/bmw`)).headers.get("content-type"), "image/bmp");
    const cases: [string, string][] = [
      ["ID3 tag job started", "audio/mpeg"],
      ["\\377\\376ab", "text/plain; charset=utf-16le"],
      ["wOFFabcd", "font/woff"],
      ["\\000asm", "application/wasm"],
      ["RIFF\\001\\002\\003\\004WAVEfmt", "audio/wave"],
      ["%%!PS-Adobe-3.0", "application/postscript"],
      ["plain text\\n", "text/plain; charset=utf-8"],
      ["\\001\\002", "application/octet-stream"],
    ];
    for (const [format, type] of cases) {
      const r = await fetch(`${base}/hooks/printf?f=${encodeURIComponent(format)}`);
      assert.equal(r.headers.get("content-type"), type, format);
    }
  });

  test("a failed command's 500 keeps the Content-Type of the hook's response-headers, as the reference's does", async () => {
    const r = await fetch(`${base}/hooks/fails-json`);
    assert.equal(r.status, 500);
    assert.equal(r.headers.get("content-type"), "application/json");
    assert.equal(await r.text(), "Error occurred while executing the hook's command. Please check your logs for more details.");
  });

  test("a missing command-working-directory: 500 and the chdir error in the log", async () => {
    const r = await fetch(`${base}/hooks/nocwd`);
    assert.equal(r.status, 500);
    await server.waitFor(/error occurred: chdir .*missing: no such file or directory/);
  });

  test("a path outside the prefix gets mux's '404 page not found'; an unclean path is redirected", async () => {
    const r = await fetch(`${base}/elsewhere`);
    assert.equal(r.status, 404);
    assert.equal(await r.text(), "404 page not found\n");
    const red = await fetch(`${base}/hooks//payload?x=1`, { redirect: "manual" });
    assert.equal(red.status, 301);
    assert.equal(red.headers.get("location"), "/hooks/payload?x=1");
  });
});
