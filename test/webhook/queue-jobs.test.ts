// Jobs of the shared queue (-queue -jobs) with a real nats-server and three real bin/webhook
// instances: one record per job in JetStream key-value storage, the same at /jobs on every
// instance; attempt 2 after the instance running a job is killed; durable retries with the exact
// attempt cap; async-response, status-from-exit-code, exclude-stderr-from-response, rate-limit
// and debounce over all instances; job ids unique over all instances; and a captured request
// whose job's stored record never reaches it live (a subject the NATS account may not subscribe to).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, removeDir, tempDir } from "../helpers.js";
import { send, startServer, type Reply, type Server } from "./fixtures/harness.js";
import { startNats, type Nats } from "./fixtures/nats.js";

const TOKEN = "queue-jobs-token-7f3a";
const auth = { Authorization: `Bearer ${TOKEN}` };

interface JobJson {
  id: string;
  hook: string;
  state: string;
  attempts: { number: number; ended?: string; exitCode?: number | null; error?: string }[];
  exitCode?: number | null;
  error?: string;
  reason?: string;
  output?: string;
  stderr?: string;
}

/** A hook running `/bin/sh -c script sh ARGS…`. */
function sh(id: string, script: string, args: unknown[], extra: Record<string, unknown> = {}): unknown {
  return {
    id,
    "execute-command": "/bin/sh",
    "pass-arguments-to-command": [{ source: "string", name: "-c" }, { source: "string", name: script }, { source: "string", name: "sh" }, ...args],
    ...extra,
  };
}

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

