// The -template engine, tested directly: Go text/template semantics (expected outputs are Go's,
// many from the text/template and fmt documentation), webhook's getenv/cat/credential, hooks
// files as users write them, and Go's error messages with file name and line.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse as parseYaml } from "yaml";
import { renderTemplate, TemplateError, type RenderOptions } from "../../src/webhook/template/template.js";
import { removeDir, tempDir } from "../helpers.js";

/** The fields of a rendered hook these tests read. */
type RenderedHook = { "trigger-rule": { match: { value?: string; secret?: string } }; "response-message"?: string };

const render = (text: string, options: RenderOptions = {}): string => renderTemplate(text, "t", { env: {}, ...options });

/** Asserts each template renders to the expected output. */
function cases(title: string, table: [string, string][], options: RenderOptions = {}): void {
  describe(title, () => {
    for (const [text, expected] of table) {
      test(JSON.stringify(text), () => assert.equal(render(text, options), expected));
    }
  });
}

/** Asserts each template fails with exactly Go's message. */
function errors(title: string, table: [string, string][], options: RenderOptions = {}): void {
  describe(title, () => {
    for (const [text, message] of table) {
      test(JSON.stringify(text), () => {
        assert.throws(
          () => render(text, options),
          (e: unknown) => {
            assert.ok(e instanceof TemplateError, `expected a TemplateError, got ${String(e)}`);
            assert.equal(e.message, message);
            return true;
          },
        );
      });
    }
  });
}

cases("text and whitespace trimming", [
  ["plain text, no actions", "plain text, no actions"],
  ["", ""],
  ["{{23 -}} < {{- 45}}", "23<45"], // the example in Go's text/template docs
  ["a {{- 1 }} b", "a1 b"],
  ["a {{ 1 -}} b", "a 1b"],
  ["a\n\t {{- 1 -}} \r\n b", "a1b"],
  ["{{- 1 -}}", "1"],
  ["{{-3}}", "-3"], // "{{-" without a space is a negative number, not a trim marker
  ["{{3 -}}x", "3x"],
  ["x {{- /* a comment */ -}} y", "xy"],
  ["{{/* a comment\nover lines */}}z", "z"],
  ["a{{1}}{{2}}b", "a12b"],
  ["{ {x} } }}", "{ {x} } }}"],
]);

cases("literals", [
  ['{{"a\\tb"}}', "a\tb"],
  ["{{`raw \\n string`}}", "raw \\n string"],
  ['{{"\\u00e9\\x41"}}', "éA"],
  ["{{'a'}}", "97"],
  ["{{0x1F}} {{017}} {{0o17}} {{0b101}} {{1_000}}", "31 15 15 5 1000"],
  ["{{1.5}} {{2.0}} {{1e3}} {{1e6}} {{0.0001}} {{0.00001}} {{123456789.0}}", "1.5 2 1000 1e+06 0.0001 1e-05 1.23456789e+08"],
  ["{{true}} {{false}}", "true false"],
]);

cases("nil data prints <no value>, as Go does", [
  ["{{.}}", "<no value>"],
  ["{{.Something}}", "<no value>"],
  ["{{ .Something.Deeper }}", "<no value>"],
  ["{{$}}", "<no value>"],
  ["{{if .X}}a{{else}}b{{end}}", "b"],
  ["{{ .Missing | js }}", "\\u003Cno value\\u003E"],
  ['{{printf "%v|%s" .X .Y}}', "<nil>|%!s(<nil>)"],
]);

