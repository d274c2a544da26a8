// Hooks files (JSON, YAML, several -hooks, start-up errors, -nopanic) and
// the command line (Go flag syntax, -version, -help, unknown flags).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { bin, freePort, run, removeDir, tempDir } from "../helpers.js";
import { fixture, parseEcho, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
let dir = "";
const servers: Server[] = [];

/** Runs bin/webhook to completion on a free port (for start-up failures and one-shot flags). */
async function runWebhook(args: string[], cwd?: string) {
  const port = await freePort();
  return run(bin("webhook"), ["-ip", "127.0.0.1", "-port", String(port), ...args], {
    timeoutMs: 60_000,
    ...(cwd ? { cwd } : {}),
  });
}

async function serve(args: string[], opts: Parameters<typeof startServer>[1] = {}): Promise<Server> {
  const s = await startServer(args, opts);
  servers.push(s);
  return s;
}

before(async () => {
  dir = await tempDir("webhook-config-");
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await removeDir(dir);
});

describe("hooks files", { concurrency: true }, () => {
  test("a JSON hooks file is loaded and its hook runs", async () => {
    const file = await writeHooks(
      dir,
      [
        {
          id: "json-hook",
          "execute-command": echo,
          "include-command-output-in-response": true,
          "pass-arguments-to-command": [{ source: "string", name: "from-json" }],
        },
      ],
      "json-hooks.json",
    );
    const s = await serve(["-hooks", file]);
    const r = await send(`${s.base}/hooks/json-hook`);
    assert.equal(r.status, 200);
    assert.deepEqual(parseEcho(r.text).args, ["from-json"]);
  });

  test("a YAML hooks file is loaded and its hook runs", async () => {
    const file = join(dir, "hooks.yaml");
    await writeFile(
      file,
      [
        "# hooks in YAML",
        "- id: yaml-hook",
        `  execute-command: ${echo}`,
        "  include-command-output-in-response: true",
        "  response-headers:",
        "    - name: X-From",
        "      value: yaml",
        "  pass-arguments-to-command:",
        "    - source: string",
        "      name: from-yaml",
        "    - source: url",
        "      name: q",
        "  trigger-rule:",
        "    match:",
        "      type: value",
        '      value: "42"',
        "      parameter:",
        "        source: url",
        "        name: token",
        "",
      ].join("\n"),
    );
    const s = await serve(["-hooks", file]);
    const ok = await send(`${s.base}/hooks/yaml-hook?token=42&q=hello`);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers["x-from"], "yaml");
    assert.deepEqual(parseEcho(ok.text).args, ["from-yaml", "hello"]);
    const no = await send(`${s.base}/hooks/yaml-hook?token=41`);
    assert.equal(no.text, "Hook rules were not satisfied.");
  });

  test("YAML anchors, aliases and merge keys work (the reference reads YAML 1.1 with <<)", async () => {
    const file = join(dir, "anchors.yaml");
    await writeFile(
      file,
      ["- &base", "  id: first", `  execute-command: ${echo}`, "  response-message: shared message", "- <<: *base", "  id: second", ""].join("\n"),
    );
    const s = await serve(["-hooks", file]);
    assert.equal((await send(`${s.base}/hooks/first`)).text, "shared message");
    assert.equal((await send(`${s.base}/hooks/second`)).text, "shared message");
  });

  test("a UTF-8 byte-order mark and CRLF line ends are accepted", async () => {
    const bom = join(dir, "bom.json");
    await writeFile(bom, `\ufeff[{"id":"bom","execute-command":"${echo}","response-message":"bom ok"}]`);
    const crlf = join(dir, "crlf.yaml");
    await writeFile(crlf, `- id: crlf\r\n  execute-command: ${echo}\r\n  response-message: crlf ok\r\n`);
    const s = await serve(["-hooks", bom, "-hooks", crlf]);
    assert.equal((await send(`${s.base}/hooks/bom`)).text, "bom ok");
    assert.equal((await send(`${s.base}/hooks/crlf`)).text, "crlf ok");
  });

  test("unknown keys in a hook are ignored", async () => {
    const file = await writeHooks(dir, [{ id: "extra-keys", "execute-command": echo, "response-message": "fine", "x-note": { any: ["thing"] } }], "extra.json");
    const s = await serve(["-hooks", file]);
    assert.equal((await send(`${s.base}/hooks/extra-keys`)).text, "fine");
  });

  test("-hooks given several times loads every file", async () => {
    const a = await writeHooks(dir, [{ id: "from-a", "execute-command": echo, "response-message": "a here" }], "multi-a.json");
    const b = join(dir, "multi-b.yml");
    await writeFile(b, `- id: from-b\n  execute-command: ${echo}\n  response-message: b here\n`);
    const s = await serve(["-hooks", a, "-hooks", b]);
    assert.equal((await send(`${s.base}/hooks/from-a`)).text, "a here");
    assert.equal((await send(`${s.base}/hooks/from-b`)).text, "b here");
  });

  test("without -hooks, hooks.json in the working directory is loaded", async () => {
    const cwd = join(dir, "default-cwd");
    await import("node:fs/promises").then((fs) => fs.mkdir(cwd));
    await writeHooks(cwd, [{ id: "default-file", "execute-command": echo, "response-message": "default file" }]);
    const s = await serve([], { cwd });
    assert.equal((await send(`${s.base}/hooks/default-file`)).text, "default file");
  });

  test("JSON with trailing commas loads, as the reference (which reads JSON through YAML) accepts it", async () => {
    const file = join(dir, "trailing.json");
    await writeFile(file, `[\n  {\n    "id": "trailing",\n    "execute-command": "${echo}",\n    "response-message": "trailing ok",\n  },\n]\n`);
    const s = await serve(["-hooks", file]);
    assert.equal((await send(`${s.base}/hooks/trailing`)).text, "trailing ok");
  });
});

