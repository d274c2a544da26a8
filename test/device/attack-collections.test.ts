// Attacks on POST /collections/use (framefi-device --collections DIR, folders): floods of switches, requests without
// the login, names that try to lead out of DIR, bodies far too large. Each is answered within a bound, the device
// keeps answering, and nothing changes that should not: the collection the frame has, DIR, the saved choice.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { get, post, postFresh, rawRequest, basic } from "./fixtures/http.js";

const USER = ["attuser", "attpass"] as const;
const AUTH = { authorization: basic(...USER) };

describe("attacks on the collections' web API", () => {
  let dir: string;
  let outside: string;
  let state: string;
  let dev: RunningDevice;

  const current = async (): Promise<string | null> =>
    (JSON.parse((await get(dev.url, "/collections", { auth: USER })).text) as { current: string | null }).current;
  /** What must not change under a refused request. */
  const snapshot = async (): Promise<string> =>
    JSON.stringify([await current(), (await readdir(dir)).sort(), await readFile(join(state, "collection"), "utf8").catch(() => "")]);

  before(async () => {
    dir = await tempDir("framefi-attack-col-");
    outside = await tempDir("framefi-attack-outside-");
    state = await tempDir("framefi-attack-colstate-");
    for (const name of ["a", "b", "c"]) {
      await mkdir(join(dir, name));
      await writeFile(join(dir, name, `${name}.jpg`), randomBytes(100));
    }
    await writeFile(join(outside, "secret.jpg"), "not for the frame");
    // A link to a folder outside DIR and one to /: neither is a collection.
    await symlink(outside, join(dir, "escape"));
    await symlink("/", join(dir, "root"));
    dev = await startDevice({ card: join(dir, "a"), state, args: ["--collections", dir, "--web-user", USER[0], "--web-password", USER[1]] });
  });
  after(async () => {
    await dev?.stop();
    for (const d of [dir, outside, state]) await removeDir(d);
  });

  test("links out of DIR are not collections: not listed, and asking for them changes nothing", async () => {
    assert.deepEqual(JSON.parse((await get(dev.url, "/collections", { auth: USER })).text).collections, ["a", "b", "c"]);
    const was = await snapshot();
    for (const name of ["escape", "root"]) {
      const r = await post(dev.url, "/collections/use", { auth: USER, body: name });
      assert.equal(r.status, 404, r.text);
    }
    assert.equal(await snapshot(), was);
  });

  test("path traversal and malformed names: 400, nothing changes", async () => {
    const was = await snapshot();
    const names = [
      "..",
      "../a",
      "a/../b",
      "/",
      "/etc/passwd",
      "..%2fb",
      "%2e%2e",
      "b\0",
      "\0",
      "b/",
      "./b",
      "b\\..\\a",
      ".hidden",
      "-b",
      "b c",
      "ü",
      "x".repeat(33),
      "\u202eb",
      "b\r\nX-Injected: 1",
    ];
    for (const name of names) {
      const r = await post(dev.url, "/collections/use", { auth: USER, body: name });
      assert.equal(r.status, 400, `${JSON.stringify(name)} → ${r.status} ${r.text}`);
      assert.doesNotMatch(r.text, /passwd|Injected/, "the refused name is not echoed");
    }
    // The name only ever comes as the body: a query or a path beyond it is no way in.
    assert.equal((await post(dev.url, "/collections/use?name=b", { auth: USER })).status, 400);
    assert.equal((await post(dev.url, "/collections/use/../b", { auth: USER, body: "b" })).status, 404);
    assert.equal(await snapshot(), was);
  });

  test("without the login: 401 every time, however many, and nothing changes", async () => {
    const was = await snapshot();
    const answers = await Promise.all(Array.from({ length: 60 }, () => postFresh(dev.port, "/collections/use", "b")));
    // The login throttle may start answering 429 to an address that keeps failing: refused either way.
    for (const r of answers) assert.ok(r.status === 401 || r.status === 429, `${r.status} ${r.text}`);
    const wrong = await postFresh(dev.port, "/collections/use", "b", { authorization: basic(USER[0], "wrong") });
    assert.ok(wrong.status === 401 || wrong.status === 429);
    assert.equal(await snapshot(), was);
  });

  test("bodies far too large are cut at once (413) and change nothing; the device keeps answering", async () => {
    const was = await snapshot();
    // Announced: answered before any of it is read.
    const announced = await rawRequest(
      dev.port,
      `POST /collections/use HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${AUTH.authorization}\r\nContent-Length: 1000000000\r\n\r\nb`,
      10_000,
    );
    assert.equal(announced.status, 413, announced.raw);
    assert.match(announced.body, /too large for a collection name \(at most 64 bytes\)/);
    // Chunked, 20 MiB sent as fast as curl goes: the answer comes once 64 bytes have passed, the connection is cut.
    // Five times: the connection closed at once, with curl's bytes unread, reset it before it read the 413 about
    // every second time (curl: "Send failure: Broken pipe", and the code it printed was the 100 Continue's).
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const chunked = await run(
        "sh",
        [
          "-c",
          `head -c 20000000 /dev/zero | curl -sS --max-time 20 -u ${USER[0]}:${USER[1]} -H 'Transfer-Encoding: chunked' --data-binary @- -o /dev/null -w '%{http_code}' ${dev.url}/collections/use`,
        ],
        { timeoutMs: 30_000 },
      );
      assert.equal(chunked.stdout, "413", `try ${i + 1}: ${chunked.stderr}`);
      assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`);
    }
    assert.equal((await get(dev.url, "/", { auth: USER })).status, 200);
    assert.equal(await snapshot(), was);
  });

  test("a flood of switches: each answered, a few swaps for hundreds of asks, and the last ask wins", async () => {
    const names = ["a", "b", "c"];
    const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => postFresh(dev.port, "/collections/use", names[i % 3], AUTH)));
    for (const r of answers) {
      // 200: it went in; 409: a later one took its place before it did.
      assert.ok(r.status === 200 || r.status === 409, `${r.status} ${r.text}`);
      if (r.status === 409) assert.match(JSON.parse(r.text).message, /^A later request switched the frame to the collection [abc] before [abc] went in/);
    }
    const swaps = (dev.program.stdout() + dev.program.stderr()).match(/the frame now has the collection/g)?.length ?? 0;
    assert.ok(swaps <= 50, `${swaps} swaps for 150 asks`);
    // Afterwards one ask, and it holds.
    const last = await post(dev.url, "/collections/use", { auth: USER, body: "c" });
    assert.equal(last.status, 200, last.text);
    assert.equal(await current(), "c");
    assert.equal((await readFile(join(state, "collection"), "utf8")).trim(), "c");
    assert.deepEqual((await readdir(dir)).sort(), ["a", "b", "c", "escape", "root"]);
  });

  test("a collection folder swapped for a link out of DIR while switching: the card never leaves DIR", async () => {
    const flip = join(dir, "flip");
    await mkdir(flip);
    // From a known collection: the tests before leave another one.
    assert.equal((await post(dev.url, "/collections/use", { auth: USER, body: "a" })).status, 200);
    let flipping = true;
    // Another local user with write access to DIR turns "flip" into a link to a folder outside and back, over and over.
    const flipper = (async () => {
      while (flipping) {
        await rm(flip, { recursive: true, force: true });
        await symlink(outside, flip);
        await new Promise((r) => setImmediate(r));
        await rm(flip, { force: true });
        await mkdir(flip);
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      for (let i = 0; i < 150; i++) {
        const r = await post(dev.url, "/collections/use", { auth: USER, body: i % 2 === 0 ? "flip" : "a" });
        assert.ok([200, 404].includes(r.status), `${r.status} ${r.text}`);
        const now = await current();
        assert.ok(now === "a" || now === "flip", `the card is a collection of DIR, not ${String(now)} (after ${i + 1} switches)`);
      }
    } finally {
      flipping = false;
      await flipper;
    }
    assert.equal((await post(dev.url, "/collections/use", { auth: USER, body: "a" })).status, 200);
    await rm(flip, { recursive: true, force: true });
  });
});
