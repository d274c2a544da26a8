// The device web API under attack: each test performs the attack against
// the real bin/framefi-device on loopback and checks what a user would see — an answer, a device that still
// answers, memory that stays bounded (VmRSS from /proc).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { chmod, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { connect, createServer as createNetServer, type Socket } from "node:net";
import { join } from "node:path";
import { bin, eventually, freePort, removeDir, run, start, startDevice, tempDir } from "../helpers.js";
import { basic, call, openUpload, sleep } from "./fixtures/http.js";
import { tree } from "../fixtures/files.js";
import { multipart } from "../fixtures/http.js";
import { api } from "./fixtures/device.js";
import { MODE_FTP } from "./fixtures/contract.js";
import { ftpConnection } from "../ftp/fixtures/raw.js";
import { rssMiB } from "../fixtures/memory.js";

const MiB = 1024 * 1024;

/** A raw connection that sends `head` and records the first bytes it gets back, then reads no more. */
function lurker(port: number, head: string, opts: { from?: string } = {}): { socket: Socket; first: Promise<string> } {
  const socket = connect({ port, host: "127.0.0.1", localAddress: opts.from });
  socket.on("error", () => undefined);
  const first = new Promise<string>((resolve) => {
    socket.once("data", (d) => {
      socket.pause();
      resolve(d.toString("latin1"));
    });
    socket.once("close", () => resolve(""));
  });
  socket.write(head);
  return { socket, first };
}

const closed = (s: Socket): Promise<void> => (s.destroyed ? Promise.resolve() : new Promise((r) => s.once("close", () => r())));

async function toFtpMode(dev: { url: string }): Promise<void> {
  await api(dev as never).setMode("ftp");
  await eventually(async () => (await api(dev as never).status()).mode === MODE_FTP, 5_000);
}

describe("server-sent events to clients that never read", () => {
  test("2 000 non-reading /panel/events sockets and 400 changes: streams are capped, memory stays under 200 MB", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const pid = dev.program.child.pid!;
    const before = await rssMiB(pid);
    const lurkers = Array.from({ length: 2000 }, () => lurker(dev.port, "GET /panel/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    t.after(() => {
      for (const l of lurkers) l.socket.destroy();
    });
    const firsts = await Promise.all(lurkers.map((l) => l.first));
    const streams = firsts.filter((f) => f.startsWith("HTTP/1.1 200")).length;
    const refused = firsts.filter((f) => f.startsWith("HTTP/1.1 503")).length;
    assert.ok(streams <= 64, `at most 64 streams from one address, got ${streams}`);
    assert.equal(streams + refused, 2000, "every other one was told 503");
    assert.match(firsts.find((f) => f.startsWith("HTTP/1.1 503"))!, /Too many open panels/);
    let peak = 0;
    for (let i = 0; i < 400; i++) {
      await call(dev.url, "POST", "/display/toggle");
      if (i % 50 === 0) peak = Math.max(peak, await rssMiB(pid));
    }
    peak = Math.max(peak, await rssMiB(pid));
    console.log(`# events flood: ${streams} streams held, ${refused} refused; VmRSS ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB`);
    assert.ok(peak < 200, `VmRSS ${peak} MiB`);
    // Another address is still served (the flooding one may have used up its share of connections).
    const other = lurker(dev.port, "GET /display/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", { from: "127.0.0.2" });
    assert.match(await other.first, /^HTTP\/1\.1 200/, "the device still answers");
    for (const l of lurkers) l.socket.destroy();
    // Once they are gone, a panel can subscribe again.
    await eventually(
      async () => {
        const l = lurker(dev.port, "GET /panel/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        const f = await l.first;
        l.socket.destroy();
        return f.startsWith("HTTP/1.1 200");
      },
      5_000,
      100,
    );
  });
});

