// Hooks files load exactly as the reference (adnanh/webhook 2.8.2) loads them: YAML (JSON is YAML)
// decoded by yaml.v2, fitted to the Go structs by ghodss/yaml and encoding/json. Every expected
// value below is what the Go reference answered to the same file and request.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, freePort, run, removeDir, tempDir } from "../helpers.js";
import { send, startServer, type Server } from "./fixtures/harness.js";

let dir = "";
const servers: Server[] = [];

async function serveFile(name: string, text: string, args: string[] = []): Promise<Server> {
  const file = join(dir, name);
  await writeFile(file, text);
  const s = await startServer(["-hooks", file, ...args]);
  servers.push(s);
  return s;
}

async function startFails(name: string, text: string, args: string[] = []) {
  const file = join(dir, name);
  await writeFile(file, text);
  return run(bin("webhook"), ["-hooks", file, "-ip", "127.0.0.1", "-port", String(await freePort()), ...args], { timeoutMs: 60_000 });
}

/** A YAML hook running /bin/echo with one `source: string` argument per scalar, written as given. */
function echoScalars(scalars: string[]): string {
  const args = scalars.map((v) => `    - source: string\n      name: ${v}\n`).join("");
  return `- id: s\n  execute-command: /bin/echo\n  include-command-output-in-response: true\n  pass-arguments-to-command:\n${args}`;
}

before(async () => {
  dir = await tempDir("webhook-loading-");
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await removeDir(dir);
});

describe("scalars where the Go struct has a string", { concurrency: true }, () => {
  test("YAML: numbers, booleans and nulls become Go's spelling of them", async () => {
    const cases: [string, string][] = [
      ["1.50", "1.5"],
      ["0x1F", "31"],
      ["017", "15"],
      ["0o17", "15"],
      ["0b101", "5"],
      ["-0b101", "-5"],
      ["1_000", "1000"],
      ["08", "8"],
      ["+12", "12"],
      ["-0", "0"],
      ["-0.0", "-0"],
      [".5", "0.5"],
      ["12e3", "12000"],
      ["yes", "true"],
      ["on", "true"],
      ["TRUE", "true"],
      ["n", "false"],
      ["Off", "false"],
      ["~", ""],
      ["null", ""],
      ["Null", ""],
      [".inf", "+Inf"],
      ["-.inf", "-Inf"],
      [".nan", "NaN"],
      // ghodss/yaml formats floats with 32-bit precision and %g's exponent from 1e6 and below 1e-4.
      ["1e20", "1e+20"],
      ["3.14159265358979", "3.1415927"],
      ["1000000", "1000000"],
      ["0.000012345", "1.2345e-05"],
      ["1e-7", "1e-07"],
      ["123456789012", "123456789012"],
      ["18446744073709551615", "18446744073709551615"],
      ["18446744073709551616", "1.8446744e+19"],
      // Not numbers to yaml.v2: kept as written.
      ["'1.50'", "1.50"],
      ["!!str 1.50", "1.50"],
      ["2001-12-14", "2001-12-14"],
      ["1e400", "1e400"],
      ["1:20", "1:20"],
      ["0x_1F", "31"],
    ];
    const s = await serveFile("scalars.yaml", echoScalars(cases.map(([v]) => v)));
    const r = await send(`${s.base}/hooks/s`);
    assert.equal(r.status, 200);
    assert.equal(r.text, cases.map(([, want]) => want).join(" ") + "\n");
  });

  test("JSON: the same (the reference reads JSON through YAML)", async () => {
    const names = ["1.50", "1e20", "true", "null", "12345678901234567890", "-0", "1E3", "0.1", "-1.5e-10", "1e400"];
    const args = names.map((n) => `{"source":"string","name":${n}}`).join(",");
    const s = await serveFile(
      "scalars.json",
      `[{"id":"s","execute-command":"/bin/echo","include-command-output-in-response":true,"pass-arguments-to-command":[${args}]}]`,
    );
    assert.equal((await send(`${s.base}/hooks/s`)).text, "1.5 1e+20 true  12345678901234567890 0 1000 0.1 -1.5e-10 1e400\n");
  });

  test('a numeric id and a numeric rule value (the reference\'s own test fixture has "value": 1)', async () => {
    const s = await serveFile(
      "numeric.json",
      `[{"id":12345,"execute-command":"/bin/echo","response-message":1.50,"trigger-rule":{"match":{"type":"value","value":1,"parameter":{"source":"url","name":"t"}}}}]`,
    );
    assert.equal((await send(`${s.base}/hooks/12345?t=1`)).text, "1.5");
    assert.equal((await send(`${s.base}/hooks/12345?t=2`)).text, "Hook rules were not satisfied.");
  });

  test('a YAML 1.1 boolean as an id: `id: y` is the hook "true"', async () => {
    const s = await serveFile("y.yaml", "- id: y\n  execute-command: /bin/echo\n  response-message: yes-man\n");
    assert.equal((await send(`${s.base}/hooks/true`)).text, "yes-man");
    assert.equal((await send(`${s.base}/hooks/y`)).status, 404);
  });

  test("a whole float where Go has an int (success-http-response-code: 201.0) is that int", async () => {
    const s = await serveFile("int.yaml", "- id: x\n  execute-command: /bin/echo\n  success-http-response-code: 201.0\n  response-message: ok\n");
    const r = await send(`${s.base}/hooks/x`);
    assert.equal(r.status, 201);
    assert.equal(r.text, "ok");
  });

  test("null in a list of strings is an empty string; a null hook is a hook with no id", async () => {
    const s = await serveFile("nulls.yaml", "- null\n- id: x\n  execute-command: /bin/echo\n  http-methods: [~, get]\n  response-message: m\n");
    assert.equal((await send(`${s.base}/hooks/x`, { method: "GET" })).text, "m");
    assert.equal((await send(`${s.base}/hooks/x`)).status, 405);
    assert.equal((await send(`${s.base}/hooks/`)).status, 200);
  });
});

