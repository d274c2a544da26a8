// Several bin/webhook instances sharing durable per-hook queues on a real nats-server
// with JetStream (-queue). Global max-concurrency, de-duplication across instances, output of
// captured and streamed hooks from wherever the command ran, a killed instance's job run by
// another, a NATS restart losing nothing, 503 while NATS is away.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, eventually, freePort, removeDir, run, tempDir } from "../helpers.js";
import { connect } from "nats";
import { send, startServer, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

/** A hook running `/bin/sh -c script sh <id> <log>`: the id from the X-Id header, the log file given. */
function shHook(id: string, script: string, log: string, extra: Record<string, unknown> = {}): unknown {
  return {
    id,
    "execute-command": "/bin/sh",
    "pass-arguments-to-command": [
      { source: "string", name: "-c" },
      { source: "string", name: script },
      { source: "string", name: "sh" },
      { source: "header", name: "X-Id" },
      { source: "string", name: log },
    ],
    ...extra,
  };
}

/** Writes "start ID INSTANCE", sleeps, writes "end ID INSTANCE" (appends of one line are atomic). */
const startEnd = (sleep: string): string => `echo "start $1 $INSTANCE" >> "$2"; sleep ${sleep}; echo "end $1 $INSTANCE" >> "$2"`;

async function lines(file: string): Promise<string[][]> {
  try {
    return (await readFile(file, "utf8"))
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.split(" "));
  } catch {
    return [];
  }
}

/** Sends `count` requests, `parallel` at a time; `make(i)` gives each one's URL and headers. */
async function burst(count: number, parallel: number, make: (i: number) => { url: string; headers: Record<string, string> }) {
  const replies: { i: number; status: number; job: string; text: string }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        const { url, headers } = make(i);
        const r = await send(url, { method: "POST", headers });
        replies.push({ i, status: r.status, job: String(r.headers["x-job-id"] ?? ""), text: r.text });
      }
    }),
  );
  return replies;
}