describe("slow and unfinished request bodies", () => {
  test("300 uploads sending a byte per half second are cut with 408; the device answers throughout", async (t) => {
    const dev = await startDevice({ args: ["--request-timeout", "2"] });
    t.after(() => dev.stop());
    await toFtpMode(dev);
    const head = (i: number): string => `PUT /upload?filename=slow-${i}.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n`;
    const slow = Array.from({ length: 300 }, (_, i) => lurker(dev.port, head(i)));
    t.after(() => {
      for (const l of slow) l.socket.destroy();
    });
    const drip = setInterval(() => {
      for (const l of slow) if (l.socket.writable) l.socket.write("x");
    }, 500);
    t.after(() => clearInterval(drip));
    assert.equal((await call(dev.url, "GET", "/")).status, 200, "the API answers while they trickle");
    let peak = await rssMiB(dev.program.child.pid!);
    const answers = await Promise.all(slow.map((l) => l.first));
    peak = Math.max(peak, await rssMiB(dev.program.child.pid!));
    clearInterval(drip);
    await Promise.all(slow.map((l) => closed(l.socket)));
    assert.ok(
      answers.every((a) => a.startsWith("HTTP/1.1 408")),
      `every slow upload answered 408, got ${answers.find((a) => !a.startsWith("HTTP/1.1 408"))}`,
    );
    assert.match(answers[0]!, /arrived too slowly/);
    assert.deepEqual(
      await eventually(async () => ((await tree(dev.card)).length === 0 ? [] : undefined), 5_000).catch(() => tree(dev.card)),
      [],
      "nothing left on the card",
    );
    assert.match(dev.program.stdout(), /body arrived too slowly: PUT \/upload/);
    const rss = await rssMiB(dev.program.child.pid!);
    console.log(`# 300 trickling uploads: all cut with 408; VmRSS peak ${Math.max(peak, rss).toFixed(0)} MiB`);
    assert.ok(Math.max(peak, rss) < 200, `VmRSS ${Math.max(peak, rss)} MiB`);
  });

  test("a connection that never finishes its request head is closed", async (t) => {
    const dev = await startDevice({ args: ["--request-timeout", "1"] });
    t.after(() => dev.stop());
    const l = lurker(dev.port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const first = await l.first;
    await closed(l.socket);
    assert.ok(first === "" || first.startsWith("HTTP/1.1 408"), first);
  });

  test("connections beyond the limit from one address get 503; another address still gets in", async (t) => {
    // Under `ulimit -n 200` the limits are (200 - 64) / 3 = 45 connections, 22 from one address.
    const [port, setupPort, ftpPort] = [await freePort(), await freePort(), await freePort()];
    const card = await tempDir("framefi-card-");
    const state = await tempDir("framefi-state-");
    const args = ["--host", "127.0.0.1", "--port", port, "--setup-port", setupPort, "--ftp-port", ftpPort, "--card", card, "--state", state];
    const program = start("sh", ["-c", `ulimit -n 200 && exec "$0" "$@"`, bin("framefi-device"), ...args.map(String)]);
    t.after(async () => {
      await program.stop();
      await removeDir(card);
      await removeDir(state);
    });
    await program.waitFor(/web API listening/);
    const idle = Array.from({ length: 40 }, () => lurker(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    t.after(() => {
      for (const l of idle) l.socket.destroy();
    });
    const refused = await Promise.all(idle.slice(22).map((l) => l.first));
    assert.ok(
      refused.every((f) => f.startsWith("HTTP/1.1 503")),
      `the 23rd connection on from one address is refused: ${refused[0]}`,
    );
    assert.match(refused[0]!, /Too many open connections/);
    const fromOther = lurker(port, "GET /led/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", { from: "127.0.0.2" });
    assert.match(await fromOther.first, /^HTTP\/1\.1 200/, "a client from another address is still served");
    fromOther.socket.destroy();
    for (const l of idle) l.socket.destroy();
    await eventually(
      async () => {
        const again = lurker(port, "GET /led/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        const first = await again.first;
        again.socket.destroy();
        return /^HTTP\/1\.1 200/.test(first);
      },
      5_000,
      50,
    );
  });

  test("wrong credentials get 401 at once, before a big body is read", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "admin", "--web-password", "right", "--login-attempts", "1000"] });
    t.after(() => dev.stop());
    const l = lurker(
      dev.port,
      `PUT /upload?filename=x.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic("admin", "wrong")}\r\nContent-Length: 100000000\r\n\r\n`,
    );
    assert.match(await l.first, /^HTTP\/1\.1 401/, "answered with no body byte sent");
    await closed(l.socket);
  });
});

