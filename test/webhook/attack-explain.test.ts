// Attacks on issue 33's surface (rule explanations, -test-request, -record-requests, secret-file,
// ip-list-file) through the real bin/webhook, each a hole now fixed:
// - /dev/zero or a FIFO as a secret-file, ip-list-file or -test-request file filled memory or blocked
//   for ever (now: "not a regular file"); a secret-file of blank lines was a secret anybody could sign with;
// - a -record-requests body of control characters took six times its size (JSON escapes; now base64);
// - a list of "secret"s on a value match (which reads no secret) compared with "" and let ?token= in;
// - an old recording that could not be removed made the request a 500 naming the folder;
// - an ip-list-file was parsed on every request (70 000 ranges: 600 ms of CPU each); it holds for
//   the same addresses as the same ranges in the reference's ip-range;
// - with -hotreload, a list file left empty kept a secret-file's change (a revoked secret) unread,
//   and one swapped for /dev/zero hung the server reading it;
// - -test-request -verbose printed a URL token the server's log masks.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, eventually, removeDir, run, tempDir } from "../helpers.js";
import { send, startServer, writeHooks } from "./fixtures/harness.js";

let dir = "";

before(async () => {
  dir = await tempDir("webhook-attack-explain-");
});

after(async () => {
  await removeDir(dir);
});

test("/dev/zero or a FIFO as a secret-file, ip-list-file or -test-request file is refused, not read for ever; a blank secret-file too", async () => {
  const fifo = join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const hook = (id: string, match: unknown) => ({ id, "execute-command": "/bin/true", "trigger-rule": { match } });
  const hmac = { type: "payload-hmac-sha256", parameter: { source: "header", name: "X-Sig" } };
  const hooks = await writeHooks(dir, [
    hook("zero", { ...hmac, "secret-file": "/dev/zero" }),
    hook("fifo", { ...hmac, "secret-file": fifo }),
    hook("ips", { type: "ip-whitelist", "ip-list-file": fifo }),
    hook("blank", { ...hmac, "secret-file": join(dir, "blank") }),
  ]);
  // Blank lines are not a secret: anybody could sign with " \n".
  await writeFile(join(dir, "blank"), " \n\n");
  const plain = await writeHooks(dir, [{ id: "h", "execute-command": "/bin/true" }], "plain.json");
  const [validated, ...tested] = await Promise.all([
    run(bin("webhook"), ["-hooks", hooks, "-validate"], { timeoutMs: 10_000 }),
    ...["/dev/zero", fifo].map((file) => run(bin("webhook"), ["-hooks", plain, "-test-request", file], { timeoutMs: 10_000 })),
  ]);
  assert.equal(validated!.code, 1, validated!.stderr);
  const said = validated!.stdout + validated!.stderr;
  assert.match(said, /"zero"\): cannot read "secret-file" \/dev\/zero: not a regular file/);
  assert.match(said, /"fifo"\): cannot read "secret-file" .*fifo: not a regular file/);
  assert.match(said, /"ips"\): cannot read "ip-list-file" .*fifo: not a regular file/);
  assert.match(said, /"blank"\): "secret-file" .*blank is empty or blank/);
  for (const r of tested) {
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /\(-test-request\): not a regular file/);
  }
});

test("a recorded body of control characters takes at most twice its size, and replays", async () => {
  const hooks = await writeHooks(dir, [{ id: "rec", "execute-command": "/bin/true" }], "rec.json");
  const rec = join(dir, "rec");
  const s = await startServer(["-hooks", hooks, "-record-requests", rec]);
  try {
    const body = "\x01".repeat(64 * 1024);
    assert.equal((await send(`${s.base}/hooks/rec`, { body })).status, 200);
    const [file] = readdirSync(rec).filter((f) => f.endsWith("-rec.json"));
    assert.ok(statSync(join(rec, file!)).size < 2 * body.length, `${statSync(join(rec, file!)).size} bytes for a body of ${body.length}`);
    const r = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(rec, file!)]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  } finally {
    await s.stop();
  }
});

test('a list of "secret"s on a value match is refused, not compared with ""', async () => {
  const hooks = await writeHooks(
    dir,
    [
      {
        id: "v",
        "execute-command": "/bin/true",
        "trigger-rule": { match: { type: "value", secret: ["tok-a", "tok-b"], parameter: { source: "url", name: "token" } } },
      },
    ],
    "value-list.json",
  );
  await writeFile(join(dir, "empty-token.json"), '{"url": "/hooks/v?token="}');
  const r = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "empty-token.json")]);
  assert.equal(r.code, 2, r.stdout);
  assert.match(r.stderr, /a list of "secret"s serves the signature matches, not value/);
});

test("an old recording that cannot be removed is logged; the request is answered as without -record-requests", async () => {
  const hooks = await writeHooks(dir, [{ id: "rec", "execute-command": "/bin/true" }], "prune.json");
  const rec = join(dir, "prune");
  await mkdir(rec);
  const old = Array.from({ length: 100 }, (_, i) => join(rec, `${String(i + 1).padStart(13, "0")}-000000-rec.json`));
  await Promise.all(old.map((f) => writeFile(f, "{}")));
  const s = await startServer(["-hooks", hooks, "-verbose", "-record-requests", rec]);
  try {
    // The oldest recording, counted at start, is now a folder: it cannot be removed as a file.
    await rm(old[0]!);
    await mkdir(old[0]!);
    const r = await send(`${s.base}/hooks/rec`, { body: "x" });
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.text.includes(rec), r.text);
    await eventually(() => /old recording .*0000000000001-000000-rec\.json not removed/.test(s.logs()));
  } finally {
    await s.stop();
  }
});

