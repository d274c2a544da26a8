// `framefi-device --fat-names` makes the folder card accept only what a real FAT32 card holds —
// the rules the USB gadget backend always applies (src/device/card/fat-names.ts) — over HTTP and FTP alike.
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
  const r = await run(
    "curl",
    ["-s", "-o", "/dev/null", "-w", "%{response_code}", "-T", "-", `ftp://user:password@127.0.0.1:${dev.ftpPort}/${encodeURIComponent(name)}`],
    { input: "photo" },
  );
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

  it("a multi-file web upload with parts that are case twins lands none of them (400)", async () => {
    const form = new FormData();
    for (const name of ["group/one.jpg", "group/G.jpg", "group/g.jpg"]) form.append("file", new Blob(["photo"]), name);
    const res = await fetch(`${dev.url}/upload`, { method: "POST", body: form });
    assert.equal(res.status, 400);
    assert.equal(
      ((await res.json()) as { message: string }).message,
      'Invalid file name "group/g.jpg": the card has "G.jpg", and FAT cards ignore case in names; use that spelling.',
    );
    assert.deepEqual(await readdir(join(dev.card, "group")).catch(() => []), [], "all land, or none");
  });

  it("two web uploads at once into folders differing in case: the first folder stays, the other upload gets 400", async () => {
    // Each sends all but the end of its body, so both names are checked while neither folder exists.
    const boundary = "fat-race";
    const open = (name: string): { finish(): Promise<{ status: number; message: string }> } => {
      const req = request(`${dev.url}/upload`, { method: "POST", headers: { "Content-Type": `multipart/form-data; boundary=${boundary}` } });
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: image/jpeg\r\n\r\nphoto`);
      const answer = new Promise<{ status: number; message: string }>((resolve, reject) => {
        req.on("response", (res) => {
          let body = "";
          res
            .setEncoding("utf8")
            .on("data", (t: string) => (body += t))
            .on("end", () => resolve({ status: res.statusCode!, message: (JSON.parse(body) as { message: string }).message }));
        });
        req.on("error", reject);
      });
      return { finish: () => (req.end(`\r\n--${boundary}--\r\n`), answer) };
    };
    const upper = open("Holiday/a.jpg");
    const lower = open("holiday/b.jpg");
    assert.equal((await upper.finish()).status, 200);
    const refused = await lower.finish();
    assert.equal(refused.status, 400);
    assert.match(refused.message, /the card has "Holiday", and FAT cards ignore case in names/);
    assert.deepEqual(
      (await readdir(dev.card)).filter((n) => n.toLowerCase() === "holiday"),
      ["Holiday"],
    );
    assert.deepEqual(await readdir(join(dev.card, "Holiday")), ["a.jpg"]);
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
      assert.match(
        await lowerDone,
        /^553 Invalid file name "race\/case\.jpg": the card has "CASE\.jpg", and FAT cards ignore case in names; use that spelling\.\r\n$/,
      );
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