describe("uploads always end with an answer and a closed socket", () => {
  test("a chunked PUT that outgrows the card → 507 with what failed, socket closed, nothing left", async (t) => {
    const dev = await startDevice({ args: ["--card-size", "4MiB"] });
    t.after(() => dev.stop());
    await toFtpMode(dev);
    const l = lurker(dev.port, "PUT /upload?filename=big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    const chunk = Buffer.alloc(256 * 1024, 1);
    const frame = Buffer.concat([Buffer.from(chunk.length.toString(16) + "\r\n"), chunk, Buffer.from("\r\n")]);
    let sent = 0;
    const pump = async (): Promise<void> => {
      while (sent < 16 * MiB && l.socket.writable) {
        sent += chunk.length;
        if (!l.socket.write(frame)) await new Promise((r) => setTimeout(r, 5));
      }
      if (l.socket.writable) l.socket.write("0\r\n\r\n");
    };
    void pump();
    const answer = await l.first;
    assert.match(answer, /^HTTP\/1\.1 507/);
    assert.match(answer, /Not enough free space on the card/);
    await closed(l.socket);
    assert.deepEqual(await eventually(async () => ((await tree(dev.card)).length === 0 ? [] : undefined), 5_000), []);
    assert.equal((await call(dev.url, "GET", "/")).status, 200);
  });

  test("two chunked PUTs on a nearly full real filesystem (tmpfs): both answered, sockets closed, nothing left", async (t) => {
    const card = await tempDir("framefi-tmpfs-");
    const mounted = await run("mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", card]);
    if (mounted.code !== 0) {
      await removeDir(card);
      return t.skip(`needs a small tmpfs (root): ${mounted.stderr.trim()}`);
    }
    const dev = await startDevice({ card });
    t.after(async () => {
      await dev.stop();
      await run("umount", [card]);
      await removeDir(card);
    });
    await toFtpMode(dev);
    const puts = [0, 1].map((i) => lurker(dev.port, `PUT /upload?filename=fill-${i}.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n`));
    const chunk = Buffer.alloc(64 * 1024, 1);
    const frame = Buffer.concat([Buffer.from(chunk.length.toString(16) + "\r\n"), chunk, Buffer.from("\r\n")]);
    const pump = async (s: Socket): Promise<void> => {
      for (let sent = 0; sent < 4 * MiB && s.writable; sent += chunk.length) {
        if (!s.write(frame)) await new Promise((r) => setTimeout(r, 5));
      }
      if (s.writable) s.write("0\r\n\r\n");
    };
    for (const p of puts) void pump(p.socket);
    const answers = await Promise.all(puts.map((p) => p.first));
    assert.ok(
      answers.every((a) => a.startsWith("HTTP/1.1 507")),
      answers.map((a) => a.split("\r\n")[0]).join(", "),
    );
    assert.match(answers[0]!, /Not enough free space/);
    await Promise.all(puts.map((p) => closed(p.socket)));
    assert.deepEqual(await eventually(async () => ((await readdir(card)).length === 0 ? [] : undefined), 5_000).catch(() => readdir(card)), []);
  });

  test("a PUT that fails for another reason says so, not 'Cannot upload in MSC mode.'", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    await toFtpMode(dev);
    await writeFile(join(dev.card, "taken"), "a file");
    const r = await call(dev.url, "PUT", "/upload?filename=taken/inner.jpg", { body: "x" });
    assert.equal(r.status, 400);
    assert.match(JSON.parse(r.text).message, /is a file, not a folder/);
    if (process.getuid?.() === 0) return; // root writes to read-only folders
    await chmod(dev.card, 0o555);
    const denied = await call(dev.url, "PUT", "/upload?filename=new.jpg", { body: "x" }).finally(() => chmod(dev.card, 0o755));
    assert.equal(denied.status, 500);
    assert.match(JSON.parse(denied.text).message, /cannot be written \(EACCES\)/);
  });

  test("a multi-file upload cut by a switch to MSC mode lands whole or not at all", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const outcomes = { stored: 0, refused: 0 };
    t.after(() => console.log(`# multi-file uploads cut by a mode switch: ${outcomes.stored} stored whole, ${outcomes.refused} refused whole`));
    for (let round = 0; round < 40; round++) {
      await toFtpMode(dev);
      const parts = Array.from({ length: 50 }, (_, i) => ({ name: "file", filename: `r${round}/f${i}.txt`, value: `round ${round} file ${i}` }));
      const { body, contentType } = multipart(parts);
      const upload = call(dev.url, "POST", "/upload", { body, headers: { "content-type": contentType } });
      // The switch lands at a different point of the upload each round: after k of its 50 files are written
      // (k = 0 … 50), so before, during and after the renames.
      let settled = false;
      void upload.finally(() => (settled = true));
      const k = Math.round((round * 50) / 39);
      await eventually(async () => settled || (await readdir(dev.card)).filter((n) => n.endsWith(".part")).length >= k, 10_000, 1);
      const toMsc = call(dev.url, "POST", "/mode/msc");
      const [r] = await Promise.all([upload, toMsc]);
      const landed = (await readdir(join(dev.card, `r${round}`)).catch(() => [] as string[])).length;
      outcomes[r.status === 200 ? "stored" : "refused"]++;
      if (r.status === 200) assert.equal(landed, 50, `round ${round}: success, so all 50 files landed`);
      else {
        assert.equal(landed, 0, `round ${round}: refused (${r.text}), so none landed`);
        assert.match(r.text, /Cannot upload in MSC mode/);
      }
    }
  });
});

