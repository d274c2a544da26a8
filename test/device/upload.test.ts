// POST /upload — MSC refusal, multipart with sub-folders, escapes, 507,
// interrupted uploads, card figures after uploads — against a running bin/framefi-device.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { BODY, MODE_FTP, MODE_MSC } from "./fixtures/contract.js";
import { call, openUpload, post, receiving } from "./fixtures/http.js";
import { tree } from "../fixtures/files.js";
import { curl, multipart, type Part } from "../fixtures/http.js";
import { api } from "./fixtures/device.js";
import { DeviceHttpError } from "../../src/client/api/index.js";

const MiB = 1024 * 1024;
const CARD = 24 * MiB;

let dev: RunningDevice;
let work: string; // local files to upload and the "outside" folder escapes aim at
let outside: string;

interface Status {
  mode: string;
  sd_card: { total_size: number; used_size: number; free_size: number; file_count: number };
}
const status = (): Promise<Status> => api(dev).status();

async function backToFtp(): Promise<void> {
  assert.equal((await post(dev.url, "/mode/ftp")).text, BODY.switchedToFtp);
  await eventually(async () => (await status()).mode === MODE_FTP || undefined, 10_000);
}

before(async () => {
  work = await tempDir("framefi-upload-work-");
  outside = join(work, "outside");
  await mkdir(outside);
  await writeFile(join(outside, "keep.txt"), "outside the card");
  dev = await startDevice({ args: ["--card-size", String(CARD)] });
});
after(async () => {
  await dev?.stop();
  await removeDir(work);
});

/** Uploads a multipart body with fetch. */
async function upload(parts: Part[]): Promise<{ status: number; text: string }> {
  const { body, contentType } = multipart(parts);
  const r = await call(dev.url, "POST", "/upload", { body, headers: { "content-type": contentType }, timeoutMs: 30_000 });
  return { status: r.status, text: r.text };
}

const errorBody = (text: string): void => {
  const j = JSON.parse(text);
  assert.deepEqual(Object.keys(j), ["status", "message"], text);
  assert.equal(j.status, "error");
  assert.ok(typeof j.message === "string" && j.message.length > 0);
};

describe("MSC mode: the card belongs to the USB host", () => {
  test("POST /upload → 400 with the firmware's exact body; nothing written", async () => {
    const before = await tree(dev.card);
    const local = join(work, "msc.jpg");
    await writeFile(local, randomBytes(4096));
    const r = await curl(["-F", `file=@${local}`, `${dev.url}/upload`]);
    assert.equal(r.status, 400);
    assert.equal(r.body, BODY.uploadInMsc);
    const r2 = await upload([{ name: "file", filename: "sub/dir/msc.jpg", value: "hello" }]);
    assert.equal(r2.status, 400);
    assert.equal(r2.text, BODY.uploadInMsc);
    assert.deepEqual(await tree(dev.card), before, "card unchanged");
  });

  test("switch to FTP mode for the rest", async () => {
    const r = await post(dev.url, "/mode/ftp");
    assert.equal(r.text, BODY.switchedToFtp);
    await eventually(async () => (await status()).mode === MODE_FTP, 10_000);
  });
});

