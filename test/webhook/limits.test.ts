// max-concurrency / max-queue (FIFO queue, 429 with Retry-After beyond
// it, every accepted request run exactly once) and command-timeout (SIGTERM to the command's
// process group, SIGKILL 5 s later; 504 for captured output, a last line for a streamed answer).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, eventually, freePort, processAlive, removeDir, run, tempDir } from "../helpers.js";
import { send } from "./fixtures/harness.js";
import { startWebhook, type Webhook } from "./fixtures/flags.js";

let dir = "";
before(async () => {
  dir = await tempDir("webhook-limits-");
});
after(() => removeDir(dir));

/** A hook running `/bin/sh -c script sh <args…>`; args are request values. */
const shHook = (id: string, script: string, args: unknown[], extra: Record<string, unknown> = {}): unknown => ({
  id,
  "execute-command": "/bin/sh",
  "include-command-output-in-response": true,
  "pass-arguments-to-command": [{ source: "string", name: "-c" }, { source: "string", name: script }, { source: "string", name: "sh" }, ...args],
  ...extra,
});

async function serve(name: string, hooks: unknown[], flags: string[] = []): Promise<{ w: Webhook; base: string }> {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(hooks, null, 2));
  const port = await freePort();
  const w = await startWebhook(["-verbose", "-ip", "127.0.0.1", "-port", String(port), "-hooks", file, ...flags]);
  return { w, base: `http://127.0.0.1:${port}/hooks` };
}

async function pidIn(file: string): Promise<number> {
  const text = await eventually(async () => (existsSync(file) ? (await readFile(file, "utf8")).trim() : ""), 10_000);
  return Number(text);
}

