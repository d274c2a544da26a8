// `framefi-device --fat-names` makes the folder card accept only what a real FAT32 card holds —
// the rules the USB gadget backend always applies (src/device/fat-names.ts) — over HTTP and FTP alike.
import assert from "node:assert/strict";
import { mkdir, readdir } from "node:fs/promises";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually, run, startDevice, type RunningDevice } from "../helpers.js";
import { ftpConnection, type RawFtp } from "../ftp/fixtures/raw.js";

async function upload(dev: RunningDevice, filename: string, body = "photo"): Promise<{ status: number; message: string }> {
  const form = new FormData();
  form.append("file", new Blob([body]), filename);
  const res = await fetch(`${dev.url}/upload`, { method: "POST", body: form });
  return { status: res.status, message: ((await res.json()) as { message: string }).message };
}

/** STOR over FTP with curl; resolves with the server's last reply code. */
async function ftpStore(dev: RunningDevice, name: string): Promise<string> {
  const r = await run("curl", ["-s", "-o", "/dev/null", "-w", "%{response_code}", "-T", "-", `ftp://user:password@127.0.0.1:${dev.ftpPort}/${encodeURIComponent(name)}`], { input: "photo" });
  return r.stdout;
}

async function ftpMode(dev: RunningDevice): Promise<void> {
  await fetch(`${dev.url}/mode/ftp`, { method: "POST" }).then((r) => r.arrayBuffer());
  await eventually(async () => (await upload(dev, "ready.jpg")).status === 200, 10_000, 50);
}

describe("--fat-names on a folder card", () => {
  let dev: RunningDevice;
  before(async () => {
    dev = await startDevice({ args: ["--fat-names", "--boot-delay", "0"] });
    await ftpMode(dev);
  });
  after(() => dev.stop());

  it("refuses characters FAT forbids, with the reason", async () => {
    for (const name of ["photo:1.jpg", "what?.jpg", "a|b.jpg", "a>b.jpg", "star*.jpg", "2024/x<y.jpg", "trailing."]) {
      const r = await upload(dev, name);
      assert.equal(r.status, 400, name);
      assert.match(r.message, /^Invalid file name ".*": FAT cards (cannot hold|drop a dot)/, name);
    }
  });

  it("refuses a name that differs from an existing one only in case, in any folder on the way", async () => {
    assert.equal((await upload(dev, "photos/a.jpg")).status, 200);
    assert.equal((await upload(dev, "photos/a.jpg", "again")).status, 200, "the same spelling replaces the file");
    const twin = await upload(dev, "photos/A.JPG");
    assert.equal(twin.status, 400);
    assert.equal(twin.message, 'Invalid file name "photos/A.JPG": the card has "a.jpg", and FAT cards ignore case in names; use that spelling.');
    assert.match((await upload(dev, "Photos/b.jpg")).message, /the card has "photos"/);
  });

  it("refuses a file of 4 GiB before its body is sent (507)", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${dev.url}/upload?filename=big.mkv`, { method: "PUT", headers: { "Content-Length": String(2 ** 32), Expect: "100-continue" } });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on("continue", () => reject(new Error("the device asked for the body")));
      req.on("error", () => undefined);
      req.flushHeaders();
    });
    assert.equal(status, 507);
  });

  it("FTP refuses the same names with 553 and stores good ones", async () => {
    assert.equal(await ftpStore(dev, "what?.jpg"), "553");
    assert.equal(await ftpStore(dev, "photos/A.jpg"), "553");
    assert.equal(await ftpStore(dev, "photos/c.jpg"), "226");
  });

  it("two uploads at once to names differing in case: the first to land stays, the other gets 553 and leaves nothing", async () => {
    // Both names are checked before their data comes, when neither file exists; the check that counts is at landing.
    const start = async (name: string): Promise<{ raw: RawFtp; data: Socket }> => {
      const raw = await ftpConnection(dev.ftpPort);
      assert.match(await raw.command("USER user"), /^331/);
      assert.match(await raw.command("PASS password"), /^230/);
      const port = Number(/\|\|\|(\d+)\|/.exec(await raw.command("EPSV"))?.[1]);
      const data = connect(port, "127.0.0.1");
      await new Promise((resolve) => data.once("connect", resolve));
      assert.match(await raw.command(`STOR ${name}`), /^150/);
      data.write("photo of " + name);
      return { raw, data };
    };
    await mkdir(join(dev.card, "race"));
    const upper = await start("race/CASE.jpg");
    const lower = await start("race/case.jpg");
    try {
      const upperDone = upper.raw.next((t) => /^\d{3} /m.test(t));
      upper.data.end();
      assert.match(await upperDone, /^226 /);
      const lowerDone = lower.raw.next((t) => /^\d{3} /m.test(t));
      lower.data.end();
      assert.match(await lowerDone, /^553 File name not allowed: the card has "CASE\.jpg", and FAT cards ignore case in names; use that spelling\.\r\n$/);
      assert.deepEqual(await readdir(join(dev.card, "race")), ["CASE.jpg"]);
    } finally {
      for (const side of [upper, lower]) {
        side.raw.socket.destroy();
        side.data.destroy();
      }
    }
  });
});

describe("without --fat-names", () => {
  it("the folder card keeps accepting names FAT cannot hold, as before", async () => {
    const dev = await startDevice({ args: ["--boot-delay", "0"] });
    try {
      await ftpMode(dev);
      assert.equal((await upload(dev, "photo:1.jpg")).status, 200);
      assert.equal(await ftpStore(dev, "what?.jpg"), "226");
    } finally {
      await dev.stop();
    }
  });
});