cases("pipelines and variables (the text/template docs' examples)", [
  ['{{"output"}}', "output"],
  ['{{`"output"`}}', '"output"'],
  ['{{printf "%q" "output"}}', '"output"'],
  ['{{"output" | printf "%q"}}', '"output"'],
  ['{{printf "%q" (print "out" "put")}}', '"output"'],
  ['{{"put" | printf "%s%s" "out" | printf "%q"}}', '"output"'],
  ['{{"output" | printf "%s" | printf "%q"}}', '"output"'],
  ['{{with "output"}}{{printf "%q" .}}{{end}}', '"output"'],
  ['{{with $x := "output" | printf "%q"}}{{$x}}{{end}}', '"output"'],
  ['{{with $x := "output"}}{{printf "%q" $x}}{{end}}', '"output"'],
  ['{{with $x := "output"}}{{$x | printf "%q"}}{{end}}', '"output"'],
  ["{{$x := 1}}{{$x = 2}}{{$x}}", "2"],
  ["{{$x := 1}}{{if true}}{{$x = 3}}{{end}}{{$x}}", "3"],
  ['{{$x := "outer"}}{{with "inner"}}{{$x := .}}{{$x}}{{end}} {{$x}}', "inner outer"],
]);

cases("if, else if, with, range", [
  ["{{if 1}}yes{{end}}", "yes"],
  ['{{if ""}}yes{{else}}no{{end}}', "no"],
  ["{{if eq 1 2}}a{{else if eq 2 2}}b{{else}}c{{end}}", "b"],
  ["{{if 0}}a{{else if 0}}b{{else}}c{{end}}", "c"],
  ['{{with ""}}a{{else}}b{{end}}', "b"],
  ['{{with ""}}a{{else with "z"}}{{.}}{{end}}', "z"],
  ["{{range 3}}{{.}}{{end}}", "012"],
  ["{{range $i := 3}}[{{$i}}]{{end}}", "[0][1][2]"],
  ["{{range 0}}x{{else}}none{{end}}", "none"],
  ["{{range .}}x{{else}}none{{end}}", "none"],
  ["{{range $i := 5}}{{if eq $i 3}}{{break}}{{end}}{{$i}}{{end}}", "012"],
  ["{{range $i := 5}}{{if eq $i 1}}{{continue}}{{end}}{{$i}}{{end}}", "0234"],
]);

cases(
  "range, index, len and fields over data",
  [
    ["{{range $i, $e := .list}}{{$i}}={{$e}};{{end}}", "0=a;1=b;2=<no value>;"],
    ["{{range .list}}[{{.}}]{{end}}", "[a][b][<no value>]"],
    ["{{range $k, $v := .map}}{{$k}}:{{$v}} {{end}}", "a:1 b:2 "],
    ["{{range .empty}}x{{else}}empty{{end}}", "empty"],
    ['{{.map.a}} {{.map.zz}} {{index .map "b"}} {{index .map "zz"}}', "1 <no value> 2 <no value>"],
    ["{{index .list 1}} {{len .list}} {{len .map}} {{len .empty}}", "b 3 2 0"],
    ["{{.list}} {{.map}}", "[a b <nil>] map[a:1 b:2]"],
    ['{{index .nested 0 "k"}}', "v"],
    ["{{slice .list 1 2}}", "[b]"],
  ],
  { data: { list: ["a", "b", null], map: { b: 2, a: 1 }, empty: [], nested: [{ k: "v" }] } },
);

cases("define, template, block", [
  ['{{define "a"}}[{{.}}]{{end}}x{{template "a" 1}}{{template "a"}}', "x[1][<no value>]"],
  ['{{block "b" "v"}}<{{.}}>{{end}}', "<v>"],
  ['{{define "a"}}{{end}}{{define "a"}}2{{end}}{{template "a"}}', "2"],
  [
    '{{define "rule"}}{"match": {"type": "value", "value": "{{.}}"}}{{end}}[{{template "rule" "x"}}, {{template "rule" "y"}}]',
    '[{"match": {"type": "value", "value": "x"}}, {"match": {"type": "value", "value": "y"}}]',
  ],
  ['{{$x := 1}}{{template "t2" $x}}{{define "t2"}}{{$}}{{end}}', "1"],
]);