describe("symlink race during an upload", () => {
  test("a folder replaced by a link to outside the card while the file is sent: refused, nothing written outside", async (t) => {
    const dev = await startDevice();
    const outside = await tempDir("framefi-outside-");
    t.after(async () => {
      await dev.stop();
      await removeDir(outside);
    });
    await toFtpMode(dev);
    await mkdir(join(dev.card, "photos"));
    const up = openUpload(dev.port, "photos/evil.jpg", 64 * 1024, "raw");
    await up.send(Buffer.alloc(32 * 1024, 1));
    await eventually(async () => (await readdir(dev.card)).some((n) => n.endsWith(".part")), 5_000);
    await rm(join(dev.card, "photos"), { recursive: true });
    await symlink(outside, join(dev.card, "photos"));
    await up.send(Buffer.alloc(32 * 1024, 1));
    const r = await up.finish();
    assert.equal(r.status, 400, r.body);
    assert.match(r.body, /became a link that leads outside the card/);
    assert.deepEqual(await readdir(outside), [], "nothing was written outside the card");
  });
});

describe("brute force on web basic auth", () => {
  test("guesses from one address are slowed down and logged without the password", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "admin", "--web-password", "correct-horse"] });
    t.after(() => dev.stop());
    const statuses: number[] = [];
    const started = Date.now();
    while (Date.now() - started < 2_000) {
      const r = await call(dev.url, "GET", "/", { auth: ["admin", `guess-${statuses.length}`] });
      statuses.push(r.status);
    }
    const checked = statuses.filter((s) => s === 401).length;
    assert.ok(checked <= 7, `at most 5 free guesses plus the 1 s and 2 s waits' in 2 s, got ${checked} of ${statuses.length}`);
    assert.ok(statuses.includes(429), "further guesses answered 429");
    const throttled = await call(dev.url, "GET", "/", { auth: ["admin", "correct-horse"] });
    assert.equal(throttled.status, 429, "while throttled even the right password waits");
    assert.match(throttled.headers.get("retry-after") ?? "", /^\d+$/);
    const wait = Number(throttled.headers.get("retry-after"));
    await sleep(wait * 1000 + 100); // deliberately waits out the Retry-After the device announced, as a client must
    assert.equal((await call(dev.url, "GET", "/", { auth: ["admin", "correct-horse"] })).status, 200, "after the wait the right password works");
    const log = dev.program.stdout() + dev.program.stderr();
    assert.match(log, /failed web login from 127\.0\.0\.1 as user "admin" \(1 in a row\)/);
    assert.doesNotMatch(log, /guess-/);
    assert.doesNotMatch(log, /correct-horse/);
  });
});

describe("one login throttle for FTP and web basic auth", () => {
  test("failed web logins slow the address's FTP logins down, and failed FTP logins its web logins", async (t) => {
    const dev = await startDevice({ args: ["--web-user", "admin", "--web-password", "right", "--login-attempts", "2"] });
    t.after(() => dev.stop());
    await api(dev, ["admin", "right"]).setMode("ftp");
    await eventually(async () => (await api(dev, ["admin", "right"]).status()).mode === MODE_FTP, 5_000);
    for (let i = 0; i < 2; i++) assert.equal((await call(dev.url, "GET", "/", { auth: ["admin", `guess-${i}`] })).status, 401);
    assert.equal((await call(dev.url, "GET", "/", { auth: ["admin", "right"] })).status, 429, "two free failures are used up");
    const ftp = await ftpConnection(dev.ftpPort);
    t.after(() => ftp.socket.destroy());
    assert.match(await ftp.command("USER user"), /^331/);
    assert.match(await ftp.command("PASS wrong", 10_000), /^530/);
    await dev.program.waitFor(/ftp 127\.0\.0\.1:\d+: login failed \(3 in a row from 127\.0\.0\.1; the next attempt from this address waits 2 s\)/, 5_000);
    const after = await call(dev.url, "GET", "/", { auth: ["admin", "right"] });
    assert.equal(after.status, 429, "the FTP failure counts for the web too");
    assert.ok(Number(after.headers.get("retry-after")) >= 1);
  });
});