describe("hooks files the reference loads", { concurrency: true }, () => {
  test("field names in any case (encoding/json matches them case-insensitively; of two spellings the later in byte order wins)", async () => {
    const s = await serveFile(
      "case.json",
      JSON.stringify([
        {
          ID: "upper",
          "Execute-Command": "/bin/echo",
          "INCLUDE-COMMAND-OUTPUT-IN-RESPONSE": true,
          "Pass-Arguments-To-Command": [{ Source: "url", NAME: "a" }],
          "Trigger-Rule": { Match: { TYPE: "value", Value: "1", Parameter: { source: "url", name: "t" } } },
        },
        { id: "both", ID: "both-upper", "execute-command": "/bin/echo", "response-message": "lower", "Response-Message": "upper" },
        { id: "long-s", "execute-command": "/bin/echo", "re\u017fponse-message": "folded" },
      ]),
    );
    assert.equal((await send(`${s.base}/hooks/upper?a=hello&t=1`)).text, "hello\n");
    assert.equal((await send(`${s.base}/hooks/upper?a=hello&t=2`)).text, "Hook rules were not satisfied.");
    assert.equal((await send(`${s.base}/hooks/both`)).text, "lower");
    assert.equal((await send(`${s.base}/hooks/both-upper`)).status, 404);
    assert.equal((await send(`${s.base}/hooks/long-s`)).text, "folded");
  });

  test("multi-document YAML: the first document only (a broken later one does not matter)", async () => {
    const s = await serveFile(
      "multi.yaml",
      "- id: first-doc\n  execute-command: /bin/echo\n  response-message: one\n---\n- id: second-doc\n  execute-command: /bin/echo\n---\n- id: [broken\n",
    );
    assert.equal((await send(`${s.base}/hooks/first-doc`)).text, "one");
    assert.equal((await send(`${s.base}/hooks/second-doc`)).status, 404);
  });

  test("a UTF-8 byte-order mark before YAML", async () => {
    const s = await serveFile("bom.yaml", "\ufeff- id: bom\n  execute-command: /bin/echo\n  response-message: bom yaml\n");
    assert.equal((await send(`${s.base}/hooks/bom`)).text, "bom yaml");
  });

  test("merge keys as yaml.v2 applies them (where the << stands), and !!binary", async () => {
    const s = await serveFile(
      "merge.yaml",
      "- {id: x, execute-command: /bin/echo, response-message: a, <<: {response-message: merged}}\n- {id: b, execute-command: /bin/echo, response-message: !!binary aGVsbG8=}\n",
    );
    assert.equal((await send(`${s.base}/hooks/x`)).text, "merged");
    assert.equal((await send(`${s.base}/hooks/b`)).text, "hello");
  });

  test("an id repeated in one file: the server starts and serves the first", async () => {
    const s = await serveFile(
      "dup.yaml",
      "- id: dup\n  execute-command: /bin/echo\n  response-message: first\n- id: dup\n  execute-command: /bin/echo\n  response-message: second\n",
      ["-verbose"],
    );
    assert.equal((await send(`${s.base}/hooks/dup`)).text, "first");
    assert.equal(s.logs().match(/\tloaded: dup\n/g)?.length, 2);
  });

  test('a hook without id is served at the bare prefix; one without execute-command fails at request time as Go\'s exec.LookPath("") does', async () => {
    const s = await serveFile(
      "missing.yaml",
      "- execute-command: /bin/echo\n  response-message: no id\n- id: nocmd\n  include-command-output-in-response: true\n- id: nocmd-async\n  response-message: accepted\n",
      ["-verbose"],
    );
    assert.equal((await send(`${s.base}/hooks/`)).text, "no id");
    const r = await send(`${s.base}/hooks/nocmd`);
    assert.equal(r.status, 500);
    assert.equal(r.text, "Error occurred while executing the hook's command. Please check your logs for more details.");
    const a = await send(`${s.base}/hooks/nocmd-async`);
    assert.equal(a.status, 200);
    assert.equal(a.text, "accepted");
    await s.proc.waitFor(/\] error in exec: "": executable file not found in \$PATH\n[\s\S]*\] error in exec: "": executable file not found in \$PATH\n/);
  });
});