errors("define, template, block errors", [
  ['{{template "nope"}}', 'template: t:1:11: executing "t" at <{{template "nope"}}>: template "nope" not defined'],
  ['{{define "a"}}{{.x 1 2}}{{end}}{{template "a" 3}}', 'template: t:1:16: executing "a" at <.x>: can\'t evaluate field x in type int'],
  ['{{define "a"}}1{{end}}\n{{define "a"}}2{{end}}', 'template: t:2: template: multiple definition of template "a"'],
  ['{{define "b"}}({{.}}){{end}}{{block "b" "v"}}<{{.}}>{{end}}', 'template: t:1: template: multiple definition of template "b"'],
  ['{{if 1}}{{define "x"}}{{end}}{{end}}', "template: t:1: unexpected <define> in command"],
  ["{{define 3}}{{end}}", 'template: t:1: unexpected "3" in define clause'],
  ['{{define "a"}}{{else}}{{end}}', "template: t:1: unexpected {{else}} in define clause"],
  ['{{$x := 1}}{{define "a"}}{{$x}}{{end}}', 'template: t:1: undefined variable "$x"'],
  ['{{define "r"}}{{template "r"}}{{end}}{{template "r"}}', 'template: t:1:25: executing "r" at <{{template "r"}}>: exceeded maximum template depth (1000)'],
]);

cases("comparisons and logic", [
  ["{{eq 1 1}} {{eq 1 2}} {{eq 2 1 2}} {{ne 1 2}}", "true false true true"],
  ['{{eq "a" "a"}} {{ne "a" "a"}} {{eq true true}}', "true false true"],
  ['{{lt 1 2}} {{le 2 2}} {{gt 3 1}} {{ge 1 2}} {{lt "a" "b"}} {{lt 1.5 2.5}}', "true true true false true true"],
  ['{{eq .Missing "x"}}', "false"],
  ['{{and 1 "x"}} {{and 0 "x"}} {{or "" 0}} {{or "" "y"}} {{not ""}} {{not 1}}', "x 0 0 y true false"],
  ['{{and 0 (index "" 1)}}', "0"], // and short-circuits: the failing index is never evaluated
  ['{{or 1 (index "" 1)}}', "1"],
  ['{{"x" | not}} {{true | and 0}}', "false 0"],
]);

cases("index, len, slice", [
  ['{{index "abc" 0}}', "97"],
  ['{{len "héllo"}}', "6"], // bytes, as in Go
  ['{{slice "hello" 1 3}} {{slice "hello" 2}}', "el llo"],
]);

cases("printf, print, println (Go's fmt)", [
  ['{{printf "%d|%5d|%-5d|%05d|%x|%X|%o|%b|%c|%q|%U" 42 42 42 42 255 255 8 5 65 65 65}}', "42|   42|42   |00042|ff|FF|10|101|A|'A'|U+0041"],
  ['{{printf "%+d|% d|%+d|%#x|%.3d" 5 5 -5 255 7}}', "+5| 5|-5|0xff|007"],
  ['{{printf "%s|%10s|%-10s|%.2s|%q|%x" "go" "go" "go" "gopher" "a\\"b" "hi"}}', 'go|        go|go        |go|"a\\"b"|6869'],
  ['{{printf "%v|%.2f|%8.3f|%e|%g|%G" 1.5 3.14159 2.5 1234.5678 0.000012345 1e21}}', "1.5|3.14|   2.500|1.234568e+03|1.2345e-05|1E+21"],
  ['{{printf "%.2f %.1f %.0f %.2f %.0f" 0.125 0.25 2.5 1.005 3.5}}', "0.12 0.2 2 1.00 4"], // exact value, ties to even
  ['{{printf "%6.2f|%+.1f|%08.3f" -3.14159 2.75 -3.5}}', " -3.14|+2.8|-003.500"],
  ['{{printf "%t %v %v" true false 3}}', "true false 3"],
  ['{{printf "%q %+q %#q" "é\\u00a0" "é" "back`quote"}}', '"é\\u00a0" "\\u00e9" "back`quote"'],
  ['{{printf "%T %T %T %T %T" 1 1.5 "s" true nil}}', "int float64 string bool <nil>"],
  ['{{printf "100%%"}}', "100%"],
  ['{{printf "%d %d" 1}}', "1 %!d(MISSING)"],
  ['{{printf "%d" 1 2}}', "1%!(EXTRA int=2)"],
  ['{{printf "%d" "x"}} {{printf "%s" 1}} {{printf "%z" 1}} {{printf "%t" 1}}', "%!d(string=x) %!s(int=1) %!z(int=1) %!t(int=1)"],
  ['{{printf "%"}}', "%!(NOVERB)"],
  ['{{print 1 2 "a" "b" 3}}', "1 2ab3"],
  ['{{println 1 "a"}}', "1 a\n"],
  ["{{print nil}}", "<nil>"],
]);