describe("a Wi-Fi reset with an unwritable state folder", () => {
  test("the device keeps answering on its network and says why", async (t) => {
    const folder = await tempDir("framefi-ro-state-");
    const state = join(folder, "state");
    const dev = await startDevice({ state, card: join(folder, "card") });
    t.after(async () => {
      await dev.stop();
      await removeDir(folder);
    });
    // A state "folder" that is a file cannot be written, whoever runs the test (root included).
    await rm(state, { recursive: true, force: true });
    await writeFile(state, "not a folder");
    const r = await call(dev.url, "POST", "/wifi/reset");
    assert.equal(r.status, 200);
    await dev.program.waitFor(/Wi-Fi reset failed: cannot write the settings .*restarting on the current network/);
    await eventually(async () => (await call(dev.url, "GET", "/", { timeoutMs: 1_000 })).status === 200, 10_000, 100);
    assert.equal(dev.program.child.exitCode, null, "still running");
  });

  test("a reset whose setup page cannot open (port taken) stays up, says so in one line, and opens the page once the port is free", async (t) => {
    const dev = await startDevice();
    t.after(() => dev.stop());
    const blocker = createNetServer();
    await new Promise<void>((r) => blocker.listen(dev.setupPort, "127.0.0.1", r));
    t.after(() => blocker.close());
    assert.equal((await call(dev.url, "POST", "/wifi/reset")).status, 200);
    await dev.program.waitFor(
      /error: cannot open the setup page on http:\/\/127\.0\.0\.1:\d+ \(.*EADDRINUSE.*\); FrameFi stays in setup mode and tries again every 2 s/,
      20_000,
    );
    await new Promise<void>((r) => blocker.close(() => r()));
    await eventually(async () => (await fetch(`http://127.0.0.1:${dev.setupPort}/`).catch(() => undefined))?.status === 200, 15_000, 100);
    assert.equal(dev.program.child.exitCode, null, "still running");
    const log = dev.program.stdout() + dev.program.stderr();
    assert.equal(log.match(/cannot open the setup page/g)?.length, 1, "said once");
    assert.doesNotMatch(log, /MaxListenersExceededWarning/);
    assert.match(log, /setup mode: no Wi-Fi network stored; setup page on/);
  });

  test("settings temp files left by a killed process are removed at start-up", async (t) => {
    const state = await tempDir("framefi-stale-state-");
    t.after(() => removeDir(state));
    await writeFile(join(state, ".settings.json.0123456789ab.tmp"), "{}");
    await writeFile(join(state, "keep.txt"), "mine");
    const dev = await startDevice({ state });
    t.after(() => dev.stop());
    assert.deepEqual((await readdir(state)).sort(), ["keep.txt"]);
  });
});