describe("-queue: three instances on one NATS JetStream", () => {
  let dir = "";
  let nats: Nats;
  const servers: Server[] = [];
  const log = (name: string): string => join(dir, `${name}.log`);

  before(async () => {
    dir = await tempDir("webhook-queue-");
    nats = await startNats();
    const hooks = [
      shHook("limited", startEnd("0.01"), log("limited"), { "max-concurrency": 2, "max-queue": 1000 }),
      shHook("dedup", startEnd("0"), log("dedup"), { deduplicate: { id: { source: "header", name: "X-GitHub-Delivery" }, window: "1m" } }),
      shHook("slow", startEnd("1"), log("slow"), { "max-concurrency": 1 }),
      {
        id: "captured",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'echo "out $1 from $INSTANCE"; [ "$1" != fail ] || exit 3' },
          { source: "string", name: "sh" },
          { source: "url", name: "x" },
        ],
        "include-command-output-in-response": true,
        "include-command-output-in-response-on-error": true,
        "max-concurrency": 1,
      },
      {
        id: "streamed",
        "execute-command": "/bin/sh",
        "pass-arguments-to-command": [
          { source: "string", name: "-c" },
          { source: "string", name: 'echo one; sleep 0.1; echo "two from $INSTANCE"' },
        ],
        "stream-command-output": true,
      },
    ];
    const file = join(dir, "hooks.json");
    await writeFile(file, JSON.stringify(hooks));
    for (const name of ["a", "b", "c"]) {
      servers.push(await startServer(["-hooks", file, "-queue", nats.url, "-queue-ack-wait", "2s"], { env: { ...process.env, INSTANCE: name } }));
    }
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await nats.close();
    await removeDir(dir);
  });

  test("max-concurrency 2 holds over three instances: 500 triggers, never more than 2 at once, each ran exactly once", async () => {
    const replies = await burst(500, 24, (i) => ({ url: `${servers[i % 3]!.base}/hooks/limited`, headers: { "X-Id": `t${i}` } }));
    const accepted = replies.filter((r) => r.status === 200).map((r) => `t${r.i}`);
    assert.equal(accepted.length, 500, `every trigger fits max-queue 1000: ${JSON.stringify(replies.filter((r) => r.status !== 200).slice(0, 3))}`);
    const done = (await eventually(async () => {
      const l = await lines(log("limited"));
      return l.filter((x) => x[0] === "end").length >= 500 ? l : undefined;
    }, 45_000))!;
    let running = 0;
    let most = 0;
    const starts = new Map<string, number>();
    const ends = new Map<string, number>();
    for (const [what, id] of done) {
      if (what === "start") {
        running++;
        starts.set(id!, (starts.get(id!) ?? 0) + 1);
      } else {
        running--;
        ends.set(id!, (ends.get(id!) ?? 0) + 1);
      }
      most = Math.max(most, running);
    }
    assert.ok(most <= 2, `at most 2 commands overlapped, saw ${most}`);
    assert.equal(most, 2, "the limit was reached (both slots used)");
    for (const id of accepted) {
      assert.equal(starts.get(id), 1, `${id} started once`);
      assert.equal(ends.get(id), 1, `${id} ended once`);
    }
    assert.equal(starts.size, 500);
    const instances = new Set(done.map((l) => l[2]));
    assert.ok(instances.size >= 2, `the work was shared: ran on ${[...instances].join(", ")}`);
  });

  test("deduplicate: three copies of each delivery, sent at once to three instances, run once and answer the first job's id", async () => {
    const replies = await burst(60, 30, (i) => ({
      url: `${servers[i % 3]!.base}/hooks/dedup`,
      headers: { "X-Id": `d${Math.floor(i / 3)}`, "X-GitHub-Delivery": `delivery-${Math.floor(i / 3)}` },
    }));
    const refused = replies.filter((r) => r.status !== 200);
    const said = servers.flatMap((s) => s.logs().split("\n")).filter((l) => /answering|NATS/.test(l));
    assert.deepEqual(refused, [], `every copy is answered 200; the servers said:\n${said.slice(-20).join("\n")}`);
    const ran = (await eventually(async () => {
      const l = await lines(log("dedup"));
      return l.filter((x) => x[0] === "end").length >= 20 ? l : undefined;
    }, 20_000))!;
    for (let d = 0; d < 20; d++) {
      const jobs = new Set(replies.filter((r) => Math.floor(r.i / 3) === d).map((r) => r.job));
      assert.equal(jobs.size, 1, `delivery-${d}: one job id in all three answers, got ${[...jobs].join(", ")}`);
      assert.notEqual([...jobs][0], "");
    }
    // Late duplicates have had every chance to run by now.
    await send(`${servers[0]!.base}/hooks/dedup`, { method: "POST", headers: { "X-Id": "d0", "X-GitHub-Delivery": "delivery-0" } });
    const after = await lines(log("dedup"));
    for (let d = 0; d < 20; d++) assert.equal(after.filter((x) => x[0] === "start" && x[1] === `d${d}`).length, 1, `d${d} ran once`);
    assert.equal(ran.length, 40);
  });

  test("captured and streamed hooks answer on the receiving instance with the output of wherever the command ran", async () => {
    const where = new Set<string>();
    for (let i = 0; i < 9; i++) {
      const r = await send(`${servers[0]!.base}/hooks/captured?x=v${i}`, { method: "POST" });
      assert.equal(r.status, 200);
      const m = /^out v(\d) from ([abc])\n$/.exec(r.text);
      assert.ok(m && m[1] === String(i), `the command's own output: ${JSON.stringify(r.text)}`);
      where.add(m[2]!);
    }
    assert.ok(
      [...where].some((w) => w !== "a"),
      `some ran on another instance than a: ${[...where].join(",")}`,
    );
    const failed = await send(`${servers[1]!.base}/hooks/captured?x=fail`, { method: "POST" });
    assert.equal(failed.status, 500);
    assert.match(failed.text, /^out fail from [abc]\n$/);
    const streamed = await send(`${servers[2]!.base}/hooks/streamed`, { method: "POST" });
    assert.equal(streamed.status, 200);
    assert.match(streamed.text, /^one\ntwo from [abc]\n$/);
  });

  const live = (): Server[] => servers.filter((s) => s.proc.child.exitCode === null && s.proc.child.signalCode === null);

  test("graceful shutdown (SIGTERM) of the instance running a job: it finishes the job and stops pulling", async () => {
    const r = await send(`${servers[0]!.base}/hooks/slow`, { method: "POST", headers: { "X-Id": "g1" } });
    assert.equal(r.status, 200);
    const first = (await eventually(async () => (await lines(log("slow"))).find((l) => l[0] === "start" && l[1] === "g1"), 10_000))!;
    const holder = servers[["a", "b", "c"].indexOf(first[2]!)]!;
    assert.equal(await holder.stop(), 0);
    const l = await lines(log("slow"));
    assert.ok(
      l.some((x) => x[0] === "end" && x[1] === "g1" && x[2] === first[2]),
      "the job ended on the instance that held it",
    );
    // The others still take work.
    const next = await send(`${live()[0]!.base}/hooks/slow`, { method: "POST", headers: { "X-Id": "g2" } });
    assert.equal(next.status, 200);
    await eventually(async () => (await lines(log("slow"))).some((x) => x[0] === "end" && x[1] === "g2"), 10_000);
  });

  test("kill -9 the instance running a job: another instance runs it after -queue-ack-wait", async () => {
    const r = await send(`${live()[0]!.base}/hooks/slow`, { method: "POST", headers: { "X-Id": "k1" } });
    assert.equal(r.status, 200);
    const first = (await eventually(async () => (await lines(log("slow"))).find((l) => l[0] === "start" && l[1] === "k1"), 10_000))!;
    const victim = servers[["a", "b", "c"].indexOf(first[2]!)]!;
    victim.proc.child.kill("SIGKILL");
    await victim.proc.exited;
    const again = (await eventually(async () => (await lines(log("slow"))).find((l) => l[0] === "end" && l[1] === "k1" && l[2] !== first[2]), 20_000))!;
    assert.notEqual(again[2], first[2]);
    const starts = (await lines(log("slow"))).filter((l) => l[0] === "start");
    assert.equal(starts.filter((l) => l[1] === "g1").length, 1, "the gracefully finished job did not run again");
  });
});