cases("escapers: js, html, urlquery", [
  ['{{js "a\'b\\"c<d>e&f=g\\\\h\\n"}}', "a\\'b\\\"c\\u003Cd\\u003Ee\\u0026f\\u003Dg\\\\h\\u000A"],
  ['{{js "é\\u00a0\\u2028\\x01\\x7f"}}', "é\\u00A0\\u2028\\u0001\x7f"],
  ['{{js 1 "a"}} {{js 1 2}}', "1a 1 2"],
  ['{{"<b>" | html}}', "&lt;b&gt;"],
  ['{{html "<a href=\'x\'>&\\"\\x00"}}', "&lt;a href=&#39;x&#39;&gt;&amp;&#34;\uFFFD"],
  ['{{urlquery "a b&c/é~_.-"}}', "a+b%26c%2F%C3%A9~_.-"],
]);

describe("webhook's functions: getenv, cat, credential", () => {
  let dir = "";
  before(async () => {
    dir = await tempDir("framefi-template-");
    await mkdir(join(dir, "creds"));
    await writeFile(join(dir, "creds", "token"), "from-credential-file\n");
    await writeFile(join(dir, "secret.txt"), "line one\nline two\n\n");
  });
  after(() => removeDir(dir));

  test("getenv reads the environment, empty when unset", () => {
    assert.equal(render('[{{getenv "A"}}][{{getenv "UNSET"}}]', { env: { A: "x y" } }), "[x y][]");
  });
  test("getenv uses process.env by default", () => {
    process.env.FRAMEFI_TEMPLATE_TEST = "from-process";
    try {
      assert.equal(renderTemplate('{{getenv "FRAMEFI_TEMPLATE_TEST"}}', "t"), "from-process");
    } finally {
      delete process.env.FRAMEFI_TEMPLATE_TEST;
    }
  });
  test("cat reads a file without one trailing newline, empty when missing", () => {
    const text = `[{{cat "${join(dir, "secret.txt")}"}}][{{cat "${join(dir, "nope")}"}}]`;
    assert.equal(render(text), "[line one\nline two\n][]");
  });
  test("credential reads $CREDENTIALS_DIRECTORY/<name>", () => {
    const env = { CREDENTIALS_DIRECTORY: join(dir, "creds"), token: "from-env" };
    assert.equal(render('{{credential "token"}}', { env }), "from-credential-file");
  });
  test("credential with the directory set but no such file is empty, as the reference's code has it (no fallback)", () => {
    const env = { CREDENTIALS_DIRECTORY: join(dir, "creds"), other: "from-env" };
    assert.equal(render('[{{credential "other"}}][{{credential "nowhere"}}]', { env }), "[][]");
  });
  test("credential without $CREDENTIALS_DIRECTORY falls back to the environment variable", () => {
    assert.equal(render('{{credential "token"}}', { env: { token: "from-env" } }), "from-env");
  });
  test("custom functions can be added and replace built-in ones", () => {
    const funcs = { shout: (s: string) => s.toUpperCase(), getenv: (_name: string) => "stub" };
    assert.equal(render('{{shout "hi"}} {{getenv "X"}} {{"x" | shout}}', { funcs }), "HI stub X");
  });
  test("a custom function name must be an identifier", () => {
    assert.throws(() => render("x", { funcs: { "bad-name": () => "" } }), TypeError);
  });
});