describe("max-concurrency and max-queue", () => {
  test("200 concurrent triggers with max-concurrency 2: never more than 2 run at once, each runs exactly once", async () => {
    const record = join(dir, "record.log");
    // Each command appends its start and end, in nanoseconds, to one file (small O_APPEND writes are atomic).
    const script = 'echo "start $1 $(date +%s%N)" >> "$2"; sleep 0.02; echo "end $1 $(date +%s%N)" >> "$2"; echo "ran $1"';
    const { w, base } = await serve("two", [
      shHook(
        "two",
        script,
        [
          { source: "url", name: "n" },
          { source: "string", name: record },
        ],
        { "max-concurrency": 2, "max-queue": 200 },
      ),
    ]);
    try {
      const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => send(`${base}/two?n=${i}`, { timeoutMs: 60_000 })));
      replies.forEach((r, i) => {
        assert.equal(r.status, 200, r.text);
        assert.equal(r.text, `ran ${i}\n`);
      });
      const events = (await readFile(record, "utf8"))
        .trim()
        .split("\n")
        .map((line) => {
          const [kind, n, ns] = line.split(" ");
          return { kind: kind!, n: Number(n), t: BigInt(ns!) };
        });
      for (const kind of ["start", "end"]) {
        const ns = events
          .filter((e) => e.kind === kind)
          .map((e) => e.n)
          .sort((a, b) => a - b);
        assert.deepEqual(
          ns,
          Array.from({ length: 200 }, (_, i) => i),
          `every command recorded its ${kind} exactly once`,
        );
      }
      // Recorded intervals lie inside the real ones, and a slot is freed only after a command's exit.
      events.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.kind === "end" ? -1 : 1));
      let now = 0;
      let most = 0;
      for (const e of events) {
        now += e.kind === "start" ? 1 : -1;
        most = Math.max(most, now);
      }
      assert.ok(most <= 2, `at most 2 commands ran at once, saw ${most}`);
      assert.ok(most >= 1);
    } finally {
      await w.stop();
    }
  });

  test("beyond max-queue the answer is 429 with Retry-After; the accepted requests all run, in order", async () => {
    const gate = join(dir, "gate");
    const ran = join(dir, "queue-ran.log");
    const script = 'echo "$1" >> "$2"; while [ ! -e "$3" ]; do sleep 0.05; done; echo "done $1"';
    const { w, base } = await serve("busy", [
      shHook(
        "busy",
        script,
        [
          { source: "url", name: "n" },
          { source: "string", name: ran },
          { source: "string", name: gate },
        ],
        {
          "max-concurrency": 1,
          "max-queue": 1,
        },
      ),
    ]);
    try {
      // Settled at once so an early failure reports itself, not these requests' hang-up at stop.
      const first = send(`${base}/busy?n=1`).catch((e: Error) => e);
      await eventually(() => existsSync(ran), 10_000);
      const second = send(`${base}/busy?n=2`).catch((e: Error) => e);
      await w.proc.waitFor(/busy runs 1 commands already \(max-concurrency\): this one waits for its turn/);
      const third = await send(`${base}/busy?n=3`);
      assert.equal(third.status, 429);
      assert.equal(third.headers["retry-after"], "1");
      assert.match(third.text, /^Too many requests for this hook: .*max-concurrency.*\(max-queue\) is full/);
      await w.proc.waitFor(/busy got matched, but 1 commands are running \(max-concurrency\) and 1 are waiting \(max-queue\) - answering 429/, 10_000);
      await writeFile(gate, "");
      const [a, b] = await Promise.all([first, second]);
      assert.ok(!(a instanceof Error) && !(b instanceof Error), String(a instanceof Error ? a : b));
      assert.deepEqual([a.status, a.text, b.status, b.text], [200, "done 1\n", 200, "done 2\n"]);
      assert.equal(await readFile(ran, "utf8"), "1\n2\n", "the rejected request never ran; the queued one ran after the first");
      const later = await send(`${base}/busy?n=4`);
      assert.equal(later.status, 200, "a free slot takes requests again");
    } finally {
      await w.stop();
    }
  });

  test("graceful shutdown: the running command finishes, a queued one never starts, the server exits 0", async () => {
    const ran = join(dir, "shutdown-ran.log");
    const script = 'echo "$1" >> "$2"; sleep 1; echo "done $1"';
    const { w, base } = await serve("drain", [
      shHook(
        "drain",
        script,
        [
          { source: "url", name: "n" },
          { source: "string", name: ran },
        ],
        { "max-concurrency": 1, "max-queue": 5 },
      ),
    ]);
    const first = send(`${base}/drain?n=1`).catch((e: Error) => e);
    await eventually(() => existsSync(ran), 10_000);
    const second = send(`${base}/drain?n=2`).catch((e: Error) => e);
    await w.proc.waitFor(/drain runs 1 commands already \(max-concurrency\): this one waits for its turn/);
    w.proc.child.kill("SIGTERM");
    assert.equal(await w.proc.exited, 0);
    const a = await first;
    assert.ok(!(a instanceof Error), String(a));
    assert.equal(a.status, 200);
    assert.equal(a.text, "done 1\n");
    const b = await second;
    assert.ok(b instanceof Error || b.status === 500, `the queued request must not succeed: ${b instanceof Error ? b.message : b.status}`);
    assert.equal(await readFile(ran, "utf8"), "1\n", "the queued command never started");
    assert.match(w.logs(), /dropped 1 command\(s\) still waiting for their turn/);
  });

  test("-max-concurrency and -max-queue are the defaults of hooks without the fields", async () => {
    const gate = join(dir, "gate-global");
    const started = join(dir, "global-started");
    const script = 'touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; echo ok';
    const { w, base } = await serve(
      "global",
      [
        shHook("g", script, [
          { source: "string", name: started },
          { source: "string", name: gate },
        ]),
      ],
      ["-max-concurrency", "1", "-max-queue", "0"],
    );
    try {
      const first = send(`${base}/g`).catch((e: Error) => e);
      await eventually(() => existsSync(started), 10_000);
      const second = await send(`${base}/g`);
      assert.equal(second.status, 429);
      await writeFile(gate, "");
      const a = await first;
      assert.ok(!(a instanceof Error), String(a));
      assert.equal(a.status, 200);
    } finally {
      await w.stop();
    }
  });

  test("invalid values are refused with a clear error", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ "max-concurrency": -1 }, /"max-concurrency" must be a whole number, 0 or more/],
      [{ "max-queue": "10" }, /"max-queue" must be a whole number, 0 or more/],
      [{ "command-timeout": "soon" }, /"command-timeout" must be a duration such as "500ms", "30s" or "2m"/],
      [{ "command-timeout": 5 }, /"command-timeout" must be a duration/],
    ];
    for (const [extra, message] of cases) {
      const file = join(dir, "invalid.json");
      await writeFile(file, JSON.stringify([{ id: "x", "execute-command": "/bin/true", ...extra }]));
      const r = await run(bin("webhook"), ["-hooks", file, "-port", String(await freePort())]);
      assert.equal(r.code, 1);
      assert.match(r.stdout + r.stderr, message);
    }
    for (const [flag, value] of [
      ["-max-concurrency", "-2"],
      ["-max-queue", "x"],
      ["-command-timeout", "10"],
    ] as const) {
      const r = await run(bin("webhook"), [flag, value]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, new RegExp(`invalid value "${value}" for flag ${flag}`));
    }
  });
});

