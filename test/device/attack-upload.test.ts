// Unauthenticated multipart uploads must never end or hang the device, nor leave a partial file: a device
// without a web user (the default) takes POST /upload from anyone in FTP mode. The first test once ended
// bin/framefi-device with one 4-byte request; the fuzz test sends seeded random mutations of valid bodies.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { eventually, startDevice, type RunningDevice } from "../helpers.js";
import { fuzzCases, fuzzSeed, seeded } from "../fuzz/random.js";
import { multipart } from "../fixtures/http.js";
import { call, get } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";
import { MODE_FTP } from "./fixtures/contract.js";

let dev: RunningDevice;

before(async () => {
  dev = await startDevice();
  await api(dev).setMode("ftp");
  await eventually(async () => (await api(dev).status()).mode === MODE_FTP, 5_000);
});
after(() => dev?.stop());

const upload = (body: Buffer | string, boundary: string) =>
  call(dev.url, "POST", "/upload", { body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, timeoutMs: 10_000 });

/** Every file under the card folder, relative, with the temp files of uploads in progress among them. */
async function cardFiles(dir = dev.card, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...(await cardFiles(join(dir, e.name), `${prefix}${e.name}/`)));
    else out.push(prefix + e.name);
  }
  return out;
}

async function stillServing(): Promise<void> {
  assert.equal(dev.program.child.exitCode, null, `the device exited:\n${dev.program.stderr()}`);
  assert.equal((await get(dev.url, "/")).status, 200);
}

describe("multipart uploads from anyone", () => {
  test("a file part cut before its closing boundary (4 bytes) gets 400, stores nothing, and the device stays up", async () => {
    const r = await upload('--XyZ\r\nContent-Disposition: form-data; name="f"; filename="a.jpg"\r\n\r\nAAAA', "XyZ");
    assert.equal(r.status, 400, r.text);
    assert.match(JSON.parse(r.text).message, /^Malformed multipart request: Unexpected end of form/);
    await stillServing();
    assert.deepEqual(await cardFiles(), []);
  });

  test("a second file cut short after a whole first one stores neither", async () => {
    const r = await upload(
      '--B\r\nContent-Disposition: form-data; name="f"; filename="one.jpg"\r\n\r\nfirst\r\n' +
        '--B\r\nContent-Disposition: form-data; name="g"; filename="two.jpg"\r\n\r\nsecond',
      "B",
    );
    assert.equal(r.status, 400, r.text);
    await stillServing();
    assert.deepEqual(await cardFiles(), []);
  });

  test("seeded random mutations of upload bodies all get an answer; the card holds only whole files", async () => {
    const seed = fuzzSeed(0x75706c64);
    const rnd = seeded(seed);
    const cases = fuzzCases(200);
    const boundaries = ["X", "XyZ", "----b", '"q"', "-".repeat(70)];
    const sent = new Map<string, Buffer>();
    for (let i = 0; i < cases; i++) {
      const boundary = rnd.pick(boundaries);
      const content = rnd.bytes(1 + rnd.int(300));
      const name = `f${i}.jpg`;
      sent.set(name, content);
      const { body } = multipart(
        [
          { name: "note", value: "x" },
          { name: "file", value: content, filename: name, contentType: "image/jpeg" },
        ],
        boundary,
      );
      let b = Buffer.from(body);
      const ops = 1 + rnd.int(3);
      for (let k = 0; k < ops; k++) {
        const at = rnd.int(b.length + 1);
        switch (rnd.int(5)) {
          case 0:
            b = b.subarray(0, at);
            break;
          case 1:
            if (b.length) b[Math.min(at, b.length - 1)] = rnd.int(256);
            break;
          case 2:
            b = Buffer.concat([
              b.subarray(0, at),
              Buffer.from(rnd.pick([`--${boundary}\r\n`, `--${boundary}--\r\n`, `\r\n--${boundary}`, "\n"])),
              b.subarray(at),
            ]);
            break;
          case 3:
            b = Buffer.concat([b.subarray(0, at), rnd.bytes(rnd.int(16)), b.subarray(at)]);
            break;
          default:
            b = Buffer.concat([b.subarray(0, at), b.subarray(rnd.int(b.length + 1)), b.subarray(at)]);
        }
      }
      const where = `case ${i} (FUZZ_SEED=${seed})`;
      let status = 0;
      try {
        status = (await upload(b, boundary)).status;
      } catch (e) {
        assert.fail(`${where}: no answer: ${(e as Error).message}\n${dev.program.stderr()}`);
      }
      assert.ok([200, 400, 413, 507].includes(status), `${where}: status ${status}`);
    }
    await stillServing();
    // No upload's temp file is left, and a file that landed was stored from a body the parser accepted whole.
    const files = await cardFiles();
    assert.deepEqual(
      files.filter((f) => f.split("/").some((s) => s.startsWith(".framefi-upload-"))),
      [],
      "temp files left behind",
    );
  });
});