describe("hooks files as users write them", () => {
  const secret = 'p@ss"w\\rd<&>=\u00e9';
  const jsonHooks = `[
  {
    "id": "sync-frame",
    "execute-command": "/usr/local/bin/framefi",
    "trigger-rule": {
      "match": {
        "type": "value",
        "value": "{{ getenv "SYNC_SECRET" | js }}",
        "parameter": { "source": "url", "name": "secret" }
      }
    }
  },
  {
    "id": "frame-push",
    "execute-command": "/usr/local/bin/framefi",
    "response-message": "{{ if eq (getenv "DEPLOY_ENV") "production" }}syncing prod{{ else }}syncing {{ getenv "DEPLOY_ENV" | js }}{{ end }}",
    "trigger-rule": {
      "match": {
        "type": "payload-hmac-sha256",
        "secret": "{{ credential "github-secret" | js }}",
        "parameter": { "source": "header", "name": "X-Hub-Signature-256" }
      }
    }
  }
]
`;

  test("a JSON hooks file with getenv | js and credential | js parses to the secrets themselves", () => {
    const env = { SYNC_SECRET: secret, DEPLOY_ENV: "production", "github-secret": "gh-secret" };
    const hooks = JSON.parse(renderTemplate(jsonHooks, "hooks.json", { env })) as RenderedHook[];
    assert.equal(hooks[0]!["trigger-rule"].match.value, secret);
    assert.equal(hooks[1]!["trigger-rule"].match.secret, "gh-secret");
    assert.equal(hooks[1]!["response-message"], "syncing prod");
  });

  test("if/else on an environment variable picks the other branch", () => {
    const env = { SYNC_SECRET: "s", DEPLOY_ENV: "staging" };
    const hooks = JSON.parse(renderTemplate(jsonHooks, "hooks.json", { env })) as RenderedHook[];
    assert.equal(hooks[1]!["response-message"], "syncing staging");
    assert.equal(hooks[1]!["trigger-rule"].match.secret, "");
  });

  test("js escapes a quote as \\' exactly as Go does (which JSON itself does not accept)", () => {
    const out = renderTemplate('"{{ getenv "S" | js }}"', "hooks.json", { env: { S: "it's" } });
    assert.equal(out, `"it\\'s"`);
    assert.throws(() => JSON.parse(out), SyntaxError);
  });

  test("a YAML hooks file with credential from $CREDENTIALS_DIRECTORY", async () => {
    const dir = await tempDir("framefi-template-yaml-");
    try {
      await writeFile(join(dir, "token"), "tok-\u00e9n\n");
      const yamlHooks = [
        "- id: frame-display",
        "  execute-command: /usr/local/bin/framefi",
        "  trigger-rule:",
        "    match:",
        "      type: value",
        '      value: "{{ credential "token" | js }}"',
        "      parameter: { source: header, name: X-Token }",
        '{{- if getenv "EXTRA_HOOK" }}',
        "- id: extra",
        "  execute-command: /bin/true",
        "{{- end }}",
        "",
      ].join("\n");
      const env = { CREDENTIALS_DIRECTORY: dir };
      const hooks = parseYaml(renderTemplate(yamlHooks, "hooks.yaml", { env })) as RenderedHook[];
      assert.equal(hooks.length, 1);
      assert.equal(hooks[0]!["trigger-rule"].match.value, "tok-\u00e9n");
      const withExtra = parseYaml(renderTemplate(yamlHooks, "hooks.yaml", { env: { ...env, EXTRA_HOOK: "1" } })) as unknown[];
      assert.equal(withExtra.length, 2);
    } finally {
      await removeDir(dir);
    }
  });

  test("an unclosed quote in an action on line 3 names the file and the line", () => {
    const text = '[\n  {\n    "secret": "{{ getenv "SECRET }}\n  }\n]\n';
    assert.throws(() => renderTemplate(text, "hooks.json", { env: {} }), {
      name: "TemplateError",
      message: "template: hooks.json:3: unterminated quoted string",
    });
  });

  test("an unknown function on line 4 names the file, the line and the function", () => {
    const text = '[\n  {\n    "id": "x",\n    "secret": "{{ getenvv "SECRET" | js }}"\n  }\n]\n';
    assert.throws(
      () => renderTemplate(text, "hooks.json", { env: {} }),
      (e: unknown) => {
        assert.ok(e instanceof TemplateError);
        assert.equal(e.message, 'template: hooks.json:4: function "getenvv" not defined');
        assert.equal(e.templateName, "hooks.json");
        assert.equal(e.line, 4);
        return true;
      },
    );
  });

  test("an action left open at the end of the file names where it started", () => {
    const text = '[\n  { "id": "{{ getenv "ID"\n\n';
    assert.throws(() => renderTemplate(text, "hooks.json", { env: {} }), {
      message: "template: hooks.json:4: unclosed action started at hooks.json:2",
    });
  });

  test("an execution error names the file, line and column, and the action", () => {
    const text = '{\n  "id": "{{ getenv 3 }}"\n}\n';
    assert.throws(() => renderTemplate(text, "hooks.json", { env: {} }), {
      message: 'template: hooks.json:2:19: executing "hooks.json" at <3>: expected string; found 3',
    });
  });

  test("nesting deep enough to exhaust the stack is a TemplateError, not a crash", () => {
    const text = `{{${"(".repeat(20000)}1${")".repeat(20000)}}}`;
    assert.throws(() => renderTemplate(text, "hooks.json", { env: {} }), {
      name: "TemplateError",
      message: "template: hooks.json: nested too deeply to parse or execute",
    });
  });

  test("an error message never contains a secret's value", () => {
    const env = { SECRET: "hunter2-value" };
    for (const text of ['{{ range getenv "SECRET" }}{{ end }}', '{{ index (getenv "SECRET") 99 }}', '{{ getenv "SECRET" | len | getenv }}']) {
      assert.throws(
        () => renderTemplate(text, "hooks.json", { env }),
        (e: unknown) => {
          assert.ok(e instanceof TemplateError);
          assert.ok(!e.message.includes("hunter2"), e.message);
          return true;
        },
      );
    }
  });
});

