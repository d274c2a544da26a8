// `framefi sync` against FTP servers that misbehave: a reply without end, lines that are not replies, a listing
// whose blocks break off, and a server that closes mid-upload. The real bin/framefi talks to the real device's
// web API (in FTP mode) while --ftp-port points at a small server this test runs. The sync must end on its own
// with a clear error, never hang or crash, and the device must be back in USB MSC mode.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { appendFile, mkdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { BlockDecoder } from "../../src/shared/ftp-blocks.js";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { framefi, startFramefi } from "./fixtures/cli.js";

/** A control connection's script: what the server does with each command line (after its 220 greeting). */
type Script = (command: string, control: Socket, data: () => Promise<Socket>) => void | Promise<void>;

/** An FTP server on a free port that logs anyone in, takes MODE B and then follows `script`. */
async function hostileServer(script: Script): Promise<{ server: Server; port: number }> {
  const server = createServer((control) => {
    control.on("error", () => undefined);
    let dataServer: Server | undefined;
    let dataSocket: Promise<Socket> | undefined;
    const data = (): Promise<Socket> => dataSocket ?? Promise.reject(new Error("no EPSV"));
    let pending = "";
    let turn: Promise<void> = Promise.resolve();
    control.write("220 hostile\r\n");
    control.on("data", (chunk: Buffer) => {
      pending += chunk.toString("latin1");
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl).replace(/\r$/, "");
        pending = pending.slice(nl + 1);
        // One command after the other, as a real server answers them (a client may send the next one early).
        turn = turn.then(() => answer(line)).catch(() => undefined);
      }
    });
    const answer = (line: string): void | Promise<void> => {
      const verb = line.split(" ")[0]!.toUpperCase();
      if (verb === "USER") control.write("331 password\r\n");
      else if (verb === "PASS") control.write("230 in\r\n");
      else if (verb === "TYPE" || verb === "MODE") control.write("200 ok\r\n");
      else if (verb === "FEAT") control.write("211-Features:\r\n MLST type*;size*;modify*;\r\n MFMT\r\n211 End\r\n");
      else if (verb === "EPSV") {
        dataServer?.close(); // a client that dropped its data connection asks for another
        const server = (dataServer = createServer());
        dataSocket = new Promise((resolve) => server.once("connection", (s: Socket) => resolve(s.on("error", () => undefined))));
        return new Promise((resolve) =>
          server.listen(0, "127.0.0.1", () =>
            resolve(void control.write(`229 Entering Extended Passive Mode (|||${(server.address() as { port: number }).port}|)\r\n`)),
          ),
        );
      } else if (verb === "QUIT") control.end("221 bye\r\n");
      else return script(line, control, data);
    };
    control.on("close", () => dataServer?.close());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** An empty folder, in blocks. */
async function emptyListing(control: Socket, data: () => Promise<Socket>, after: Buffer = Buffer.alloc(0)): Promise<void> {
  control.write("150 here\r\n");
  (await data()).write(Buffer.concat([Buffer.from([64, 0, 0]), after]));
  control.write("226 done\r\n");
}

/** A folder of the given MLSD lines, in blocks (each line a block, then the EOF block). */
async function listing(control: Socket, data: () => Promise<Socket>, lines: string[]): Promise<void> {
  const blocks = lines.map((line) => {
    const entry = Buffer.from(`${line}\r\n`);
    return Buffer.concat([Buffer.from([0, entry.length >> 8, entry.length & 255]), entry]);
  });
  control.write("150 here\r\n");
  (await data()).write(Buffer.concat([...blocks, Buffer.from([64, 0, 0])]));
  control.write("226 done\r\n");
}

/** Takes an upload to its EOF block and answers `reply`. */
async function store(control: Socket, data: () => Promise<Socket>, reply = "226 done\r\n"): Promise<void> {
  control.write("150 go\r\n");
  await uploadEnd(await data());
  control.write(reply);
}

/**
 * Reads one upload's blocks (each chunk after `delayMs`, to be slow) and resolves once its EOF block is in. The
 * socket is left paused with any bytes after the EOF block put back: the client sends the next file's first
 * chunk with its STOR, which may arrive before this server reads that command. Rejects when the connection closes
 * first or the blocks are malformed: a client bug then fails the test plainly, not by a hang.
 */
function uploadEnd(socket: Socket, delayMs = 0): Promise<void> {
  const decoder = new BlockDecoder();
  return new Promise((resolve, reject) => {
    const stop = (): Socket => socket.off("data", onData).off("close", onClose);
    const onClose = (): void => {
      stop();
      reject(new Error("the data connection closed before the EOF block"));
    };
    const onData = (chunk: Buffer): void => {
      let rest: Buffer | undefined;
      try {
        ({ rest } = decoder.push(chunk));
      } catch (e) {
        stop();
        return reject(e);
      }
      if (decoder.ended) {
        stop().pause();
        if (rest) socket.unshift(rest);
        return resolve();
      }
      if (delayMs === 0) return;
      socket.pause();
      setTimeout(() => socket.resume(), delayMs);
    };
    socket.on("data", onData).on("close", onClose);
    socket.resume(); // a paused socket stays paused when a listener is added
  });
}

describe("framefi sync against a misbehaving FTP server", () => {
  let dev: RunningDevice;
  let photos: string;

  before(async () => {
    dev = await startDevice();
    photos = await tempDir("framefi-hostile-");
    await writeFile(join(photos, "a.jpg"), Buffer.alloc(300_000, 1));
  });
  after(async () => {
    await dev?.stop();
    await removeDir(photos);
  });

  const cases: [string, Script, RegExp][] = [
    ["a reply that never ends (one line of 100 kB)", (_c, control) => void control.write("150 " + "x".repeat(100_000)), /overlong reply/],
    [
      "a multi-line reply that never ends (long lines, 200 kB)",
      (_c, control) => void control.write(("150-" + "x".repeat(2_000) + "\r\n").repeat(100)),
      /overlong reply/,
    ],
    ["lines that are not replies", (_c, control) => void control.write("hello there\r\n"), /not a reply/],
    [
      "a listing whose blocks break off",
      async (command, control, data) => {
        if (!command.startsWith("MLSD")) return void control.write("502 no\r\n");
        control.write("150 here\r\n");
        (await data()).end(Buffer.from([0, 0, 50, 65, 66]));
        control.write("226 done\r\n");
      },
      /Cannot list \/ on the card: The data connection closed before the transfer's end/,
    ],
  ];
  for (const [name, script, error] of cases) {
    test(name, async () => {
      const { server, port } = await hostileServer(script);
      try {
        const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), photos], { cwd: photos, timeoutMs: 60_000 });
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, error);
        assert.doesNotMatch(r.stderr, /unexpected error/);
        await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode === "USB MSC");
      } finally {
        server.close();
      }
    });
  }

  test("a server that closes during an upload: the file is reported failed and the sync ends", async () => {
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) {
        control.write("150 here\r\n");
        (await data()).write(Buffer.from([64, 0, 0]));
        control.write("226 done\r\n");
      } else if (command.startsWith("STOR")) {
        control.write("150 go\r\n");
        const socket = await data();
        await new Promise((resolve) => socket.once("data", resolve)); // the MFMT sent behind the upload goes unanswered
        control.destroy();
      } else control.write("502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "1", photos], {
        cwd: photos,
        timeoutMs: 60_000,
      });
      assert.notEqual(r.code, 0, r.stdout);
      // How the loss shows (a reset, a closed pipe) depends on timing; that the file failed and the sync ended does not.
      assert.match(r.stderr, /^failed a\.jpg: /m);
      assert.match(r.stderr, /^framefi: Sync stopped: [^\n]*\. The device is back in USB MSC mode\./m);
      assert.doesNotMatch(r.stderr, /unexpected error/);
    } finally {
      server.close();
    }
  });

  test("an upload slower than the reply timeout (--timeout 3) completes: the control connection waits as long as data flows", async () => {
    const big = await tempDir("framefi-slow-");
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return emptyListing(control, data);
      if (command.startsWith("STOR")) {
        control.write("150 go\r\n");
        await uploadEnd(await data(), 25);
        return void control.write("226 done\r\n");
      }
      control.write(command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      // Read 64 KiB at a time with a 25 ms pause after each: about 6 s, twice the reply timeout.
      await writeFile(join(big, "video.mp4"), Buffer.alloc(16 * 1024 * 1024));
      const started = Date.now();
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "--timeout", "3", "sync", "--ftp-port", String(port), big], {
        cwd: big,
        timeoutMs: 120_000,
      });
      assert.ok(Date.now() - started > 3_000, "the upload took less than the reply timeout: it proves nothing");
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^uploaded video\.mp4 /m);
    } finally {
      server.close();
      await removeDir(big);
    }
  });

  test("a server that stops reading mid-upload: the file fails as stalled after --timeout (3 s), and the sync ends", async () => {
    const big = await tempDir("framefi-stall-");
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return emptyListing(control, data);
      if (command.startsWith("STOR")) {
        control.write("150 go\r\n");
        (await data()).pause();
        return;
      }
      control.write("502 no\r\n");
    });
    try {
      // More than the kernel's socket buffers take, so that the client's writes wait.
      await writeFile(join(big, "video.mp4"), Buffer.alloc(32 * 1024 * 1024));
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "--timeout", "3", "sync", "--ftp-port", String(port), big], {
        cwd: big,
        timeoutMs: 120_000,
      });
      assert.notEqual(r.code, 0, r.stdout);
      assert.match(r.stderr, /^failed video\.mp4: .*data connection stalled for 3 s/m, r.stderr);
      assert.doesNotMatch(r.stderr, /unexpected error/);
    } finally {
      server.close();
      await removeDir(big);
    }
  });

  test("a file that grows after the sync planned it is not stored (its EOF block is never sent); the others are", async () => {
    const folder = await tempDir("framefi-grow-");
    const stored: string[] = [];
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return emptyListing(control, data);
      if (command.startsWith("STOR")) {
        const name = command.slice(5);
        // The sync has planned both files by now: b.jpg grows before its upload begins.
        if (name.endsWith("a.jpg")) await appendFile(join(folder, "b.jpg"), Buffer.alloc(1_000, 2));
        control.write("150 go\r\n");
        const socket = await data();
        const closed = new Promise<boolean>((resolve) => socket.once("close", () => resolve(false)));
        const ended = await Promise.race([uploadEnd(socket).then(() => true), closed]);
        if (!ended) return void control.write("426 aborted\r\n");
        stored.push(name);
        return void control.write("226 done\r\n");
      }
      control.write(command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      await writeFile(join(folder, "a.jpg"), Buffer.alloc(1_000, 1));
      await writeFile(join(folder, "b.jpg"), Buffer.alloc(1_000, 1));
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "1", folder], {
        cwd: folder,
        timeoutMs: 60_000,
      });
      assert.notEqual(r.code, 0, r.stdout);
      assert.match(r.stderr, /^failed b\.jpg: the file changed while it was being sent; run the sync again$/m);
      assert.match(r.stdout, /^uploaded a\.jpg /m);
      assert.deepEqual(stored, ["/a.jpg"]);
    } finally {
      server.close();
      await removeDir(folder);
    }
  });

  test("a listing that never comes (150, then silence): the sync ends, the data connection stalled", async () => {
    const { server, port } = await hostileServer((command, control) => {
      if (command.startsWith("MLSD")) return void control.write("150 here\r\n");
      control.write("502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "--timeout", "3", "sync", "--ftp-port", String(port), photos], {
        cwd: photos,
        timeoutMs: 120_000,
      });
      assert.notEqual(r.code, 0, r.stdout);
      // Whichever of the two waits gives up first: the reply's on the control connection, or the data's.
      assert.match(r.stderr, /Cannot list \/ on the card: The FTP server (did not answer within 3 s|'s data connection stalled for 3 s)/);
      assert.doesNotMatch(r.stderr, /unexpected error/);
    } finally {
      server.close();
    }
  });

  test("a listing whose data connection the server closes before its end: the sync says the server's reason", async () => {
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) {
        control.write("150 here\r\n");
        const entry = Buffer.from("type=file;size=1; a.jpg\r\n");
        (await data()).end(Buffer.concat([Buffer.from([0, 0, entry.length]), entry]));
        return void control.write("426 The card was taken back; nothing was listed.\r\n");
      }
      control.write("502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "--timeout", "3", "sync", "--ftp-port", String(port), photos], {
        cwd: photos,
        timeoutMs: 60_000,
      });
      assert.notEqual(r.code, 0, r.stdout);
      assert.match(r.stderr, /Cannot list \/ on the card: [^\n]*The card was taken back; nothing was listed\./);
    } finally {
      server.close();
    }
  });

  test("--timeout above 10 s: a listing that starts after 11 s of silence is waited for", async () => {
    // Before, the control socket's own timeout stayed at 10 s whatever --timeout said, and the wait ended with
    // "did not answer within 30 s" after 10.
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) {
        await new Promise((resolve) => setTimeout(resolve, 11_000));
        return emptyListing(control, data);
      }
      if (command.startsWith("STOR")) return store(control, data);
      control.write(command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "--timeout", "30", "sync", "--ftp-port", String(port), photos], {
        cwd: photos,
        timeoutMs: 120_000,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^uploaded a\.jpg /m);
    } finally {
      server.close();
    }
  });

  test("an upload refused after its EOF block (552): the file fails, and the card's old file keeps its time (no MFMT)", async () => {
    const commands: string[] = [];
    const { server, port } = await hostileServer(async (command, control, data) => {
      commands.push(command.split(" ")[0]!);
      // The card has an older a.jpg of another size: the upload replaces it.
      if (command.startsWith("MLSD")) return listing(control, data, ["type=file;size=5;modify=20200101000000; a.jpg"]);
      if (command.startsWith("STOR")) return store(control, data, "552 Upload aborted: Not enough space on the card.\r\n");
      control.write(command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "1", photos], { cwd: photos });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^failed a\.jpg: 552 /m);
      assert.ok(commands.includes("STOR") && !commands.includes("MFMT"), commands.join(" "));
    } finally {
      server.close();
    }
  });

  test("a new file's MFMT goes right behind its EOF block; refused (552), the file fails and the next one is sent", async () => {
    const commands: string[] = [];
    const { server, port } = await hostileServer(async (command, control, data) => {
      commands.push(command.replace(/^MFMT \d+ /, "MFMT "));
      if (command.startsWith("MLSD")) return emptyListing(control, data);
      if (command.startsWith("STOR")) {
        control.write("150 go\r\n");
        await uploadEnd(await data());
        return void control.write(command.endsWith("a.jpg") ? "552 Upload aborted: Not enough space on the card.\r\n" : "226 done\r\n");
      }
      if (command.startsWith("MFMT")) return void control.write(command.endsWith("a.jpg") ? "550 No such file or folder.\r\n" : "213 ok\r\n");
      control.write("502 no\r\n");
    });
    const folder = await tempDir("framefi-fresh-");
    try {
      await writeFile(join(folder, "a.jpg"), Buffer.alloc(1_000, 1));
      await writeFile(join(folder, "b.jpg"), Buffer.alloc(1_000, 2));
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "1", folder], { cwd: folder });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^failed a\.jpg: 552 /m);
      assert.match(r.stdout, /^uploaded b\.jpg /m, r.stderr + JSON.stringify(commands));
      assert.deepEqual(
        commands.filter((c) => /^(STOR|MFMT)/.test(c)),
        ["STOR /a.jpg", "MFMT /a.jpg", "STOR /b.jpg", "MFMT /b.jpg"],
      );
    } finally {
      server.close();
      await removeDir(folder);
    }
  });

  test("Ctrl-C while the last file is sent and the other connection is idle: the sync says it was interrupted (130)", async () => {
    let storing!: () => void;
    const stored = new Promise<void>((resolve) => (storing = resolve));
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return emptyListing(control, data);
      if (command.startsWith("STOR")) {
        // Takes the upload and never reads it or answers: the file is being sent when Ctrl-C comes.
        control.write("150 go\r\n");
        return storing();
      }
      // Nor the MFMT that follows a new file's EOF block: a small file can go out whole into the socket buffers
      // before Ctrl-C, and a 502 would then be taken for the upload's answer.
      if (command.startsWith("MFMT")) return;
      control.write("502 no\r\n");
    });
    const p = startFramefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "2", photos], { cwd: photos });
    try {
      await stored;
      p.child.kill("SIGINT");
      assert.equal(await p.exited, 130, p.stderr());
      assert.match(p.stderr(), /Sync interrupted\./);
      assert.doesNotMatch(p.stdout(), /Sync done/);
      await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode === "USB MSC");
    } finally {
      await p.stop();
      server.close();
    }
  });

  test("a 421 (the server closes an idle session) is a lost connection: logged in again, the file is sent", async () => {
    let stors = 0;
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return emptyListing(control, data);
      if (command.startsWith("STOR") && ++stors === 1) return void control.end("421 Idle timeout; closing the connection.\r\n");
      if (command.startsWith("STOR")) return store(control, data);
      control.write(command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "1", photos], { cwd: photos });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^uploaded a\.jpg /m);
      assert.equal(stors, 2);
    } finally {
      server.close();
    }
  });

  test("bytes after a listing's EOF block do not loop the client", async () => {
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return emptyListing(control, data, Buffer.from("trailing bytes"));
      control.write("550 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "1", photos], { cwd: photos });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^failed a\.jpg: 550 no/m);
      assert.doesNotMatch(r.stderr, /unexpected error|stack/i);
    } finally {
      server.close();
    }
  });

  test("a card name with control characters is printed blanked (deleted … lines)", async () => {
    const evil = "x\x1b]0;PWNED-TITLE\x07\x1b[2J\x9b31m.jpg";
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) return listing(control, data, [`type=file;size=5;modify=20200101000000; ${evil}`]);
      if (command.startsWith("STOR")) return store(control, data);
      control.write(command.startsWith("DELE") ? "250 gone\r\n" : command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--delete", "--force", "--ftp-port", String(port), "--parallel", "1", photos], {
        cwd: photos,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^deleted x \]0;PWNED-TITLE/m);
      assert.doesNotMatch(r.stdout + r.stderr, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    } finally {
      server.close();
    }
  });

  test("a card whose folders nest forever: the listing stops at 32 levels with a clear error; links are not followed", async () => {
    const listed: string[] = [];
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (!command.startsWith("MLSD")) return void control.write("502 no\r\n");
      const path = command.slice(5);
      listed.push(path);
      const depth = path.split("/").length;
      return listing(control, data, [
        `type=dir;modify=2020010100000${depth % 10}; level${depth}`,
        "type=OS.unix=symlink;modify=20200101000000; link",
        "type=cdir;modify=20200101000000; .",
        "type=pdir;modify=20200101000000; ..",
      ]);
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), "--parallel", "2", photos], {
        cwd: photos,
        timeoutMs: 60_000,
      });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /Cannot list the card: its folders nest more than 32 levels deep under \/ /);
      assert.ok(listed.length <= 34, `${listed.length} listings`);
      assert.ok(!listed.some((p) => /link|\/\.\.?(\/|$)/.test(p)), listed.join(" "));
      await eventually(async () => ((await (await fetch(`${dev.url}/`)).json()) as { mode: string }).mode === "USB MSC");
    } finally {
      server.close();
    }
  });

  test("a card of more than 250 000 entries: the sync stops with a clear error instead of holding them all", async () => {
    const lines = Array.from({ length: 250_001 }, (_, i) => `type=file;size=1;modify=20200101000000; f${i}.jpg`);
    const { server, port } = await hostileServer((command, control, data) =>
      command.startsWith("MLSD") ? listing(control, data, lines) : void control.write("502 no\r\n"),
    );
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), photos], { cwd: photos, timeoutMs: 60_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /The card holds more than 250000 files and folders under \/; sync a folder further down with --to\./);
    } finally {
      server.close();
    }
  });

  test("a folder that lists as its parent, all the way down, is a link back: not followed, the sync goes on", async () => {
    let listings = 0;
    const { server, port } = await hostileServer(async (command, control, data) => {
      if (command.startsWith("MLSD")) {
        listings++;
        return listing(control, data, ["type=dir;modify=20200101000000; again"]);
      }
      if (command.startsWith("STOR")) return store(control, data);
      control.write(command.startsWith("MFMT") ? "213 ok\r\n" : "502 no\r\n");
    });
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--ftp-port", String(port), photos], { cwd: photos, timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^Not following \/again on the card: it lists as \/, a link back to it\.$/m);
      assert.match(r.stdout, /^uploaded a\.jpg /m);
      assert.ok(listings <= 34, `${listings} listings`);
    } finally {
      server.close();
    }
  });

  test("our device with a card link sub/up -> ..: the sync does not follow it and succeeds", async () => {
    await mkdir(join(dev.card, "sub"));
    await symlink("..", join(dev.card, "sub", "up"));
    try {
      const r = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", photos], { cwd: photos, timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^Not following \/sub\/up on the card: it lists as \/, a link back to it\.$/m);
      assert.match(r.stdout, /^uploaded a\.jpg /m);
    } finally {
      await rm(join(dev.card, "sub"), { recursive: true, force: true });
      await rm(join(dev.card, "a.jpg"), { force: true });
    }
  });

  test("a card folder that lists as its parent for one level only (x/x/ of the same time) is a folder, not a link", async () => {
    const folder = await tempDir("framefi-nested-");
    try {
      await mkdir(join(folder, "x", "x"), { recursive: true });
      await writeFile(join(folder, "x", "x", "pic.jpg"), Buffer.alloc(1_000, 3));
      const first = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", folder], { cwd: folder });
      assert.equal(first.code, 0, first.stderr);
      // The card's / and /x now list alike: one folder "x" of the same time.
      const t = new Date(Date.UTC(2024, 0, 1));
      for (const dir of [join(dev.card, "x", "x"), join(dev.card, "x")]) await utimes(dir, t, t);
      const again = await framefi(["--host", `127.0.0.1:${dev.port}`, "sync", "--delete", folder], { cwd: folder });
      assert.equal(again.code, 0, again.stderr);
      assert.doesNotMatch(again.stderr, /Not following/);
      assert.match(again.stdout, /^Sync done: 0 uploaded \(0 B\), 0 deleted, 0 folders created, 1 unchanged\./m);
    } finally {
      await rm(join(dev.card, "x"), { recursive: true, force: true });
      await removeDir(folder);
    }
  });
});