describe("hooks files the reference refuses", { concurrency: true }, () => {
  const refused: [string, string, RegExp][] = [
    [
      "a quoted string where Go has a boolean",
      '- id: x\n  execute-command: /bin/echo\n  include-command-output-in-response: "true"\n',
      /"include-command-output-in-response" must be true or false, not a string/,
    ],
    [
      "a quoted number where Go has an int",
      '- id: x\n  execute-command: /bin/echo\n  success-http-response-code: "201"\n',
      /"success-http-response-code" must be a whole number, not a string/,
    ],
    ["a list where Go has a string", "- id: x\n  execute-command: /bin/echo\n  response-message: [1]\n", /"response-message" must be a string, not a list/],
    [
      "NaN anywhere (JSON cannot hold it), even under a key nobody reads",
      "- id: x\n  execute-command: /bin/echo\n  foo: .nan\n",
      /"foo": NaN is not a number JSON can hold/,
    ],
    ["a null map key", "- {id: x, execute-command: /bin/echo, ~: 1}\n", /a map key must be a string, number or boolean, not null/],
    [
      "aliases that expand a small file into billions of values",
      `- id: x\n  execute-command: /bin/echo\n  foo:\n    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n${Array.from({ length: 8 }, (_, i) => `    a${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(", ")}]\n`).join("")}`,
      /the document expands to too many values/,
    ],
  ];
  for (const [what, text, message] of refused) {
    test(`${what}: start-up stops, naming the file, hook and field`, async () => {
      const name = `refused-${what.replace(/\W+/g, "-")}.yaml`;
      const r = await startFails(name, text);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`${name}: (hook #1 \\(id "x"\\): |line \\d+, column \\d+: invalid YAML: )`));
      assert.match(r.stderr, message);
    });
  }

  test("without -verbose, the reference's fatal lines on stdout (where Go prints them); the reason on stderr", async () => {
    const r = await startFails("broken.yaml", "- id: [\n");
    assert.equal(r.code, 1);
    assert.match(
      r.stdout,
      /^\[webhook\] \d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d couldn't load any hooks from file!\naborting webhook execution since the -verbose flag is set to false\.\nIf, for some reason, you want webhook to start without the hooks, either use -verbose flag, or -nopanic\n$/,
    );
    assert.match(r.stderr, /couldn't load hooks from file! \S*broken\.yaml: line 2, column 1: invalid YAML: /);
    assert.match(
      r.stderr,
      /aborting: fix the hooks file named above, or start with -nopanic .*-verbose does not skip a broken file/,
      "the advice that holds for a broken file",
    );
  });
});