describe("-queue: faults", () => {
  test("an instance paused past -queue-ack-wait gets its running jobs again, and still runs no more than max-concurrency at once", async () => {
    const dir = await tempDir("webhook-queue-");
    const nats = await startNats();
    let server: Server | undefined;
    try {
      const file = join(dir, "hooks.json");
      const log = join(dir, "lim.log");
      // Each job waits for its gate file, $1 in the folder gates.
      const gated = `echo "start $1" >> "$2"; while [ ! -e "${join(dir, "gates")}/$1" ]; do sleep 0.05; done; echo "end $1" >> "$2"`;
      await mkdir(join(dir, "gates"));
      const open = (id: string): Promise<void> => writeFile(join(dir, "gates", id), "");
      await writeFile(file, JSON.stringify([shHook("lim", gated, log, { "max-concurrency": 2, "max-queue": 10 })]));
      const s = await startServer(["-hooks", file, "-queue", nats.url, "-queue-ack-wait", "2s", "-verbose"]);
      server = s;
      const trigger = async (id: string): Promise<void> =>
        assert.equal((await send(`${s.base}/hooks/lim`, { method: "POST", headers: { "X-Id": id } })).status, 200);
      await trigger("a");
      await trigger("b");
      await eventually(async () => (await lines(log)).filter((l) => l[0] === "start").length === 2, 10_000);
      // Waiting behind them, each done as soon as it runs.
      for (const id of ["c", "d", "e", "f"]) {
        await open(id);
        await trigger(id);
      }
      // No sign of life for longer than -queue-ack-wait: NATS hands a and b out again.
      s.proc.child.kill("SIGSTOP");
      await new Promise((r) => setTimeout(r, 5000));
      s.proc.child.kill("SIGCONT");
      // a ends: one slot is free, and b's second delivery may take it (a job of a dead instance runs again).
      await open("a");
      await eventually(async () => (await lines(log)).some((l) => l[0] === "end" && l[1] === "a"), 10_000);
      await open("b");
      const done = (await eventually(async () => {
        const l = await lines(log);
        return ["c", "d", "e", "f"].every((id) => l.some((x) => x[0] === "end" && x[1] === id)) &&
          l.filter((x) => x[0] === "start").length === l.filter((x) => x[0] === "end").length
          ? l
          : undefined;
      }, 20_000))!;
      let running = 0;
      let most = 0;
      for (const [what] of done) most = Math.max(most, (running += what === "start" ? 1 : -1));
      assert.ok(most <= 2, `at most 2 commands at once, saw ${most}: ${done.map((l) => l.join(" ")).join(", ")}`);
    } finally {
      await server?.stop();
      await nats.close();
      await removeDir(dir);
    }
  });

  test("a captured hook's output written while NATS is away is still the answer (from the job's record)", async () => {
    const dir = await tempDir("webhook-queue-");
    const nats = await startNats();
    let server: Server | undefined;
    try {
      const file = join(dir, "hooks.json");
      const gate = join(dir, "gate");
      await writeFile(
        file,
        JSON.stringify([
          {
            id: "gated",
            "execute-command": "/bin/sh",
            "pass-arguments-to-command": [
              { source: "string", name: "-c" },
              { source: "string", name: 'while [ ! -e "$0" ]; do sleep 0.05; done; echo "written while NATS was away"' },
              { source: "string", name: gate },
            ],
            "include-command-output-in-response": true,
          },
        ]),
      );
      const s = await startServer(["-hooks", file, "-queue", nats.url, "-verbose"]);
      server = s;
      const answer = send(`${s.base}/hooks/gated`, { method: "POST" });
      await eventually(() => /executing \/bin\/sh/.test(s.logs()), 15_000);
      await nats.stop();
      await eventually(() => /lost the NATS server/.test(s.logs()), 15_000);
      await writeFile(gate, "");
      await eventually(() => /finished handling gated/.test(s.logs()), 15_000);
      await nats.restart();
      const r = await answer;
      assert.equal(r.status, 200, s.logs());
      assert.equal(r.text, "written while NATS was away\n", s.logs());
    } finally {
      await server?.stop();
      await nats.close();
      await removeDir(dir);
    }
  });

  test("NATS unreachable at start: a clear error naming the address (never the password), exit 1", async () => {
    const port = await freePort();
    const dir = await tempDir("webhook-queue-");
    try {
      const file = join(dir, "hooks.json");
      await writeFile(file, JSON.stringify([{ id: "x", "execute-command": "/bin/true" }]));
      const r = await run(bin("webhook"), ["-hooks", file, "-port", String(await freePort()), "-queue", `nats://user:s3cret-pw@127.0.0.1:${port}`], {
        timeoutMs: 20_000,
      });
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`cannot connect to the NATS server at nats://127\\.0\\.0\\.1:${port} \\(-queue\\)`));
      assert.doesNotMatch(r.stdout + r.stderr, /s3cret/);
    } finally {
      await removeDir(dir);
    }
  });

  test("NATS restarted mid-run loses no accepted job; while it is away triggers get 503, then service resumes", async () => {
    const dir = await tempDir("webhook-queue-");
    const nats = await startNats();
    const servers: Server[] = [];
    try {
      const file = join(dir, "hooks.json");
      const out = join(dir, "jobs.log");
      const rated = join(dir, "rated.log");
      await writeFile(
        file,
        JSON.stringify([
          shHook("job", startEnd("0.05"), out, { "max-concurrency": 1 }),
          shHook("rated", startEnd("0"), rated, { "rate-limit": { requests: 100, period: "1h" } }),
        ]),
      );
      for (const name of ["a", "b"])
        servers.push(await startServer(["-hooks", file, "-queue", nats.url, "-queue-ack-wait", "2s", "-verbose"], { env: { ...process.env, INSTANCE: name } }));
      const replies = await burst(30, 6, (i) => ({ url: `${servers[i % 2]!.base}/hooks/job`, headers: { "X-Id": `j${i}` } }));
      assert.ok(replies.every((r) => r.status === 200));
      await nats.stop();
      const refused = (await eventually(async () => {
        const r = await send(`${servers[0]!.base}/hooks/job`, { method: "POST", headers: { "X-Id": "never" } });
        return r.status === 503 ? r : undefined;
      }, 10_000))!;
      assert.equal(refused.headers["retry-after"], "1");
      // A rate-limited trigger that cannot be counted is refused too, not let through uncounted.
      const uncounted = await send(`${servers[0]!.base}/hooks/rated`, { method: "POST", headers: { "X-Id": "never" } });
      assert.equal(uncounted.status, 503);
      // The log line may reach us just after the answer: they come on different pipes.
      await eventually(() => /rated got matched, but the NATS server at \S+ is unreachable - answering 503/.test(servers[0]!.logs()));
      await nats.restart();
      await eventually(async () => (await send(`${servers[1]!.base}/hooks/job`, { method: "POST", headers: { "X-Id": "later" } })).status === 200, 20_000, 200);
      const ran = (await eventually(async () => {
        const l = await lines(out);
        const ended = new Set(l.filter((x) => x[0] === "end").map((x) => x[1]));
        return [...Array(30).keys(), "later"].every((i) => ended.has(typeof i === "number" ? `j${i}` : i)) ? l : undefined;
      }, 30_000))!;
      assert.ok(!ran.some((l) => l[1] === "never"), "a trigger answered 503 never runs");
      assert.ok(!(await lines(rated)).some((l) => l[1] === "never"), "a rate-limited trigger answered 503 never runs");
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await nats.close();
      await removeDir(dir);
    }
  });
});