describe("uploads in FTP mode", () => {
  test("curl -F file=@… → exact success body, bytes identical, figures updated", async () => {
    const s0 = await status();
    const local = join(work, "photo.jpg");
    const data = randomBytes(300_000);
    await writeFile(local, data);
    const r = await curl(["-F", `file=@${local}`, `${dev.url}/upload`]);
    assert.equal(r.status, 200, r.body + r.stderr);
    assert.equal(r.body, BODY.uploaded);
    assert.deepEqual(await readFile(join(dev.card, "photo.jpg")), data);
    const s1 = await status();
    assert.equal(s1.sd_card.file_count, s0.sd_card.file_count + 1, "figures count the upload as soon as it is answered");
    assert.ok(s1.sd_card.used_size - s0.sd_card.used_size >= data.length, "used_size grew by the file's bytes");
    assert.equal(s1.sd_card.total_size, CARD);
    assert.equal(s1.sd_card.used_size + s1.sd_card.free_size, CARD, "used + free = total");
  });

  test("the file may come in any part with a filename; sub-folders are created", async () => {
    const r = await upload([
      { name: "note", value: "a plain field first" },
      { name: "photo", filename: "albums/2024/summer/beach.jpg", value: "beach bytes" },
    ]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, BODY.uploaded);
    assert.equal(await readFile(join(dev.card, "albums/2024/summer/beach.jpg"), "utf8"), "beach bytes");
    const local = join(work, "tree.jpg");
    await writeFile(local, "tree bytes");
    const c = await curl(["-F", `image=@${local};filename=albums/2025/tree.jpg`, `${dev.url}/upload`]);
    assert.equal(c.status, 200, c.body);
    assert.equal(c.body, BODY.uploaded);
    assert.equal(await readFile(join(dev.card, "albums/2025/tree.jpg"), "utf8"), "tree bytes");
  });

  test("uploading an existing name replaces it whole", async () => {
    const client = api(dev);
    const ok = JSON.parse(BODY.uploaded);
    assert.deepEqual(await client.upload({ name: "replace.txt", data: Buffer.from("a much longer first version of the file") }), ok);
    assert.deepEqual(await client.upload({ name: "replace.txt", data: Buffer.from("short") }), ok);
    assert.equal(await readFile(join(dev.card, "replace.txt"), "utf8"), "short");
  });

  test("file_count is recursive and used_size covers every byte after uploads", async () => {
    const entries = await tree(dev.card);
    const files = entries.filter((e) => !e.endsWith("/"));
    const bytes = files.reduce((n, e) => n + Number(e.slice(e.lastIndexOf(" ") + 1)), 0);
    const s = await eventually(async () => {
      const st = await status();
      return st.sd_card.file_count === files.length ? st : undefined;
    }, 10_000);
    assert.ok(s.sd_card.used_size >= bytes, `used_size ${s.sd_card.used_size} ≥ ${bytes}`);
    assert.ok(s.sd_card.used_size <= bytes + entries.length * 64 * 1024, `used_size ${s.sd_card.used_size} near ${bytes}`);
  });

  test("a multipart body without any file part → 400 JSON; nothing written", async () => {
    const before = await tree(dev.card);
    const r = await upload([{ name: "note", value: "no file here" }]);
    assert.equal(r.status, 400, r.text);
    errorBody(r.text);
    const empty = await upload([{ name: "file", filename: "", value: "nameless" }]);
    assert.equal(empty.status, 400, empty.text);
    errorBody(empty.text);
    assert.deepEqual(await tree(dev.card), before);
  });
});

describe("names that escape the card → 400, nothing written", () => {
  test("'..', absolute, backslash and NUL names", async () => {
    await mkdir(join(dev.card, "inner"), { recursive: true });
    const beforeCard = await tree(dev.card);
    const beforeOutside = await tree(outside);
    const names = [
      "../escape.txt",
      "../../escape.txt",
      "inner/../../escape.txt",
      "inner/../../../../../../tmp/escape.txt",
      "..",
      `${outside}/escape.txt`,
      "/escape.txt",
      "..\\escape.txt",
      "inner\\..\\..\\escape.txt",
      "C:\\escape.txt",
      "esc\0ape.txt",
      "inner/\0/escape.txt",
      "inner/escape.txt\0.jpg",
    ];
    for (const name of names) {
      const r = await upload([{ name: "file", filename: name, value: "should never land" }]);
      assert.equal(r.status, 400, `${JSON.stringify(name)} → ${r.status} ${r.text}`);
      errorBody(r.text);
    }
    assert.deepEqual(await tree(dev.card), beforeCard, "card unchanged");
    assert.deepEqual(await tree(outside), beforeOutside, "outside unchanged");
    assert.equal(await readFile(join(outside, "keep.txt"), "utf8"), "outside the card");
  });

  test("symlinks inside the card pointing out", async () => {
    await symlink(outside, join(dev.card, "door"));
    await symlink(join(outside, "keep.txt"), join(dev.card, "keep-link.txt"));
    try {
      const beforeCard = await tree(dev.card);
      const beforeOutside = await tree(outside);
      for (const name of ["door/escape.txt", "door/keep.txt", "keep-link.txt", "door/new/deep.txt"]) {
        const r = await upload([{ name: "file", filename: name, value: "should never land" }]);
        assert.equal(r.status, 400, `${name} → ${r.status} ${r.text}`);
        errorBody(r.text);
      }
      assert.deepEqual(await tree(dev.card), beforeCard, "card unchanged");
      assert.deepEqual(await tree(outside), beforeOutside, "outside unchanged");
      assert.equal(await readFile(join(outside, "keep.txt"), "utf8"), "outside the card");
    } finally {
      await rm(join(dev.card, "door"));
      await rm(join(dev.card, "keep-link.txt"));
    }
  });

  test("a path through an existing regular file → JSON error, service up", async () => {
    await writeFile(join(dev.card, "plain.txt"), "x");
    const before = await tree(dev.card);
    const r = await upload([{ name: "file", filename: "plain.txt/child.jpg", value: "nope" }]);
    assert.ok([400, 409, 500].includes(r.status), `${r.status} ${r.text}`);
    errorBody(r.text);
    assert.deepEqual(await tree(dev.card), before);
    assert.equal((await call(dev.url, "GET", "/mode/ftp")).text, BODY.modeIsFtp);
  });
});

