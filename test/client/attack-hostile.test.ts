// Attacks on the client (bin/framefi sync) by a hostile FTP server and hostile names, with the real device's web API
// (for the mode switches) and a small FTP server of this test on --ftp-port. Each test here failed when written; see
// the commit message.
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { eventually, removeDir, startDevice, tempDir, within, type RunningDevice } from "../helpers.js";
import { FrameFiClient, sync } from "../../src/client/api/index.js";
import { peakRssMiB } from "../fixtures/memory.js";
import { framefi, startFramefi } from "./fixtures/cli.js";

/**
 * An FTP server that logs anyone in and takes MODE B (unless `blockMode` is false), then answers MLSD by a reply that
 * never completes: "150-" and then one byte every `dripMs` (a slowloris), each byte well within the client's --timeout of silence.
 */
async function drippingServer(dripMs: number, blockMode = true): Promise<{ server: Server; port: number; stop(): void }> {
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  const server = createServer((control) => {
    sockets.add(control);
    control.on("error", () => undefined);
    control.on("close", () => sockets.delete(control));
    let dataServer: Server | undefined;
    let pending = "";
    control.write("220 hostile\r\n");
    control.on("data", (chunk: Buffer) => {
      pending += chunk.toString("latin1");
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl).replace(/\r$/, "");
        pending = pending.slice(nl + 1);
        const verb = line.split(" ")[0]!.toUpperCase();
        if (verb === "USER") control.write("331 password\r\n");
        else if (verb === "PASS") control.write("230 in\r\n");
        else if (verb === "MODE" && !blockMode) control.write("504 stream mode only\r\n");
        else if (verb === "FEAT") control.write("211-Features:\r\n MLST type*;size*;modify*;\r\n MFMT\r\n211 End\r\n");
        else if (verb === "EPSV") {
          dataServer?.close();
          const ds = (dataServer = createServer((s) => {
            sockets.add(s);
            s.on("error", () => undefined);
          }));
          ds.listen(0, "127.0.0.1", () => control.write(`229 Entering Extended Passive Mode (|||${(ds.address() as { port: number }).port}|)\r\n`));
        } else if (verb === "MLSD") {
          control.write("150-");
          const timer = setInterval(() => control.write("x"), dripMs);
          timers.add(timer);
          control.on("close", () => clearInterval(timer));
        } else if (verb === "QUIT") control.end("221 bye\r\n");
        else control.write("200 ok\r\n");
      }
    });
    control.on("close", () => dataServer?.close());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    port: (server.address() as { port: number }).port,
    stop: () => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** An FTP server in block mode whose every MLSD is one listing of `count` short entries ("type=file; 1a2b"), in blocks. */
async function hugeListingServer(count: number, blockMode = true): Promise<{ port: number; stop(): void }> {
  const text = Buffer.from(Array.from({ length: count }, (_, i) => `type=file; ${i.toString(16)}\r\n`).join(""), "latin1");
  const blocks: Buffer[] = [];
  for (let at = 0; at < text.length; at += 65_535) {
    const piece = text.subarray(at, at + 65_535);
    blocks.push(Buffer.from([0, piece.length >> 8, piece.length & 255]), piece);
  }
  blocks.push(Buffer.from([64, 0, 0]));
  const payload = blockMode ? Buffer.concat(blocks) : text;
  const sockets = new Set<Socket>();
  const server = createServer((control) => {
    sockets.add(control);
    control.on("error", () => undefined);
    let data: Promise<Socket> | undefined;
    let dataServer: Server | undefined;
    let pending = "";
    control.write("220 hostile\r\n");
    control.on("data", (chunk: Buffer) => {
      pending += chunk.toString("latin1");
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl).replace(/\r$/, "");
        pending = pending.slice(nl + 1);
        const verb = line.split(" ")[0]!.toUpperCase();
        if (verb === "USER") control.write("331 password\r\n");
        else if (verb === "PASS") control.write("230 in\r\n");
        else if (verb === "MODE" && !blockMode) control.write("504 stream mode only\r\n");
        else if (verb === "FEAT") control.write("211-Features:\r\n MLST type*;size*;modify*;\r\n MFMT\r\n211 End\r\n");
        else if (verb === "EPSV") {
          dataServer?.close();
          const ds = (dataServer = createServer());
          data = new Promise((resolve) =>
            ds.once("connection", (s: Socket) => {
              sockets.add(s);
              resolve(s.on("error", () => undefined));
            }),
          );
          ds.listen(0, "127.0.0.1", () => control.write(`229 Entering Extended Passive Mode (|||${(ds.address() as { port: number }).port}|)\r\n`));
        } else if (verb === "MLSD") {
          void data?.then((s) => {
            control.write("150 here\r\n");
            if (blockMode) s.write(payload, () => control.write("226 done\r\n"));
            else s.end(payload, () => control.write("226 done\r\n"));
          });
        } else if (verb === "QUIT") control.end("221 bye\r\n");
        else control.write("200 ok\r\n");
      }
    });
    control.on("close", () => dataServer?.close());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    stop: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe("attack: framefi against a hostile FTP server and hostile names", () => {
  let dev: RunningDevice;
  let photos: string;

  before(async () => {
    dev = await startDevice();
    photos = await tempDir("framefi-attack-hostile-");
    await writeFile(join(photos, "a.jpg"), Buffer.alloc(1_000, 1));
  });
  after(async () => {
    await dev?.stop();
    await removeDir(photos);
  });

  for (const mode of ["block mode", "stream mode"] as const)
    test(`an FTP reply dripped one byte a second (a slowloris) in ${mode} does not hold the sync beyond its timeout`, async () => {
      const hostile = await drippingServer(1_000, mode === "block mode");
      try {
        const started = Date.now();
        // --timeout 3 bounds each whole FTP reply (and each web API answer); give it 60 s.
        const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "--timeout", "3", "sync", "--ftp-port", String(hostile.port), photos], {
          cwd: photos,
          timeoutMs: 75_000,
        });
        const took = Date.now() - started;
        assert.ok(took < 60_000, `the sync was still waiting for the dripped reply after ${Math.round(took / 1000)} s (code ${r.code})`);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /^framefi: Sync stopped: [^\n]*(did not answer|within)/m);
        await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode === "USB MSC", 15_000);
      } finally {
        hostile.stop();
      }
    });

  test("a local name with a line break fails in one printed line (the name cannot split the 'failed' line)", async () => {
    const dir = await tempDir("framefi-attack-newline-");
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "ok.jpg"), "ok");
      await writeFile(join(dir, "a.jpg\nframefi: Sync done: 0 failed.jpg"), "x");
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--to", "/newline", "--ftp-port", String(dev.ftpPort), dir], { cwd: dir });
      assert.notEqual(r.code, 0);
      // The fake line must not appear as a line of its own.
      assert.doesNotMatch(r.stderr, /^framefi: Sync done: 0 failed\.jpg/m, `a name's line break printed as is:\n${r.stderr}`);
      assert.match(r.stderr, /^failed a\.jpg framefi: Sync done: 0 failed\.jpg: [^\n]*line break/m);
    } finally {
      await removeDir(dir);
    }
  });
  // A --to (the CLI, REMOTE_DIR of .env, a hook's argument) or the library's remoteDir with a line break: each FTP
  // command the client sends with it becomes two on the server, the second one of the name's choosing.
  test("the library's sync() with a remoteDir holding a line break injects no FTP command (a card file outside it stays)", async () => {
    await fetch(`${dev.url}/mode/ftp`, { method: "POST" });
    await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode !== "USB MSC", 15_000);
    await writeFile(join(dev.card, "keep.jpg"), "precious");
    await fetch(`${dev.url}/mode/msc`, { method: "POST" });
    await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode === "USB MSC", 15_000);
    const client = new FrameFiClient({ host: `127.0.0.1:${dev.port}` });
    const outcome = await sync(client, { localDir: photos, remoteDir: "/album\nDELE /keep.jpg", ftp: { port: dev.ftpPort } }).then(
      (r) => `done, ${r.failed.length} failed`,
      (e: Error) => `${e.name}: ${e.message}`,
    );
    const kept = await readFile(join(dev.card, "keep.jpg"), "utf8").catch(() => "(deleted)");
    assert.equal(kept, "precious", `sync() with remoteDir "/album\\nDELE /keep.jpg" (${outcome}) deleted /keep.jpg on the card`);
  });

  test("framefi sync --to with a line break injects no FTP command (a card file outside --to stays)", async () => {
    await fetch(`${dev.url}/mode/ftp`, { method: "POST" });
    await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode !== "USB MSC", 15_000);
    await writeFile(join(dev.card, "keep2.jpg"), "precious");
    await fetch(`${dev.url}/mode/msc`, { method: "POST" });
    await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode === "USB MSC", 15_000);
    const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--to", "/p\nDELE keep2.jpg", "--ftp-port", String(dev.ftpPort), photos], {
      cwd: photos,
    });
    const kept = await readFile(join(dev.card, "keep2.jpg"), "utf8").catch(() => "(deleted)");
    assert.equal(kept, "precious", `framefi sync --to "/p\\nDELE keep2.jpg" (exit ${r.code}) deleted /keep2.jpg on the card:\n${r.stderr}`);
  });
  for (const [mode, count, cap] of [
    ["block mode", 3_400_000, "64 MiB"],
    ["stream mode", 2_000_000, "40 MB"],
  ] as const) {
    test(`one MLSD listing under the ${cap} cap in ${mode} (${count} short entries) does not take the client past 200 MB`, async () => {
      const hostile = await hugeListingServer(count, mode === "block mode");
      try {
        const p = startFramefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(hostile.port), photos], { cwd: photos });
        const pid = p.child.pid!;
        let peak = 0;
        const timer = setInterval(() => {
          try {
            peak = Math.max(peak, peakRssMiB(pid));
          } catch {
            // gone
          }
        }, 20);
        const code = await within(p.exited, 90_000, "timeout");
        clearInterval(timer);
        if (code === "timeout") await p.stop();
        assert.ok(peak < 200, `framefi's peak RSS was ${Math.round(peak)} MiB (exit ${code}):\n${p.stderr().slice(-300)}`);
        assert.notEqual(code, 0);
        // Refused as it streams in, with the reason, not after a wait for the end of a transfer no longer read.
        assert.match(p.stderr(), /^framefi: Sync stopped: The card holds more than 250000 files and folders under \/;/m);
      } finally {
        hostile.stop();
      }
    });
  }

  test("the library's sync() with an FTP port out of range (70000, -5) refuses it at once, as the CLI's --ftp-port does", async () => {
    const client = new FrameFiClient({ host: `127.0.0.1:${dev.port}` });
    for (const port of [70_000, -5]) {
      const started = Date.now();
      const outcome = await sync(client, { localDir: photos, remoteDir: "/ports", ftp: { port } }).then(
        () => "done",
        (e: Error) => e.message,
      );
      const took = Date.now() - started;
      assert.ok(took < 5_000, `ftp.port ${port}: sync() took ${Math.round(took / 1000)} s to say: ${outcome}`);
      assert.match(outcome, /port/i);
    }
  });
  test("a password in --host (http://user:password@host…) is never printed in a hint or an error", async () => {
    const secret = "S3CRETpw42";
    for (const host of [
      `http://admin:${secret}@127.0.0.1:${dev.port}/x?y`, // a path: the hint repeats --host
      `http://admin:${secret}@127.0.0.1`, // no port: the hint repeats --host
      `admin:${secret}@127.0.0.1:1`, // unreachable
    ]) {
      const r = await framefi(["--host", host, "--timeout", "3", "status"], { timeoutMs: 30_000 });
      const printed = r.stdout + r.stderr;
      for (const form of [secret, encodeURIComponent(secret), Buffer.from(`admin:${secret}`).toString("base64")]) {
        assert.ok(!printed.includes(form), `--host ${host}: the password is printed:\n${printed}`);
      }
    }
  });
  test("framefi sync killed (SIGKILL) mid-file in stream mode (the firmware's) leaves no truncated photo on the card", async () => {
    const stream = await startDevice({ args: ["--ftp-stream-only"] });
    const local = await tempDir("framefi-attack-killed-");
    try {
      const size = 200 * 1024 * 1024;
      const big = join(local, "big.jpg");
      for (let i = 0; i < 20; i++) await writeFile(big, randomBytes(size / 20), { flag: "a" });
      const partSize = async (): Promise<number> => {
        let biggest = 0;
        for (const name of await readdir(stream.card)) {
          if (/^\.framefi-upload-.*\.part$/.test(name)) biggest = Math.max(biggest, (await stat(join(stream.card, name)).catch(() => ({ size: 0 }))).size);
        }
        return biggest;
      };
      const mode = async (): Promise<string> => ((await (await fetch(`${stream.url}/`)).json()) as { mode: string }).mode;
      for (let attempt = 0; attempt < 8; attempt++) {
        await rm(join(stream.card, "big.jpg"), { force: true });
        const p = startFramefi(["--host", `127.0.0.1:${stream.port}`, "sync", "--ftp-port", String(stream.ftpPort), local], { cwd: local });
        // Kill it somewhere in the file's middle (a different place each time).
        const at = ((attempt % 4) + 1) * (size / 6);
        await eventually(async () => (await partSize()) > at || p.child.exitCode !== null, 30_000, 2).catch(() => undefined);
        p.child.kill("SIGKILL");
        await p.exited;
        // The device is done with the upload once its temp file is gone: removed, or (the failure looked for) landed.
        await eventually(async () => !(await readdir(stream.card)).some((name) => /^\.framefi-upload-.*\.part$/.test(name)), 15_000);
        if ((await mode()) !== "USB MSC") {
          await fetch(`${stream.url}/mode/msc`, { method: "POST" });
          await eventually(async () => (await mode()) === "USB MSC", 15_000);
        }
        const kept = await stat(join(stream.card, "big.jpg")).catch(() => undefined);
        assert.ok(
          kept === undefined || kept.size === size,
          `attempt ${attempt + 1}: framefi killed mid-upload left big.jpg of ${kept?.size} bytes (of ${size}) on the card as a finished file`,
        );
      }
    } finally {
      await stream.stop();
      await removeDir(local);
    }
  });
});
