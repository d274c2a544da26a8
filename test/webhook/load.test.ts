// 10 000 requests from 200 concurrent connections, mixing satisfied and
// failing rules, unknown hooks, wrong methods, bad signatures and malformed bodies. Every request
// gets its proper status, the server stays up, and exactly the satisfied requests ran a command.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { Agent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { removeDir, tempDir } from "../helpers.js";
import { fixture, send, startServer, writeHooks, type Server } from "./fixtures/harness.js";

const append = fixture("append.sh");
const NOT_SATISFIED = "Hook rules were not satisfied.";
let dir = "";
let ranFile = "";
let s: Server;

before(async () => {
  dir = await tempDir("webhook-load-");
  ranFile = join(dir, "ran.txt");
  // append.sh <marker from ?n=> <file>: one line per command that ran
  const appendArgs = [
    { source: "url", name: "n" },
    { source: "string", name: ranFile },
  ];
  const tokenRule = { match: { type: "value", value: "yes", parameter: { source: "url", name: "token" } } };
  const hooks = await writeHooks(dir, [
    { id: "good", "execute-command": append, "include-command-output-in-response": true, "pass-arguments-to-command": appendArgs, "trigger-rule": tokenRule },
    { id: "guarded", "execute-command": append, "pass-arguments-to-command": appendArgs, "trigger-rule": tokenRule },
    {
      id: "payload-rule",
      "execute-command": append,
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": { match: { type: "value", value: "1", parameter: { source: "payload", name: "a" } } },
    },
    {
      id: "signed",
      "execute-command": append,
      "pass-arguments-to-command": appendArgs,
      "trigger-rule": { match: { type: "payload-hmac-sha256", secret: "load-secret", parameter: { source: "header", name: "X-Sig" } } },
    },
    { id: "post-only", "execute-command": append, "http-methods": ["POST"], "pass-arguments-to-command": appendArgs, "trigger-rule": tokenRule },
  ]);
  s = await startServer(["-hooks", hooks]);
});

after(async () => {
  await s?.stop();
  await removeDir(dir);
});

async function ranLines(): Promise<string[]> {
  if (!existsSync(ranFile)) return [];
  return (await readFile(ranFile, "utf8")).split("\n").filter(Boolean);
}

describe("load", () => {
  test("10 000 requests over 200 concurrent connections: right statuses, server up, only satisfied rules run commands", async () => {
    const total = 10_000;
    const connections = 200;
    const agent = new Agent({ keepAlive: true, maxSockets: connections });
    const badSigBody = '{"x":1}';
    const badSig = "sha256=" + createHmac("sha256", "not-the-secret").update(badSigBody).digest("hex");
    type Plan = { method: string; path: string; headers: Record<string, string>; body?: string; status: number; text?: string };
    const plan = (i: number): Plan => {
      if (i % 50 === 0) return { method: "POST", path: `/hooks/good?token=yes&n=good-${i}`, headers: {}, status: 200, text: "" };
      switch (i % 7) {
        case 0:
          return { method: "POST", path: `/hooks/guarded?token=no&n=bad-${i}`, headers: {}, status: 200, text: NOT_SATISFIED };
        case 1:
          return { method: "POST", path: `/hooks/missing-${i}`, headers: {}, status: 404, text: "Hook not found." };
        case 2:
          return { method: "GET", path: "/", headers: {}, status: 200, text: "OK" };
        case 3:
          return {
            method: "POST",
            path: `/hooks/signed?n=bad-${i}`,
            headers: { "Content-Type": "application/json", "X-Sig": badSig },
            body: badSigBody,
            status: 500,
            text: "Error occurred while evaluating hook rules.",
          };
        case 4:
          return { method: "GET", path: `/hooks/post-only?token=yes&n=bad-${i}`, headers: {}, status: 405 };
        case 5:
          return {
            method: "POST",
            path: `/hooks/payload-rule?n=bad-${i}`,
            headers: { "Content-Type": "application/json" },
            body: '{"a": 1,,,',
            status: 200,
            text: NOT_SATISFIED,
          };
        default:
          return {
            method: "POST",
            path: `/hooks/guarded?n=bad-${i}`,
            headers: { "Content-Type": "application/json" },
            body: '{"token":"yes"}',
            status: 200,
            text: NOT_SATISFIED,
          };
      }
    };
    const one = (p: Plan): Promise<{ status: number; text: string }> =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string> = { ...p.headers };
        if (p.body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(p.body));
        const req = httpRequest(`${s.base}${p.path}`, { method: p.method, headers, agent }, (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
          res.on("error", reject);
        });
        req.setTimeout(60_000, () => req.destroy(new Error(`timeout on ${p.path}`)));
        req.on("error", reject);
        req.end(p.body);
      });

    const wrong: string[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < total) {
        const i = next++;
        const p = plan(i);
        try {
          const r = await one(p);
          if (r.status !== p.status || (p.text !== undefined && r.text !== p.text)) {
            wrong.push(`#${i} ${p.method} ${p.path}: expected ${p.status} ${JSON.stringify(p.text)}, got ${r.status} ${JSON.stringify(r.text.slice(0, 80))}`);
          }
        } catch (e) {
          wrong.push(`#${i} ${p.method} ${p.path}: ${(e as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: connections }, worker));
    agent.destroy();

    assert.deepEqual(wrong.slice(0, 20), [], `${wrong.length} of ${total} requests got a wrong answer`);
    const root = await send(`${s.base}/`, { method: "GET" });
    assert.equal(root.text, "OK");
    assert.equal(s.proc.child.exitCode, null, "the server is still running");
    const ran = (await ranLines()).filter((l) => /^(good|bad)-\d+$/.test(l));
    const expected = Array.from({ length: total / 50 }, (_, k) => `good-${k * 50}`);
    assert.deepEqual(
      ran.filter((l) => l.startsWith("bad-")),
      [],
      "no command ran whose rule failed",
    );
    assert.deepEqual([...new Set(ran)].sort(), expected.sort(), "every satisfied request ran its command exactly once");
    assert.equal(ran.length, expected.length);
  });
});