describe("not enough space → 507, nothing written", () => {
  test("a file larger than the free space, with Content-Length", async () => {
    const before = await tree(dev.card);
    const s0 = await status();
    const local = join(work, "huge.bin");
    await writeFile(local, Buffer.alloc(s0.sd_card.free_size + MiB, 7));
    const r = await curl(["-F", `file=@${local}`, `${dev.url}/upload`]);
    assert.equal(r.status, 507, r.body + r.stderr);
    errorBody(r.body);
    await assert.rejects(api(dev).upload(local, "huge-again.bin"), (e: unknown) => e instanceof DeviceHttpError && e.status === 507);
    assert.deepEqual(
      await eventually(async () => {
        const t = await tree(dev.card);
        return JSON.stringify(t) === JSON.stringify(before) ? t : undefined;
      }, 5_000),
      before,
      "no partial or temp file left",
    );
    // (A file written directly by an earlier test may still be settling into the figures: allow a few bytes.)
    assert.ok((await status()).sd_card.free_size >= s0.sd_card.free_size - 4096, "the refused file took no space");
    await rm(local);
  });

  test("a streamed (chunked) body that outgrows the free space", async () => {
    const before = await tree(dev.card);
    const s0 = await status();
    const boundary = "----framefiStreamBoundary";
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="stream.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const chunk = Buffer.alloc(256 * 1024, 1);
    let left = s0.sd_card.free_size + 2 * MiB;
    let sentHead = false;
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (!sentHead) {
          sentHead = true;
          ctl.enqueue(head);
        } else if (left > 0) {
          left -= chunk.length;
          ctl.enqueue(chunk);
        } else {
          ctl.enqueue(tail);
          ctl.close();
        }
      },
    });
    let status507 = 0;
    let text = "";
    try {
      const res = await fetch(dev.url + "/upload", {
        method: "POST",
        body,
        headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
        duplex: "half",
        signal: AbortSignal.timeout(30_000),
      } as RequestInit);
      status507 = res.status;
      text = await res.text();
    } catch (e) {
      assert.fail(`the server should answer 507 rather than drop the connection: ${String(e)}`);
    }
    assert.equal(status507, 507, text);
    errorBody(text);
    await eventually(async () => JSON.stringify(await tree(dev.card)) === JSON.stringify(before), 5_000);
  });
});

describe("interrupted upload leaves nothing", () => {
  for (const form of ["multipart", "raw"] as const) {
    test(`client connection killed midway (${form === "raw" ? "raw PUT" : "multipart POST"})`, async () => {
      const before = await tree(dev.card);
      const up = openUpload(dev.port, "cut/half.bin", 8 * MiB, form);
      await up.send(Buffer.alloc(2 * MiB, 3));
      await receiving(dev.card);
      up.kill();
      const after = await eventually(async () => {
        const t = await tree(dev.card);
        return JSON.stringify(t) === JSON.stringify(before) ? t : undefined;
      }, 5_000).catch(async () => tree(dev.card));
      assert.deepEqual(after, before, "no partial file, no temp file, no new folder");
      assert.equal((await call(dev.url, "GET", "/mode/ftp")).text, BODY.modeIsFtp, "service still up");
    });
  }
});