test("an ip-list-file holds for the addresses the same ranges hold for in ip-range", async () => {
  const ranges = ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::ffff:198.51.100.0/120", "203.0.113.64/26"];
  const hook = (id: string, match: Record<string, unknown>) => ({
    id,
    "execute-command": "/bin/true",
    "trigger-rule": { match: { type: "ip-whitelist", ...match } },
  });
  // Each range alone, and all of them in one file (CRLF lines, a comment), each beside the same in ip-range.
  const lists = [...ranges.map((r) => [r]), ranges];
  await Promise.all(lists.map((l, i) => writeFile(join(dir, `list-${i}.txt`), `# ranges\r\n${l.join("\r\n")}\r\n`)));
  const hooks = await writeHooks(
    dir,
    lists.flatMap((l, i) => [
      hook(`file-${i}`, { "ip-list-file": join(dir, `list-${i}.txt`) }),
      hook(`range-${i}`, { "ip-range": l.map((r) => (r.includes("/") ? r : `${r}/32`)).join(" ") }),
    ]),
    "lists.json",
  );
  const addrs = ["10.200.3.4:1", "192.0.2.8:1", "[2001:db8:1::5]:1", "[::ffff:198.51.100.9]:1", "203.0.113.127:1", "198.51.101.1:1"];
  const held = await Promise.all(
    addrs.map(async (remoteAddr, i) => {
      const file = join(dir, `from-${i}.json`);
      await writeFile(file, JSON.stringify({ url: `/hooks/file-${ranges.length}`, remoteAddr }));
      const r = await run(bin("webhook"), ["-hooks", hooks, "-test-request", file]);
      const runs = (id: string): boolean => new RegExp(`^${id}: would run`, "m").test(r.stdout);
      for (const [j] of lists.entries()) assert.equal(runs(`file-${j}`), runs(`range-${j}`), `${remoteAddr}, list ${j}:\n${r.stdout}${r.stderr}`);
      return runs(`file-${ranges.length}`);
    }),
  );
  assert.deepEqual(held, [true, false, true, true, true, false]);
});

test("-hotreload: an ip-list-file left empty does not keep a revoked secret-file secret working, nor one swapped for /dev/zero hang the server", async () => {
  const sub = join(dir, "reload");
  await mkdir(sub);
  await writeFile(join(sub, "ips.txt"), "127.0.0.1\n");
  await writeFile(join(sub, "token"), "old-token-1234\n");
  const hooks = await writeHooks(sub, [
    { id: "ips", "execute-command": "/bin/true", "trigger-rule": { match: { type: "ip-whitelist", "ip-list-file": join(sub, "ips.txt") } } },
    {
      id: "tok",
      "execute-command": "/bin/true",
      "trigger-rule": { match: { type: "value", "secret-file": join(sub, "token"), parameter: { source: "header", name: "X-Token" } } },
    },
  ]);
  const s = await startServer(["-hooks", hooks, "-hotreload", "-verbose"]);
  const ran = async (token: string) => (await send(`${s.base}/hooks/tok`, { body: "x", headers: { "X-Token": token } })).text === "";
  try {
    assert.ok(await ran("old-token-1234"));
    await writeFile(join(sub, "ips.txt"), "");
    await eventually(() => s.logs().includes("ips.txt, read by hooks file"));
    await writeFile(join(sub, "token"), "new-token-5678\n");
    await eventually(() => ran("new-token-5678"));
    assert.equal(await ran("old-token-1234"), false);
    assert.ok(!s.logs().includes("token-"), s.logs());
    // A list swapped for /dev/zero is refused on reload; the server goes on serving the hooks it has.
    await rm(join(sub, "ips.txt"));
    await symlink("/dev/zero", join(sub, "ips.txt"));
    await eventually(() => /cannot read "ip-list-file" .*ips\.txt: not a regular file/.test(s.logs()));
    assert.ok(await ran("new-token-5678"));
  } finally {
    await s.stop();
  }
});

test("-test-request -verbose masks a URL token of the hooks in its log lines, as the server does", async () => {
  const token = "url-token-9a9a";
  const hooks = await writeHooks(
    dir,
    [{ id: "t", "execute-command": "/bin/true", "trigger-rule": { match: { type: "value", value: token, parameter: { source: "url", name: "token" } } } }],
    "token.json",
  );
  await writeFile(join(dir, "token.req.json"), JSON.stringify({ url: `/hooks/t?token=${token}` }));
  const r = await run(bin("webhook"), ["-hooks", hooks, "-test-request", join(dir, "token.req.json"), "-verbose"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /POST \/hooks\/t\?token=\*\*\*/);
  assert.ok(!(r.stdout + r.stderr).includes(token), r.stdout + r.stderr);
});