describe("start-up errors", { concurrency: true }, () => {
  const output = (r: { stdout: string; stderr: string }): string => r.stdout + r.stderr;

  test("a duplicate id across two files stops start-up and names the id (reference: 'has already been loaded')", async () => {
    const a = await writeHooks(dir, [{ id: "shared-id", "execute-command": echo }], "dup-a.json");
    const b = await writeHooks(dir, [{ id: "shared-id", "execute-command": echo }], "dup-b.json");
    const r = await runWebhook(["-hooks", a, "-hooks", b]);
    assert.notEqual(r.code, 0, output(r));
    assert.match(output(r), /shared-id/);
    assert.match(output(r), /already been loaded|duplicate/i);
  });

  test("a JSON file that does not parse names the file and the line", async () => {
    const file = join(dir, "broken.json");
    await writeFile(file, `[\n  {\n    "id": "x",\n    "execute-command" "${echo}"\n  }\n]\n`);
    const r = await runWebhook(["-hooks", file]);
    assert.notEqual(r.code, 0, output(r));
    assert.match(output(r), /broken\.json/);
    assert.match(output(r), /line:?\s*4\b|:4(:\d+)?\b/i, "the message should give line 4");
  });

  test("a YAML file that does not parse names the file and the line", async () => {
    const file = join(dir, "broken.yaml");
    await writeFile(file, `- id: ok\n  execute-command: ${echo}\n- id: [unclosed\n  execute-command: x\n`);
    const r = await runWebhook(["-hooks", file]);
    assert.notEqual(r.code, 0, output(r));
    assert.match(output(r), /broken\.yaml/);
    assert.match(output(r), /line:?\s*[345]\b|:[345](:\d+)?\b/i, "the message should give the line of the error");
  });

  test("start-up errors never quote secrets from the file", async () => {
    const yamlFile = join(dir, "secret-broken.yaml");
    await writeFile(
      yamlFile,
      `- id: x\n  execute-command: ${echo}\n  trigger-rule:\n    match:\n      type: payload-hmac-sha256\n      secret: "TOPSECRET-yaml-123\n      parameter: {source: header, name: X-Sig}\n`,
    );
    const jsonFile = join(dir, "secret-broken.json");
    await writeFile(jsonFile, `[{"id":"x","execute-command":"${echo}","trigger-rule":{"match":{"type":"value","value":"TOPSECRET-json-456" "parameter":{}}}}]`);
    const wrongType = await writeHooks(
      dir,
      [{ id: "x", "execute-command": echo, "include-command-output-in-response": "TOPSECRET-type-789" }],
      "secret-type.json",
    );
    for (const file of [yamlFile, jsonFile, wrongType]) {
      const r = await runWebhook(["-hooks", file]);
      assert.notEqual(r.code, 0);
      assert.doesNotMatch(output(r), /TOPSECRET/, output(r));
    }
  });

  test("a hooks file that is not an array is rejected, naming the file", async () => {
    const file = join(dir, "object.json");
    await writeFile(file, JSON.stringify({ id: "x", "execute-command": echo }));
    const r = await runWebhook(["-hooks", file]);
    assert.notEqual(r.code, 0, output(r));
    assert.match(output(r), /object\.json/);
  });

  test("a missing hooks file stops start-up, naming the file", async () => {
    const r = await runWebhook(["-hooks", join(dir, "does-not-exist.json")]);
    assert.notEqual(r.code, 0, output(r));
    assert.match(output(r), /does-not-exist\.json/);
  });

  test("-nopanic starts the server even though the hooks file does not parse", async () => {
    const file = join(dir, "nopanic.json");
    await writeFile(file, "[ { this is not json ");
    const s = await serve(["-hooks", file, "-nopanic"]);
    const root = await send(`${s.base}/`, { method: "GET" });
    assert.equal(root.status, 200);
    assert.equal(root.text, "OK");
    const r = await send(`${s.base}/hooks/anything`);
    assert.equal(r.status, 404);
    assert.equal(r.text, "Hook not found.");
  });

  test("-nopanic keeps the hooks of the files that did load", async () => {
    const good = await writeHooks(dir, [{ id: "survivor", "execute-command": echo, "response-message": "still here" }], "np-good.json");
    const bad = join(dir, "np-bad.json");
    await writeFile(bad, "{{{");
    const s = await serve(["-hooks", bad, "-hooks", good, "-nopanic"]);
    assert.equal((await send(`${s.base}/hooks/survivor`)).text, "still here");
  });
});