describe("streaming, temp names and file names", () => {
  test("the final name appears only when the upload is complete", async () => {
    const up = openUpload(dev.port, "slow/whole.bin", 2 * MiB);
    await up.send(Buffer.alloc(MiB, 5));
    await receiving(dev.card, MiB);
    const midway = await tree(dev.card);
    assert.ok(!midway.some((e) => e.startsWith("slow/whole.bin")), `final name visible before the upload completed: ${midway.join(", ")}`);
    await up.send(Buffer.alloc(MiB, 5));
    const r = await up.finish();
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body, BODY.uploaded);
    const bytes = await readFile(join(dev.card, "slow/whole.bin"));
    assert.equal(bytes.length, 2 * MiB);
    assert.ok(bytes.every((b) => b === 5));
  });

  test("UTF-8 file names are kept as sent (curl sends them raw)", async () => {
    const local = join(work, "utf8.jpg");
    await writeFile(local, "ünïcödé");
    const name = "été/фото 1.jpg";
    const r = await curl(["-F", `file=@${local};filename=${name}`, `${dev.url}/upload`]);
    assert.equal(r.status, 200, r.body);
    assert.equal(await readFile(join(dev.card, name), "utf8"), "ünïcödé");
  });

  test("names with quotes, semicolons, spaces, percent and plus signs are kept (typed client and raw PUT)", async () => {
    const odd = `odd/we;ird "quoted" 100% +plus & 'single'.jpg`;
    assert.deepEqual(await api(dev).upload({ name: odd, data: Buffer.from("odd bytes") }), JSON.parse(BODY.uploaded));
    assert.equal(await readFile(join(dev.card, odd), "utf8"), "odd bytes");
    const raw = "odd/raw 50% +1 & more.jpg";
    const r = await call(dev.url, "PUT", `/upload?filename=${encodeURIComponent(raw)}`, { body: "raw bytes" });
    assert.equal(r.text, BODY.uploaded);
    assert.equal(await readFile(join(dev.card, raw), "utf8"), "raw bytes");
  });

  test("PUT /upload?filename= (the docs' raw form) refuses escaping names too", async () => {
    const before = await tree(dev.card);
    const beforeOutside = await tree(outside);
    for (const q of ["../escape.txt", "%2E%2E%2Fescape.txt", `${encodeURIComponent(outside)}%2Fescape.txt`, "a%00b.txt", "..%5Cescape.txt", ""]) {
      const r = await call(dev.url, "PUT", `/upload?filename=${q}`, { body: "nope" });
      assert.equal(r.status, 400, `filename=${q} → ${r.status} ${r.text}`);
      errorBody(r.text);
    }
    const noName = await call(dev.url, "PUT", "/upload", { body: "nope" });
    assert.equal(noName.status, 400);
    errorBody(noName.text);
    assert.deepEqual(await tree(dev.card), before);
    assert.deepEqual(await tree(outside), beforeOutside);
  });
});

describe("edge cases of names, sizes and races", () => {
  test("an empty file is stored as an empty file", async () => {
    const r = await upload([{ name: "file", filename: "empty/zero.bin", value: "" }]);
    assert.equal(r.status, 200, r.text);
    assert.equal((await stat(join(dev.card, "empty/zero.bin"))).size, 0);
  });

  test("names that cannot be files → 400 JSON, nothing written", async () => {
    await mkdir(join(dev.card, "albums"), { recursive: true });
    const before = await tree(dev.card);
    for (const name of ["x".repeat(300) + ".jpg", "dir/", ".", "./", "albums"]) {
      const r = await upload([{ name: "file", filename: name, value: "bytes" }]);
      assert.ok(r.status === 400 || r.status === 409, `${JSON.stringify(name.slice(0, 40))} → ${r.status} ${r.text}`);
      errorBody(r.text);
    }
    assert.deepEqual(await tree(dev.card), before);
  });

  test("two concurrent uploads to one name leave one of them whole, never a mix", async () => {
    const a = Buffer.alloc(3 * MiB, 0x61);
    const b = Buffer.alloc(3 * MiB, 0x62);
    const [ra, rb] = await Promise.all([
      upload([{ name: "file", filename: "race/same.bin", value: a }]),
      upload([{ name: "file", filename: "race/same.bin", value: b }]),
    ]);
    assert.equal(ra.status, 200, ra.text);
    assert.equal(rb.status, 200, rb.text);
    const got = await readFile(join(dev.card, "race/same.bin"));
    assert.equal(got.length, 3 * MiB);
    assert.ok(got.equals(a) || got.equals(b), "the stored file is one upload, whole");
    assert.deepEqual(await tree(join(dev.card, "race")), [`same.bin ${3 * MiB}`], "no temp files left");
  });

  test("concurrent uploads cannot together overfill the card", async () => {
    const s0 = await status();
    const each = Math.floor(s0.sd_card.free_size * 0.6);
    // All three settle before anything is asserted: one left in flight would change the card under the next tests.
    const settled = await Promise.allSettled([0, 1, 2].map((i) => upload([{ name: "file", filename: `fill/${i}.bin`, value: Buffer.alloc(each, i) }])));
    const rs = settled.map((x) => {
      if (x.status === "rejected") assert.fail(`an upload got no answer: ${String(x.reason)} (${String((x.reason as Error).cause)})`);
      return x.value;
    });
    const ok = rs.filter((r) => r.status === 200).length;
    assert.equal(ok, 1, `exactly one of three 60 % uploads fits; got ${rs.map((r) => r.status).join(", ")}`);
    for (const r of rs.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 507, r.text);
      errorBody(r.text);
    }
    const s1 = await status();
    assert.ok(s1.sd_card.used_size <= s1.sd_card.total_size && s1.sd_card.free_size >= 0);
    assert.equal((await tree(join(dev.card, "fill"))).length, 1, "only the stored file, no leftovers");
    await rm(join(dev.card, "fill"), { recursive: true });
    await eventually(async () => (await status()).sd_card.free_size >= s0.sd_card.free_size - 64 * 1024 || undefined, 6_000, 100);
  });
});

