// Routing (404, 405, GET /) and the flags that shape it (-urlprefix, -http-methods, -header).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { removeDir, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const echo = fixture("echo.sh");
let dir = "";
let main: Server; // -http-methods "post , Get" -header X-Global=on
let prefixed: Server; // -urlprefix webhooks
let bare: Server; // -urlprefix= (hooks at /{id})

before(async () => {
  dir = await tempDir("webhook-routing-");
  const hooks = await writeHooks(dir, [
    { id: "plain", "execute-command": echo, "response-message": "plain done" },
    { id: "deploy/site/prod", "execute-command": echo, "response-message": "nested id done" },
    { id: "with space", "execute-command": echo, "response-message": "space id done" },
    {
      id: "own-header",
      "execute-command": echo,
      "response-headers": [{ name: "X-Global", value: "from the hook" }],
      "trigger-rule": { match: { type: "value", value: "yes", parameter: { source: "url", name: "ok" } } },
    },
    { id: "put-only", "execute-command": echo, "response-message": "put done", "http-methods": [" put "] },
    { id: "mixed-case", "execute-command": echo, "response-message": "mixed done", "http-methods": ["Patch", "  DELETE"] },
  ]);
  [main, prefixed, bare] = await Promise.all([
    startServer(["-hooks", hooks, "-http-methods", "post , Get", "-header", "X-Global=on", "-header", "X-Second=a=b"]),
    startServer(["-hooks", hooks, "-urlprefix", "webhooks"]),
    startServer(["-hooks", hooks, "-urlprefix="]),
  ]);
});

after(async () => {
  await Promise.all([main?.stop(), prefixed?.stop(), bare?.stop()]);
  await removeDir(dir);
});

describe("routing", { concurrency: true }, () => {
  test("GET / answers 200 OK", async () => {
    const r = await send(`${main.base}/`, { method: "GET" });
    assert.equal(r.status, 200);
    assert.equal(r.text, "OK");
  });

  test("/ answers OK to any method", async () => {
    const r = await send(`${main.base}/`, { method: "POST", body: "x" });
    assert.equal(r.status, 200);
    assert.equal(r.text, "OK");
  });

  test("GET / carries the -header response headers", async () => {
    const r = await send(`${main.base}/`, { method: "GET" });
    assert.equal(r.headers["x-global"], "on");
    assert.equal(r.headers["x-second"], "a=b", "only the first '=' splits name from value");
  });

  test("a known hook answers under /hooks/{id}", async () => {
    const r = await send(`${main.base}/hooks/plain`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "plain done");
  });

  test("a hook response carries the -header headers", async () => {
    const r = await send(`${main.base}/hooks/plain`);
    assert.equal(r.headers["x-global"], "on");
  });

  test("a hook's response-headers win over -header of the same name", async () => {
    const r = await send(`${main.base}/hooks/own-header?ok=yes`);
    assert.equal(r.headers["x-global"], "from the hook");
  });

  test("-header is not sent on 404 or 405, as the reference sets it only once a hook matched", async () => {
    assert.equal((await send(`${main.base}/hooks/nope`)).headers["x-global"], undefined);
    const wrongMethod = await send(`${main.base}/hooks/plain`, { method: "PUT" });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers["x-global"], undefined);
  });

  test("-header is sent with 'Hook rules were not satisfied.' too", async () => {
    const r = await send(`${main.base}/hooks/own-header?ok=no`);
    assert.equal(r.text, "Hook rules were not satisfied.");
    assert.equal(r.headers["x-global"], "on");
  });

  test("an id may contain slashes", async () => {
    const r = await send(`${main.base}/hooks/deploy/site/prod`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "nested id done");
  });

  test("a percent-encoded id is decoded before matching", async () => {
    const r = await send(`${main.base}/hooks/with%20space`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "space id done");
  });

  test("an unknown id answers 404 'Hook not found.'", async () => {
    const r = await send(`${main.base}/hooks/nope`);
    assert.equal(r.status, 404);
    assert.equal(r.text, "Hook not found.");
    assert.equal(r.headers["content-type"], "text/plain; charset=utf-8");
  });

  test("an empty id answers 404 'Hook not found.'", async () => {
    const r = await send(`${main.base}/hooks/`);
    assert.equal(r.status, 404);
    assert.equal(r.text, "Hook not found.");
  });

  test("a prefix of a nested id is not a hook", async () => {
    const r = await send(`${main.base}/hooks/deploy/site`);
    assert.equal(r.status, 404);
    assert.equal(r.text, "Hook not found.");
  });

  test("a path outside the prefix answers 404", async () => {
    const r = await send(`${main.base}/other/plain`);
    assert.equal(r.status, 404);
    assert.equal(r.text, "404 page not found\n");
  });

  test("a query string does not change the route", async () => {
    const r = await send(`${main.base}/hooks/plain?x=1&y=2`);
    assert.equal(r.text, "plain done");
  });
});

