// Attack: XML element and attribute names that are also names of Object.prototype's members. The reference
// (mxj) treats every name as a plain key, so <a><toString>C</toString></a> gives {"a":{"toString":"C"}} and
// <a><constructor>C</constructor><k>1</k></a> gives {"a":{"constructor":"C","k":"1"}}. Ours (fast-xml-parser)
// renames toString to "__toString" and refuses the whole body for __proto__ / constructor ("[SECURITY] Invalid
// name"), so a rule on another part of the payload fails and the command gets the wrong arguments, whether the
// body is decoded inline (< 64 KiB) or on the XML thread (larger).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { removeDir, tempDir } from "../helpers.js";
import { send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

let dir = "";
let s: Server;
const pad = `<pad>${"x".repeat(70_000)}</pad>`;

before(async () => {
  dir = await tempDir("webhook-attack-xml-lazy-");
  const hooks = await writeHooks(dir, [
    {
      id: "names",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [
        { source: "payload", name: "a.toString" },
        { source: "payload", name: "a.valueOf" },
        { source: "payload", name: "a.-hasOwnProperty" },
      ],
    },
    {
      id: "rule",
      "execute-command": "/bin/echo",
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "payload", name: "a.k" }],
      "trigger-rule": { match: { type: "value", value: "1", parameter: { source: "payload", name: "a.k" } } },
    },
  ]);
  s = await startServer(["-hooks", hooks, "-verbose"]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

const xml = (hook: string, body: string) => send(`${s.base}/hooks/${hook}`, { method: "POST", headers: { "Content-Type": "application/xml" }, body });

for (const [label, extra] of [
  ["inline", ""],
  ["on the XML thread", pad],
] as const) {
  test(`XML names toString/valueOf/hasOwnProperty are plain keys, as mxj reads them (${label})`, async () => {
    const r = await xml("names", `<a hasOwnProperty="H"><toString>T</toString><valueOf>V</valueOf>${extra}</a>`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "T V H\n");
  });

  for (const name of ["constructor", "__proto__"]) {
    test(`an XML element named ${name} does not cost the rest of the payload (${label})`, async () => {
      const r = await xml("rule", `<a><${name}>C</${name}><k>1</k>${extra}</a>`);
      assert.equal(r.status, 200);
      assert.equal(r.text, "1\n", `the rule on a.k must hold as in the reference; got ${JSON.stringify(r.text)}`);
    });
  }
}