errors("parse errors have Go's messages", [
  ["{{.Foo}", "template: t:1: bad character U+007D '}'"],
  ["{{if true}}", "template: t:1: unexpected EOF"],
  ["{{end}}", "template: t:1: unexpected {{end}}"],
  ["{{else}}", "template: t:1: unexpected {{else}}"],
  ["{{if 1}}{{else}}{{else}}{{end}}", "template: t:1: expected end; found {{else}}"],
  ["{{ $x }}", 'template: t:1: undefined variable "$x"'],
  ["{{if true}}{{$y := 2}}{{end}}{{$y}}", 'template: t:1: undefined variable "$y"'],
  ["{{ .x", "template: t:1: unclosed action"],
  ["a\n{{ .x\n\n", "template: t:4: unclosed action started at t:2"],
  ["{{}}", "template: t:1: missing value for command"],
  ["{{if}}{{end}}", "template: t:1: missing value for if"],
  ["{{ 3 | 4 }}", "template: t:1: non executable command in pipeline stage 2"],
  ["{{ /* x */ }}", 'template: t:1: unexpected "/" in command'],
  ["{{/* x */ y}}", "template: t:1: comment ends before closing delimiter"],
  ["{{/* x ", "template: t:1: unclosed comment"],
  ['{{ "abc }}', "template: t:1: unterminated quoted string"],
  ["{{ `abc }}", "template: t:1: unterminated raw quoted string"],
  ["{{ 3x }}", 'template: t:1: bad number syntax: "3x"'],
  ["{{ 99999999999999999999 }}", 'template: t:1: integer overflow: "99999999999999999999"'],
  ["{{ - 3 }}", 'template: t:1: illegal number syntax: "-"'],
  ["{{ break }}", "template: t:1: {{break}} outside {{range}}"],
  ["{{ (1 }}", "template: t:1: unclosed left paren"],
  ["{{ 1) }}", "template: t:1: unexpected right paren"],
  ["line 1\nline 2\n{{ if\n  foo }}", 'template: t:4: function "foo" not defined'],
]);