describe("the setup page after a Wi-Fi reset", () => {
  const form = (values: Record<string, string>): RequestInit => ({ method: "POST", body: new URLSearchParams(values), signal: AbortSignal.timeout(5_000) });

  test("posting only s and p keeps the MQTT and web settings; replacing the web login needs the current password", async (t) => {
    const owner: [string, string] = ["owner", "owner-pw"];
    const dev = await startDevice({
      args: ["--web-user", owner[0], "--web-password", owner[1], "--mqtt-url", "mqtt://mq-user:mq-pass@127.0.0.1:1", "--mqtt-client-id", "Frame7"],
    });
    t.after(() => dev.stop());
    const setup = `http://127.0.0.1:${dev.setupPort}`;
    assert.equal((await call(dev.url, "POST", "/wifi/reset", { auth: owner })).status, 200);
    await eventually(async () => (await fetch(`${setup}/`).catch(() => undefined))?.status === 200, 10_000, 100);

    const takeover = await fetch(`${setup}/wifisave`, form({ s: "EvilNet", p: "x", web_user: "attacker", web_pass: "owned" }));
    assert.equal(takeover.status, 403);
    assert.match(await takeover.text(), /enter the current web password/);
    const sneaky = await fetch(`${setup}/paramsave`, form({ web_user: "owner", web_pass: "owned" }));
    assert.equal(sneaky.status, 403, "a new password for the same user needs the current one too");
    assert.equal((await fetch(`${setup}/wifisave?s=EvilNet&p=x`)).status, 405, "GET saves nothing");

    const saved = await fetch(`${setup}/wifisave`, form({ s: "HomeNet", p: "wifi-pw" }));
    assert.equal(saved.status, 200);
    await eventually(async () => (await call(dev.url, "GET", "/", { timeoutMs: 1_000 })).status === 401, 10_000, 100);
    assert.equal((await call(dev.url, "GET", "/", { auth: owner })).status, 200, "the web login is the owner's");
    const stored = JSON.parse(await readFile(join(dev.state, "settings.json"), "utf8")) as Record<string, unknown>;
    assert.equal(stored.wifiSsid, "HomeNet");
    for (const key of ["mqttHost", "mqttUser", "mqttPassword", "mqttClientId", "ftpPassword"]) {
      assert.ok(!(key in stored), `${key} was not sent, so it was not overwritten (stored: ${Object.keys(stored).join(", ")})`);
    }
    assert.ok(!JSON.stringify(stored).includes("attacker"));
  });

  test("with the current password the owner changes the login; /paramsave stores fields without leaving setup mode", async (t) => {
    const owner: [string, string] = ["owner", "owner-pw"];
    const dev = await startDevice({ args: ["--web-user", owner[0], "--web-password", owner[1]] });
    t.after(() => dev.stop());
    const setup = `http://127.0.0.1:${dev.setupPort}`;
    assert.equal((await call(dev.url, "POST", "/wifi/reset", { auth: owner })).status, 200);
    await eventually(async () => (await fetch(`${setup}/`).catch(() => undefined))?.status === 200, 10_000, 100);
    const params = await fetch(`${setup}/paramsave`, form({ mqtt_host: "broker.lan", mqtt_port: "1884" }));
    assert.equal(params.status, 200);
    assert.equal((await fetch(`${setup}/`)).status, 200, "still in setup mode");
    const saved = await fetch(`${setup}/wifisave`, form({ s: "HomeNet", p: "pw", web_user: "new-owner", web_pass: "new-pw", web_pass_current: owner[1] }));
    assert.equal(saved.status, 200);
    await eventually(async () => (await call(dev.url, "GET", "/", { timeoutMs: 1_000, auth: ["new-owner", "new-pw"] })).status === 200, 10_000, 100);
    const stored = JSON.parse(await readFile(join(dev.state, "settings.json"), "utf8")) as Record<string, unknown>;
    assert.equal(stored.mqttHost, "broker.lan");
    assert.equal(stored.mqttPort, 1884);
    const log = dev.program.stdout() + dev.program.stderr();
    for (const secret of ["owner-pw", "new-pw"]) assert.ok(!log.includes(secret), `${secret} in the log`);
  });
});

describe("Host names (DNS rebinding)", () => {
  test("IP literals, localhost names and --allowed-host names are answered; any other name gets 403", async (t) => {
    const dev = await startDevice({ args: ["--allowed-host", "frame.lan, Frame-2.home"] });
    t.after(() => dev.stop());
    const withHost = async (host: string): Promise<number> => {
      const l = lurker(dev.port, `GET /led/status HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      const first = await l.first;
      l.socket.destroy();
      return Number(first.slice(9, 12));
    };
    for (const host of [
      `127.0.0.1:${dev.port}`,
      "127.0.0.1",
      `[::1]:${dev.port}`,
      "192.168.1.20",
      `localhost:${dev.port}`,
      "frame.localhost",
      `frame.lan:${dev.port}`,
      "FRAME-2.home",
      "frame.lan.",
    ]) {
      assert.equal(await withHost(host), 200, host);
    }
    for (const host of ["evil.example", `attacker.com:${dev.port}`, "frame.lan.evil.example", "127.0.0.1.nip.io"]) {
      assert.equal(await withHost(host), 403, host);
    }
    const r = await rawRequestText(dev.port, "POST /display/off HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert.match(r, /^HTTP\/1\.1 403/);
    assert.match(r, /--allowed-host evil\.example/);
    assert.equal((await call(dev.url, "GET", "/display/status")).text, '{"status":"success","display_status":"on"}');
  });
});

async function rawRequestText(port: number, bytes: string): Promise<string> {
  const l = lurker(port, bytes);
  const first = await l.first;
  l.socket.destroy();
  return first;
}