describe("allowed methods", { concurrency: true }, () => {
  test("global -http-methods (case-insensitive, spaces trimmed) allows POST", async () => {
    assert.equal((await send(`${main.base}/hooks/plain`, { method: "POST" })).status, 200);
  });

  test("global -http-methods allows GET given as 'Get'", async () => {
    const r = await send(`${main.base}/hooks/plain`, { method: "GET" });
    assert.equal(r.status, 200);
    assert.equal(r.text, "plain done");
  });

  test("a method outside global -http-methods answers 405 with an empty body", async () => {
    const r = await send(`${main.base}/hooks/plain`, { method: "PUT" });
    assert.equal(r.status, 405);
    assert.equal(r.text, "");
  });

  test("a hook's own http-methods override the global list", async () => {
    const put = await send(`${main.base}/hooks/put-only`, { method: "PUT" });
    assert.equal(put.status, 200);
    assert.equal(put.text, "put done");
    const post = await send(`${main.base}/hooks/put-only`, { method: "POST" });
    assert.equal(post.status, 405);
  });

  test("a hook's http-methods are case-insensitive and trimmed", async () => {
    assert.equal((await send(`${main.base}/hooks/mixed-case`, { method: "PATCH" })).status, 200);
    assert.equal((await send(`${main.base}/hooks/mixed-case`, { method: "DELETE" })).status, 200);
    assert.equal((await send(`${main.base}/hooks/mixed-case`, { method: "GET" })).status, 405);
  });

  test("without any method list every method is allowed", async () => {
    for (const method of ["GET", "POST", "PUT", "DELETE", "PATCH"]) {
      const r = await send(`${prefixed.base}/webhooks/plain`, { method });
      assert.equal(r.status, 200, method);
    }
  });

  test("an unknown hook answers 404 even for a disallowed method", async () => {
    const r = await send(`${main.base}/hooks/nope`, { method: "PUT" });
    assert.equal(r.status, 404);
  });
});

describe("-urlprefix", { concurrency: true }, () => {
  test("hooks move under the given prefix", async () => {
    const r = await send(`${prefixed.base}/webhooks/plain`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "plain done");
  });

  test("the default prefix no longer routes", async () => {
    const r = await send(`${prefixed.base}/hooks/plain`);
    assert.equal(r.status, 404);
  });

  test("an empty prefix serves hooks at /{id}", async () => {
    const r = await send(`${bare.base}/plain`);
    assert.equal(r.status, 200);
    assert.equal(r.text, "plain done");
    const nested = await send(`${bare.base}/deploy/site/prod`);
    assert.equal(nested.text, "nested id done");
  });

  test("with an empty prefix GET / is still 200 OK", async () => {
    const r = await send(`${bare.base}/`, { method: "GET" });
    assert.equal(r.status, 200);
    assert.equal(r.text, "OK");
  });
});