errors("execution errors have Go's messages, with line and column", [
  ['{{ "a" "b" }}', 'template: t:1:3: executing "t" at <"a">: can\'t give argument to non-function "a"'],
  ["{{ 1 2 }}", 'template: t:1:3: executing "t" at <1>: can\'t give argument to non-function 1'],
  ["{{ getenv }}", 'template: t:1:3: executing "t" at <getenv>: wrong number of args for getenv: want 1 got 0'],
  ['{{ getenv "a" "b" }}', 'template: t:1:3: executing "t" at <getenv>: wrong number of args for getenv: want 1 got 2'],
  ["{{ getenv .X }}", 'template: t:1:10: executing "t" at <.X>: invalid value; expected string'],
  ['{{ getenv (len "x") }}', 'template: t:1:15: executing "t" at <"x">: wrong type for value; expected string; got int'],
  ["{{ nil }}", 'template: t:1:3: executing "t" at <nil>: nil is not a command'],
  ["{{ printf }}", 'template: t:1:3: executing "t" at <printf>: wrong number of args for printf: want at least 1 got 0'],
  ["{{ eq 1 1.0 }}", 'template: t:1:3: executing "t" at <eq 1 1.0>: error calling eq: incompatible types for comparison'],
  ["{{ lt true false }}", 'template: t:1:3: executing "t" at <lt true false>: error calling lt: invalid type for comparison'],
  ['{{ index "abc" 5 }}', 'template: t:1:3: executing "t" at <index "abc" 5>: error calling index: index out of range: 5'],
  ["{{ len 3 }}", 'template: t:1:3: executing "t" at <len 3>: error calling len: len of type int'],
  ["{{ (1).x }}", 'template: t:1:4: executing "t" at <1>: can\'t evaluate field x in type int'],
  ["{{range $i, $e := 3}}{{end}}", 'template: t:1:18: executing "t" at <3>: can\'t use 3 to iterate over more than one variable'],
  ['\n\n  {{ index "abcdefghijklmnop" 99 }}', 'template: t:3:5: executing "t" at <index "abcdefghijklm...>: error calling index: index out of range: 99'],
  ['{{ len "abc" | getenv }}', 'template: t:1:15: executing "t" at <getenv>: wrong type for value; expected string; got int'],
]);

errors("constructs this engine does not support say so, with file and line", [
  ["{{ call .f }}", `template: t:1: the "call" function is not supported by this server's template engine`],
  ["{{ 1+2i }}", "template: t:1: complex number 1+2i is not supported by this server's template engine"],
  [
    '{{ printf "%[1]d" 1 }}',
    `template: t:1:3: executing "t" at <printf "%[1]d" 1>: error calling printf: "%[" in printf formats is not supported by this server's template engine`,
  ],
  ['{{ printf "%#v" 1 }}', `template: t:1:3: executing "t" at <printf "%#v" 1>: error calling printf: %#v is not supported by this server's template engine`],
]);