describe("-queue: a hook's stream deleted under a running instance", () => {
  test("the instance makes it again: the next trigger runs, for a hook with max-concurrency and one without", async () => {
    const dir = await tempDir("webhook-queue-deleted-");
    const nats = await startNats();
    const nc = await connect({ servers: nats.url });
    let server: Server | undefined;
    try {
      const file = join(dir, "hooks.json");
      const out = join(dir, "jobs.log");
      const unlimited = { ...(shHook("unlimited", startEnd("0"), out) as object), "include-command-output-in-response": true };
      await writeFile(file, JSON.stringify([shHook("limited", startEnd("0"), out, { "max-concurrency": 2 }), unlimited]));
      server = await startServer(["-hooks", file, "-queue", nats.url, "-queue-ack-wait", "2s"], { env: { ...process.env, INSTANCE: "a" } });
      const s = server;
      const ended = async (id: string): Promise<boolean> => (await lines(out)).some((l) => l[0] === "end" && l[1] === id);
      for (const hook of ["limited", "unlimited"]) {
        assert.equal((await send(`${s.base}/hooks/${hook}`, { method: "POST", headers: { "X-Id": `${hook}-1` } })).status, 200);
        await eventually(() => ended(`${hook}-1`), 10_000);
      }
      const jsm = await nc.jetstreamManager();
      for (const hook of ["limited", "unlimited"]) await jsm.streams.delete(`WEBHOOK_${hook}`);
      // Until the instance has made the stream again a trigger is refused (503) or waits in the new stream.
      for (const hook of ["limited", "unlimited"]) {
        await eventually(async () => (await send(`${s.base}/hooks/${hook}`, { method: "POST", headers: { "X-Id": `${hook}-2` } })).status === 200, 20_000, 200);
        await eventually(() => ended(`${hook}-2`), 20_000);
      }
    } finally {
      await server?.stop();
      await nc.close();
      await nats.close();
      await removeDir(dir);
    }
  });
});