describe("a switch to MSC mode during an upload", () => {
  test("the upload is refused and nothing lands on the card", async () => {
    const before = await tree(dev.card);
    const up = openUpload(dev.port, "during-msc.bin", 2 * MiB);
    await up.send(Buffer.alloc(MiB, 4));
    await receiving(dev.card);
    assert.equal((await post(dev.url, "/mode/msc")).text, BODY.switchedToMsc);
    await eventually(async () => (await status()).mode !== MODE_FTP || undefined, 10_000);
    await up.send(Buffer.alloc(MiB, 4));
    const r = await up.finish();
    assert.notEqual(r.status, 200, `an upload that straddled the switch to MSC answered ${r.status} ${r.body}`);
    if (r.status) assert.equal(r.body, BODY.uploadInMsc);
    await eventually(async () => JSON.stringify(await tree(dev.card)) === JSON.stringify(before) || undefined, 10_000);
    await backToFtp();
  });

  test("a restart during an upload: refused or cut, nothing lands on the card, back in MSC", async () => {
    const before = await tree(dev.card);
    const up = openUpload(dev.port, "during-restart.bin", 2 * MiB);
    await up.send(Buffer.alloc(MiB, 6));
    await receiving(dev.card);
    assert.equal((await post(dev.url, "/device/restart")).text, BODY.restarting);
    void up.send(Buffer.alloc(MiB, 6));
    const r = await up.finish();
    assert.notEqual(r.status, 200, "an upload cut by a restart is not reported stored");
    await eventually(async () => {
      try {
        return (await status()).mode === MODE_MSC || undefined;
      } catch {
        return undefined;
      }
    }, 5_000);
    await eventually(async () => JSON.stringify(await tree(dev.card)) === JSON.stringify(before) || undefined, 10_000);
    await backToFtp();
  });
});

describe("memory stays flat while a big upload streams to disk", () => {
  let big: RunningDevice;
  before(async () => {
    big = await startDevice();
    await post(big.url, "/mode/ftp");
    await eventually(async () => (await api(big).status()).mode === MODE_FTP, 10_000);
  });
  after(async () => {
    await big?.stop();
  });

  const peakRss = async (pid: number): Promise<number> => {
    const m = (await readFile(`/proc/${pid}/status`, "utf8")).match(/VmHWM:\s+(\d+) kB/);
    return Number(m![1]) * 1024;
  };

  test("a 160 MiB upload raises the service's peak RSS by far less than its size", async () => {
    const pid = big.program.child.pid!;
    const before = await peakRss(pid);
    const boundary = "----framefiBigBoundary";
    const size = 160 * MiB;
    const chunk = Buffer.alloc(MiB, 9);
    let sent = 0;
    let stage = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (stage === 0) {
          stage = 1;
          ctl.enqueue(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`));
        } else if (sent < size) {
          sent += chunk.length;
          ctl.enqueue(chunk);
        } else {
          ctl.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
          ctl.close();
        }
      },
    });
    const res = await fetch(big.url + "/upload", {
      method: "POST",
      body,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      duplex: "half",
      signal: AbortSignal.timeout(60_000),
    } as RequestInit);
    assert.equal(await res.text(), BODY.uploaded);
    const grew = (await peakRss(pid)) - before;
    assert.ok(grew < 64 * MiB, `peak RSS grew by ${(grew / MiB).toFixed(1)} MiB for a 160 MiB upload`);
    assert.equal((await stat(join(big.card, "big.bin"))).size, size);
  });
});