describe("command line", { concurrency: true }, () => {
  test("-version prints exactly the reference's line, 'webhook version 2.8.2', on stdout; which implementation it is goes to stderr", async () => {
    const r = await run(bin("webhook"), ["-version"], { timeoutMs: 60_000 });
    assert.equal(r.code, 0);
    assert.equal(r.stdout, "webhook version 2.8.2\n");
    assert.match(r.stderr, /^\(FrameFi bin\/webhook \d+\.\d+\.\d+\S*, a drop-in for adnanh\/webhook 2\.8\.2\)\n$/);
  });

  test("the usage starts 'Usage of <the program as it was called>:', as Go prints os.Args[0]", async () => {
    const r = await run("./bin/webhook", ["-h"], { timeoutMs: 60_000 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /^Usage of \.\/bin\/webhook:\n {2}-cert string\n/);
    assert.match(r.stderr, /\n {2}-setuid int\n {4}\tset user ID after opening listening port; must be used with setgid, not permitted with -socket\n/);
  });

  test("-ip [::1] (Go's bracketed form) listens on ::1, and the log prints the address as Go does", async () => {
    const s = await serve(["-hooks", await writeHooks(dir, [], "ip6.json"), "-verbose"], {
      addressArgs: (_ip, port) => ["-ip", "[::1]", "-port", String(port)],
      ip: "::1",
    });
    assert.equal((await send(`${s.base}/`, { method: "GET" })).text, "OK");
    assert.match(s.logs(), new RegExp(`serving hooks on http://\\[::1\\]:${s.port}/hooks/\\{id\\}`));
  });

  test("-socket with -setuid/-setgid: the reference's refusal", async () => {
    const r = await runWebhook(["-socket", join(dir, "refused.sock"), "-setuid", "1", "-setgid", "1"]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /error listening on socket: -setuid and -setgid options are not compatible with -socket\. {2}If you need to bind a socket as root but run webhook as a different user, consider using systemd activation\n/,
    );
  });

  test("--version (double dash) works the same", async () => {
    const r = await run(bin("webhook"), ["--version"], { timeoutMs: 60_000 });
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^webhook version \d+\.\d+\.\d+/);
  });

  test("-help prints the usage with every flag on stderr and exits 0", async () => {
    const r = await run(bin("webhook"), ["-help"], { timeoutMs: 60_000 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /Usage of \S*webhook:/);
    for (const flag of [
      "-hooks",
      "-ip",
      "-port",
      "-urlprefix",
      "-http-methods",
      "-header",
      "-verbose",
      "-debug",
      "-nopanic",
      "-max-multipart-mem",
      "-version",
    ]) {
      assert.match(r.stderr, new RegExp(`^\\s+${flag}\\b`, "m"), `usage lists ${flag}`);
    }
    assert.match(r.stderr, /default "0\.0\.0\.0"/);
    assert.match(r.stderr, /default 9000/);
    assert.match(r.stderr, /default "hooks"/);
  });

  test("-h is help too", async () => {
    const r = await run(bin("webhook"), ["-h"], { timeoutMs: 60_000 });
    assert.equal(r.code, 0);
    assert.match(r.stderr, /Usage of \S*webhook:/);
  });

  test("an unknown flag prints Go's message and the usage on stderr and exits 2", async () => {
    const r = await run(bin("webhook"), ["-no-such-flag"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^flag provided but not defined: -no-such-flag\n/);
    assert.match(r.stderr, /Usage of \S*webhook:/);
    assert.equal(r.stdout, "");
  });

  test("a bad number for -port is refused with exit 2", async () => {
    const r = await run(bin("webhook"), ["-port", "ninety"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /invalid value "ninety" for flag -port/);
  });

  test("-header without '=' is refused with exit 2", async () => {
    const r = await run(bin("webhook"), ["-header", "no-equals-sign"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /invalid value "no-equals-sign" for flag -header: header flag must be in name=value format/);
  });

  test("a flag that needs a value and has none is refused with exit 2", async () => {
    const r = await run(bin("webhook"), ["-hooks"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /flag needs an argument: -hooks/);
  });

  test("-flag=value, --flag=value and --flag value all work; -verbose=false keeps the log quiet", async () => {
    const file = await writeHooks(dir, [{ id: "syntax", "execute-command": echo, "response-message": "syntax ok" }], "syntax.json");
    const s = await serve([`--hooks=${file}`, "-verbose=false"], {
      addressArgs: (ip, port) => ["--ip", ip, `-port=${port}`],
    });
    const r = await send(`${s.base}/hooks/syntax`);
    assert.equal(r.text, "syntax ok");
    await send(`${s.base}/hooks/missing`);
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(s.logs(), "", "without -verbose the server prints nothing, as the reference");
  });

  test("numbers as Go reads them (-port in hex) and booleans as Go spells them (-verbose=t)", async () => {
    const file = await writeHooks(dir, [{ id: "go-syntax", "execute-command": echo, "response-message": "go syntax" }], "gosyntax.json");
    const s = await serve(["-hooks", file, "-verbose=t"], {
      addressArgs: (ip, port) => ["-ip", ip, "-port", "0x" + port.toString(16)],
    });
    assert.equal((await send(`${s.base}/hooks/go-syntax`)).text, "go syntax");
    await s.proc.waitFor(/go-syntax got matched/, 10_000);
  });

  test("a boolean flag with a value Go does not accept is refused with exit 2", async () => {
    const r = await run(bin("webhook"), ["-verbose=yes"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /invalid boolean value "yes" for -verbose/);
  });

  test("--verbose (double dash boolean) turns request logging on", async () => {
    const file = await writeHooks(dir, [{ id: "loud", "execute-command": echo, "response-message": "loud ok" }], "loud.json");
    const s = await serve(["--verbose", "-hooks", file]);
    await send(`${s.base}/hooks/loud`);
    await s.proc.waitFor(/loud got matched/, 10_000);
  });

  test("without -ip the server listens on every address (0.0.0.0), IPv4 and IPv6 clients alike", async () => {
    const file = await writeHooks(dir, [{ id: "anyaddr", "execute-command": echo, "response-message": "any address" }], "anyaddr.json");
    const s = await serve(["-hooks", file], { addressArgs: (_ip, port) => ["-port", String(port)] });
    assert.equal((await send(`${s.base}/hooks/anyaddr`)).text, "any address");
    assert.equal((await send(`http://[::1]:${s.port}/hooks/anyaddr`)).text, "any address");
  });

  test("a port that is taken: a clear error and a non-zero exit", async () => {
    const blocker = createServer();
    await new Promise<void>((res) => blocker.listen(0, "127.0.0.1", () => res()));
    const port = (blocker.address() as { port: number }).port;
    const file = await writeHooks(dir, [{ id: "x", "execute-command": echo }], "taken.json");
    try {
      const r = await run(bin("webhook"), ["-ip", "127.0.0.1", "-port", String(port), "-hooks", file], { timeoutMs: 60_000 });
      assert.notEqual(r.code, 0);
      assert.match(r.stdout + r.stderr, new RegExp(`${port}`));
      assert.match(r.stdout + r.stderr, /listen|in use/i);
    } finally {
      blocker.close();
    }
  });

  test("arguments after a non-flag word are not parsed as flags (Go stops at the first non-flag)", async () => {
    const file = await writeHooks(dir, [{ id: "stop", "execute-command": echo, "response-message": "stop ok" }], "stop.json");
    const s = await serve(["-hooks", file, "extra-word", "-no-such-flag"]);
    assert.equal((await send(`${s.base}/hooks/stop`)).text, "stop ok");
  });
});