test("-help lists the three flags in Go's order with their defaults", async () => {
  const r = await run(bin("webhook"), ["-help"]);
  assert.equal(r.code, 0);
  assert.match(
    r.stderr,
    /\n {2}-cipher-suites string\n.*\n {2}-command-timeout duration\n {4}\tdefault for the hook field command-timeout: .*\n(?: {2}-console.*\n.*\n)* {2}-debug\n/,
  );
  assert.match(
    r.stderr,
    /\n {2}-max-body int\n.*\n {2}-max-body-idle duration\n.*\n {2}-max-concurrency int\n.*\n {2}-max-connections int\n {4}\t.* \(default 2048\)\n {2}-max-connections-per-ip int\n {4}\t.* \(default 256\)\n {2}-max-multipart-mem int\n.*\n {2}-max-output int\n.*\n {2}-max-queue int\n {4}\t.* \(default 100\)\n {2}-max-request-memory int\n/,
  );
});

describe("command-timeout", () => {
  // The command starts a grandchild that sleeps 60 s, writes both pids, and waits.
  const sleeper = (trap: string): string => `${trap} sleep 60 & echo $! > "$1/grandchild"; echo $$ > "$1/child"; wait`;

  test("1s: the client gets 504 and the command and its grandchild are gone within 7 s", async () => {
    const pids = join(dir, "t1");
    await run("/bin/mkdir", [pids]);
    const { w, base } = await serve("timeout", [shHook("slow", sleeper(""), [{ source: "string", name: pids }], { "command-timeout": "1s" })]);
    try {
      const began = Date.now();
      const r = await send(`${base}/slow`);
      assert.equal(r.status, 504);
      assert.equal(r.text, "The hook's command did not finish within its command-timeout of 1s and was stopped.");
      const child = await pidIn(join(pids, "child"));
      const grandchild = await pidIn(join(pids, "grandchild"));
      await eventually(() => !processAlive(child) && !processAlive(grandchild), Math.max(1, 7_000 - (Date.now() - began)), 50);
      await w.proc.waitFor(/command-timeout of 1s expired: sending SIGTERM to the process group of \/bin\/sh/, 10_000);
    } finally {
      await w.stop();
    }
  });

  test("a process group that ignores SIGTERM gets SIGKILL 5 s later", async () => {
    const pids = join(dir, "t2");
    await run("/bin/mkdir", [pids]);
    const { w, base } = await serve(
      "stubborn",
      [shHook("stubborn", sleeper("trap '' TERM;"), [{ source: "string", name: pids }])],
      ["-command-timeout", "500ms"],
    );
    try {
      const r = await send(`${base}/stubborn`);
      assert.equal(r.status, 504);
      assert.match(r.text, /command-timeout of 500ms/);
      const child = await pidIn(join(pids, "child"));
      const grandchild = await pidIn(join(pids, "grandchild"));
      await eventually(() => !processAlive(child) && !processAlive(grandchild), 5_000, 50);
      await w.proc.waitFor(/the process group of \/bin\/sh was still running 5s after SIGTERM: sent SIGKILL/, 10_000);
    } finally {
      await w.stop();
    }
  });

  test("a streamed answer ends with a line saying the command timed out", async () => {
    const pids = join(dir, "t3");
    await run("/bin/mkdir", [pids]);
    const script = `echo working; ${sleeper("")}`;
    const { w, base } = await serve("stream", [
      shHook("stream", script, [{ source: "string", name: pids }], { "stream-command-output": true, "command-timeout": "1s" }),
    ]);
    try {
      const r = await send(`${base}/stream`);
      assert.equal(r.status, 200);
      assert.equal(r.text, "working\nThe hook's command did not finish within its command-timeout of 1s and was stopped.\n");
      assert.ok(!processAlive(await pidIn(join(pids, "child"))));
    } finally {
      await w.stop();
    }
  });

  test("a background hook's command is stopped the same way, and the log says so", async () => {
    const pids = join(dir, "t4");
    await run("/bin/mkdir", [pids]);
    const { w, base } = await serve("background", [
      { ...(shHook("bg", sleeper(""), [{ source: "string", name: pids }]) as object), "include-command-output-in-response": false, "command-timeout": "1s" },
    ]);
    try {
      const r = await send(`${base}/bg`);
      assert.equal(r.status, 200);
      const child = await pidIn(join(pids, "child"));
      const grandchild = await pidIn(join(pids, "grandchild"));
      await eventually(() => !processAlive(child) && !processAlive(grandchild), 7_000, 50);
      await w.proc.waitFor(/command-timeout of 1s expired: sending SIGTERM/);
    } finally {
      await w.stop();
    }
  });
});