/** The job as `s` serves it (the token is sent to every instance; those without -jobs-token ignore it). */
async function job(s: Server, id: string): Promise<JobJson | undefined> {
  const r = await send(`${s.base}/jobs/${encodeURIComponent(id)}`, { method: "GET", headers: auth });
  if (r.status === 404) return undefined;
  assert.equal(r.status, 200, `GET /jobs/${id}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as JobJson;
}

/** The job as `s` shows it once `done` holds for it. */
async function jobWhen(s: Server, id: string, done: (j: JobJson) => boolean, timeoutMs = 20_000): Promise<JobJson> {
  return eventually(async () => {
    const j = await job(s, id);
    return j && done(j) ? j : undefined;
  }, timeoutMs);
}

const FINAL = ["succeeded", "failed", "timed-out", "dropped"];
const final = (j: JobJson): boolean => FINAL.includes(j.state);

describe("-queue -jobs: three instances share the job records", () => {
  let dir = "";
  let nats: Nats;
  const names = ["a", "b", "c"];
  const servers: Server[] = [];
  const log = (name: string): string => join(dir, `${name}.log`);
  const gate = (): string => join(dir, "gate");
  const live = (): Server[] => servers.filter((s) => s.proc.child.exitCode === null && s.proc.child.signalCode === null);
  const byInstance = (name: string): Server => servers[names.indexOf(name)]!;

  before(async () => {
    dir = await tempDir("webhook-queue-jobs-");
    nats = await startNats();
    const id = { source: "header", name: "X-Id" };
    const hooks = [
      sh("captured", 'echo "out from $INSTANCE"; echo err >&2; exit "$1"', [{ source: "url", name: "code" }], {
        "include-command-output-in-response": true,
        "include-command-output-in-response-on-error": true,
        "status-from-exit-code": true,
        "exclude-stderr-from-response": true,
      }),
      sh("async", 'echo "async from $INSTANCE"', [], { "async-response": true, "response-message": "started\n" }),
      sh("plain", "true", []),
      sh("rated", 'echo "run $1 $INSTANCE" >> "$2"', [id, { source: "string", name: log("rated") }], { "rate-limit": { requests: 3, period: "1h" } }),
      sh("debounced", 'echo "run $1 $INSTANCE" >> "$2"', [id, { source: "string", name: log("debounced") }], { debounce: "5s" }),
      // Fails with exit 75 on its first X-Fail runs (counted in a file per X-Id), then succeeds.
      sh(
        "flaky",
        'n=$(( $(cat "$2.$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$2.$1"; echo "run $1 $n $INSTANCE" >> "$2"; [ $n -gt "$3" ] || exit 75',
        [id, { source: "string", name: log("flaky") }, { source: "header", name: "X-Fail" }],
        {
          retry: { attempts: 3, delay: "4s", "exit-codes": [75] },
        },
      ),
      sh(
        "retried",
        'n=$(( $(cat "$2.$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$2.$1"; echo "attempt $n on $INSTANCE"; [ $n -gt 1 ] || exit 75',
        [id, { source: "string", name: log("retried") }],
        {
          "include-command-output-in-response": true,
          retry: { attempts: 2, delay: "10ms" },
        },
      ),
      sh("capped", 'echo "run $1 $INSTANCE" >> "$2"; exit "$3"', [id, { source: "string", name: log("capped") }, { source: "header", name: "X-Exit" }], {
        retry: { attempts: 2, delay: "10ms", "exit-codes": [75] },
      }),
      sh(
        "held",
        'echo "start $1 $INSTANCE" >> "$2"; while [ ! -e "$3" ]; do sleep 0.05; done; echo "end $1 $INSTANCE" >> "$2"',
        [id, { source: "string", name: log("held") }, { source: "string", name: gate() }],
        {
          "max-concurrency": 1,
        },
      ),
    ];
    const file = join(dir, "hooks.json");
    await writeFile(file, JSON.stringify(hooks));
    for (const name of names) {
      servers.push(
        await startServer(["-hooks", file, "-queue", nats.url, "-queue-ack-wait", "2s", "-jobs", "-jobs-token", TOKEN, "-x-request-id", "-verbose"], {
          env: { ...process.env, INSTANCE: name },
        }),
      );
    }
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await nats.close();
    await removeDir(dir);
  });

  test("a job's record answers the same on every instance, with the same auth; the list names it", async () => {
    const r = await send(`${servers[0]!.base}/hooks/captured?code=0`, { method: "POST" });
    assert.equal(r.status, 200);
    assert.match(r.text, /^out from [abc]\n$/);
    const id = String(r.headers["x-job-id"]);
    assert.match(id, /^[0-9a-f]{12}$/);
    const seen = await Promise.all(servers.map((s) => jobWhen(s, id, final)));
    for (const j of seen) assert.deepEqual(j, seen[0]);
    const j = seen[0]!;
    assert.equal(j.state, "succeeded");
    assert.equal(j.hook, "captured");
    assert.equal(j.attempts.length, 1);
    assert.equal(j.exitCode, 0);
    assert.equal(j.output, r.text);
    assert.equal(j.stderr, "err\n");
    const denied = await send(`${servers[1]!.base}/jobs/${id}`, { method: "GET" });
    assert.equal(denied.status, 401);
    assert.doesNotMatch(denied.text, /out from/);
    const list = await send(`${servers[2]!.base}/jobs?hook=captured`, { method: "GET", headers: auth });
    assert.equal(list.status, 200);
    const listed = (JSON.parse(list.text) as { jobs: JobJson[] }).jobs;
    assert.ok(
      listed.some((x) => x.id === id && x.state === "succeeded" && x.output === undefined),
      list.text,
    );
    assert.ok(listed.every((x) => x.hook === "captured"));
    const missing = await send(`${servers[1]!.base}/jobs/000000000000`, { method: "GET", headers: auth });
    assert.equal(missing.status, 404);
  });

  test("status-from-exit-code and exclude-stderr-from-response: the receiving instance answers with the status the command chose, stdout only", async () => {
    const r = await send(`${servers[1]!.base}/hooks/captured?code=109`, { method: "POST" });
    assert.equal(r.status, 409);
    assert.match(r.text, /^out from [abc]\n$/);
    const j = await jobWhen(servers[0]!, String(r.headers["x-job-id"]), final);
    assert.equal(j.state, "failed");
    assert.equal(j.exitCode, 109);
  });

  test("async-response: 202 with the job's Location, which answers on another instance", async () => {
    const r = await send(`${servers[0]!.base}/hooks/async`, { method: "POST" });
    assert.equal(r.status, 202);
    assert.equal(r.text, "started\n");
    const id = String(r.headers["x-job-id"]);
    assert.equal(r.headers["location"], `/jobs/${id}`);
    const j = await jobWhen(servers[2]!, id, final);
    assert.equal(j.state, "succeeded");
    assert.match(j.output ?? "", /^async from [abc]\n$/);
  });

  test("job ids are unique over all instances; a reused X-Request-Id gets a suffix on any instance and hook, as in one process", async () => {
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => send(`${servers[i % 3]!.base}/hooks/plain`, { method: "POST" })));
    const ids = replies.map((r) => String(r.headers["x-job-id"]));
    assert.ok(
      ids.every((x) => /^[0-9a-f]{12}$/.test(x)),
      ids.join(" "),
    );
    assert.equal(new Set(ids).size, 60);
    const first = await send(`${servers[0]!.base}/hooks/plain`, { method: "POST", headers: { "X-Request-Id": "deploy-1" } });
    const second = await send(`${servers[1]!.base}/hooks/plain`, { method: "POST", headers: { "X-Request-Id": "deploy-1" } });
    const otherHook = await send(`${servers[2]!.base}/hooks/async`, { method: "POST", headers: { "X-Request-Id": "deploy-1" } });
    assert.equal(first.headers["x-job-id"], "deploy-1");
    assert.equal(second.headers["x-job-id"], "deploy-1-2");
    assert.equal(otherHook.headers["x-job-id"], "deploy-1-3", "ids are unique over all hooks too");
    assert.match(servers[1]!.logs(), /\[deploy-1\] plain hook triggered successfully: queued as job deploy-1-2/);
    assert.equal((await jobWhen(servers[2]!, "deploy-1-2", final)).state, "succeeded");
  });

  test("rate-limit holds over all instances: 9 triggers at once on three instances, 3 run, 6 get 429", async () => {
    const replies = await Promise.all(
      Array.from({ length: 9 }, (_, i) => send(`${servers[i % 3]!.base}/hooks/rated`, { method: "POST", headers: { "X-Id": `r${i}` } })),
    );
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 429);
    const said = () =>
      `${replies.map((r) => r.status).join(",")}\n${servers
        .map((s) =>
          s
            .logs()
            .split("\n")
            .filter((l) => l.includes("rated"))
            .join("\n"),
        )
        .join("\n")}`;
    assert.equal(ok.length, 3, said());
    assert.equal(refused.length, 6, said());
    for (const r of refused) {
      assert.ok(Number(r.headers["retry-after"]) > 3000, `Retry-After ${String(r.headers["retry-after"])}`);
      assert.equal(r.headers["x-job-id"], undefined, "a refused trigger has no job");
    }
    await Promise.all(ok.map((r) => jobWhen(servers[0]!, String(r.headers["x-job-id"]), final)));
    assert.equal((await lines(log("rated"))).length, 3);
  });

  test("debounce over all instances: a burst of five triggers on three instances runs the last one once; the others are dropped as superseded", async () => {
    const replies: Reply[] = [];
    for (let i = 0; i < 5; i++) replies.push(await send(`${servers[i % 3]!.base}/hooks/debounced`, { method: "POST", headers: { "X-Id": `d${i}` } }));
    assert.ok(replies.every((r) => r.status === 200));
    const ids = replies.map((r) => String(r.headers["x-job-id"]));
    const last = await jobWhen(servers[0]!, ids[4]!, final, 30_000);
    assert.equal(last.state, "succeeded");
    for (const id of ids.slice(0, 4)) {
      const j = await jobWhen(servers[1]!, id, final, 30_000);
      assert.equal(j.state, "dropped");
      assert.match(j.reason ?? "", /^debounced: superseded by [0-9a-f]{12}$/);
      assert.equal(j.attempts.length, 0);
    }
    const ran = await lines(log("debounced"));
    assert.deepEqual(
      ran.map((l) => l[1]),
      ["d4"],
    );
  });

  test("retry: the attempts cap and the exit codes are the hook's, every attempt in the record", async () => {
    const retried = await send(`${servers[0]!.base}/hooks/capped`, { method: "POST", headers: { "X-Id": "c75", "X-Exit": "75" } });
    const other = await send(`${servers[1]!.base}/hooks/capped`, { method: "POST", headers: { "X-Id": "c3", "X-Exit": "3" } });
    const j75 = await jobWhen(servers[2]!, String(retried.headers["x-job-id"]), final);
    const j3 = await jobWhen(servers[2]!, String(other.headers["x-job-id"]), final);
    assert.equal(j75.state, "failed");
    assert.deepEqual(
      j75.attempts.map((a) => [a.number, a.exitCode]),
      [
        [1, 75],
        [2, 75],
      ],
    );
    assert.equal(j3.state, "failed");
    assert.deepEqual(
      j3.attempts.map((a) => [a.number, a.exitCode]),
      [[1, 3]],
      "exit 3 is not in exit-codes: no retry",
    );
    const runs = await lines(log("capped"));
    assert.equal(runs.filter((l) => l[1] === "c75").length, 2);
    assert.equal(runs.filter((l) => l[1] === "c3").length, 1);
  });

  test("retry of a captured hook: the answer is the last attempt's output, wherever each attempt ran", async () => {
    const r = await send(`${servers[2]!.base}/hooks/retried`, { method: "POST", headers: { "X-Id": "q1" } });
    assert.equal(r.status, 200);
    assert.match(r.text, /^attempt 2 on [abc]\n$/);
    const j = await jobWhen(servers[0]!, String(r.headers["x-job-id"]), final);
    assert.deepEqual(
      j.attempts.map((a) => [a.number, a.exitCode]),
      [
        [1, 75],
        [2, 0],
      ],
    );
  });

  test("a retry survives the instance that ran the failed attempt: killed while the backoff (2–4 s) runs, the next attempt runs elsewhere", async () => {
    const r = await send(`${servers[0]!.base}/hooks/flaky`, { method: "POST", headers: { "X-Id": "f1", "X-Fail": "1" } });
    assert.equal(r.status, 200);
    const id = String(r.headers["x-job-id"]);
    await jobWhen(servers[0]!, id, (j) => j.attempts[0]?.ended !== undefined);
    const first = (await lines(log("flaky"))).find((l) => l[1] === "f1" && l[2] === "1")!;
    const victim = byInstance(first[3]!);
    victim.proc.child.kill("SIGKILL");
    await victim.proc.exited;
    const j = await jobWhen(live()[0]!, id, final, 30_000);
    assert.equal(j.state, "succeeded");
    assert.deepEqual(
      j.attempts.map((a) => [a.number, a.exitCode]),
      [
        [1, 75],
        [2, 0],
      ],
    );
    const runs = (await lines(log("flaky"))).filter((l) => l[1] === "f1");
    assert.deepEqual(
      runs.map((l) => l[2]),
      ["1", "2"],
    );
    for (const later of runs.slice(1)) assert.notEqual(later[3], first[3], "later attempts ran on a live instance");
  });

  test("kill -9 the instance running a job: another instance runs it, and the record shows attempt 2", async () => {
    const r = await send(`${live()[0]!.base}/hooks/held`, { method: "POST", headers: { "X-Id": "h1" } });
    assert.equal(r.status, 200);
    const id = String(r.headers["x-job-id"]);
    const first = (await eventually(async () => (await lines(log("held"))).find((l) => l[0] === "start" && l[1] === "h1"), 10_000))!;
    const victim = byInstance(first[2]!);
    victim.proc.child.kill("SIGKILL");
    await victim.proc.exited;
    await eventually(async () => (await lines(log("held"))).some((l) => l[0] === "start" && l[1] === "h1" && l[2] !== first[2]), 20_000);
    await writeFile(gate(), "");
    const survivor = live()[0]!;
    const j = await jobWhen(survivor, id, final);
    assert.equal(j.state, "succeeded");
    assert.equal(j.attempts.length, 2);
    assert.equal(j.attempts[0]!.error, "the instance running it stopped before it ended");
    assert.equal(j.attempts[1]!.exitCode, 0);
    assert.match(
      survivor.logs() +
        live()
          .map((s) => s.logs())
          .join(""),
      /attempt 1 did not finish \(the instance running it stopped\); attempt 2 runs here/,
    );
  });
});

describe("-queue -jobs: retention of the shared records", () => {
  test("-jobs-keep: the oldest records go first; -jobs-max-age: a record unchanged for longer is forgotten, on every instance", async () => {
    const dir = await tempDir("webhook-queue-keep-");
    const nats = await startNats();
    const servers: Server[] = [];
    try {
      const file = join(dir, "hooks.json");
      await writeFile(file, JSON.stringify([sh("plain", "true", [])]));
      for (let i = 0; i < 2; i++) servers.push(await startServer(["-hooks", file, "-queue", nats.url, "-jobs", "-jobs-keep", "3", "-jobs-max-age", "3s"]));
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await send(`${servers[i % 2]!.base}/hooks/plain`, { method: "POST" });
        ids.push(String(r.headers["x-job-id"]));
        await jobWhen(servers[0]!, ids[i]!, final);
      }
      const listed = async (s: Server): Promise<string[]> =>
        (JSON.parse((await send(`${s.base}/jobs?hook=plain`, { method: "GET" })).text) as { jobs: JobJson[] }).jobs.map((j) => j.id);
      for (const s of servers) assert.deepEqual(await listed(s), ids.slice(2).reverse());
      assert.equal((await send(`${servers[1]!.base}/jobs/${ids[0]}`, { method: "GET" })).status, 404);
      await eventually(async () => (await listed(servers[1]!)).length === 0, 15_000, 200);
      assert.equal((await send(`${servers[0]!.base}/jobs/${ids[4]}`, { method: "GET" })).status, 404);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await nats.close();
      await removeDir(dir);
    }
  });
});

describe("-queue -jobs: a record larger than the NATS server's max_payload", () => {
  test("is stored with the tail of its output that fits; the captured answer still has all of it", async () => {
    const dir = await tempDir("webhook-queue-big-");
    const nats = await startNats();
    const servers: Server[] = [];
    try {
      const file = join(dir, "hooks.json");
      await writeFile(
        file,
        JSON.stringify([sh("big", "head -c 1500000 /dev/zero | tr '\\0' a; echo end", [], { "include-command-output-in-response": true })]),
      );
      for (let i = 0; i < 2; i++) servers.push(await startServer(["-hooks", file, "-queue", nats.url, "-jobs", "-jobs-output", "4000000", "-max-output", "0"]));
      const r = await send(`${servers[0]!.base}/hooks/big`, { method: "POST" });
      assert.equal(r.status, 200);
      assert.equal(r.body.length, 1_500_004);
      const j = await jobWhen(servers[1]!, String(r.headers["x-job-id"]), final);
      assert.equal(j.state, "succeeded");
      assert.equal((j as JobJson & { outputCut?: number }).outputCut, 1_500_004);
      assert.ok((j.output ?? "").length > 100_000 && (j.output ?? "").length < 1_048_576, `kept ${(j.output ?? "").length} bytes`);
      assert.ok((j.output ?? "").endsWith("aaaend\n"), "the tail is kept");
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await nats.close();
      await removeDir(dir);
    }
  });
});

describe("-queue: a job's end that never reaches the receiving instance live", () => {
  test("the instances may not subscribe to the job records' subjects: captured and streamed requests are still answered, from the record", async () => {
    const dir = await tempDir("webhook-queue-lost-");
    // The NATS account of the instances may not receive stored records as they are published.
    const nats = await startNats({
      config: `authorization { users = [ { user: hooks, password: "pw-4b1c", permissions: { publish: ">", subscribe: { allow: ">", deny: ["$KV.webhook_jobs.>"] } } } ] }\n`,
    });
    const servers: Server[] = [];
    try {
      const file = join(dir, "hooks.json");
      await writeFile(
        file,
        JSON.stringify([
          sh("captured", 'echo "out from $INSTANCE"; exit "$1"', [{ source: "url", name: "code" }], {
            "include-command-output-in-response": true,
            "include-command-output-in-response-on-error": true,
            "status-from-exit-code": true,
          }),
          sh("streamed", 'echo one; echo "two from $INSTANCE"', [], { "stream-command-output": true }),
        ]),
      );
      const url = `nats://hooks:pw-4b1c@127.0.0.1:${nats.port}`;
      for (const name of ["a", "b"])
        servers.push(await startServer(["-hooks", file, "-queue", url, "-queue-ack-wait", "2s", "-verbose"], { env: { ...process.env, INSTANCE: name } }));
      const r = await send(`${servers[0]!.base}/hooks/captured?code=104`, { method: "POST" });
      assert.equal(r.status, 404);
      assert.match(r.text, /^out from [ab]\n$/);
      const ok = await send(`${servers[1]!.base}/hooks/captured?code=0`, { method: "POST" });
      assert.equal(ok.status, 200);
      assert.match(ok.text, /^out from [ab]\n$/);
      const streamed = await send(`${servers[0]!.base}/hooks/streamed`, { method: "POST" });
      assert.equal(streamed.status, 200);
      assert.match(
        streamed.text,
        /^one\ntwo from [ab]\n\[webhook: the job's end was read back from its record: output sent while this instance missed messages from NATS may be missing above\]\n$/,
      );
      for (const [s, job] of [
        [servers[0]!, r],
        [servers[1]!, ok],
        [servers[0]!, streamed],
      ] as const) {
        assert.match(s.logs(), new RegExp(`\\[${String(job.headers["x-job-id"])}\\] \\w+: the job's end was read back from its record`));
      }
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await nats.close();
      await removeDir(dir);
    }
  });
});
