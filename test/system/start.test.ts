// End to end: the launcher that `npm start` runs starts the device service and the hook
// server; the example hooks drive the frame through the real client (`framefi sync` over HTTP and FTP). A wrong
// secret or signature runs nothing; the right one leaves the card equal to the photos folder and the device back
// in USB MSC mode. Ctrl-C stops everything.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { copyFile, readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import sharp from "sharp";
import { eventually, freePort, removeDir, repoRoot, run, start, tempDir, type RunningProgram } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";

const SECRET = "frame-demo-secret";

/** The shell blocks of the README's example hooks. */
const readmeExamples = (): string[] => docBlocks("README.md", { heading: "Example hooks (`examples/hooks.json`)", lang: "sh" }).map((b) => b.body);

/** name → content of every file under `dir`, recursively. */
async function tree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    out.set(path.slice(dir.length + 1), (await readFile(path)).toString("base64"));
  }
  return out;
}

describe("npm start: the whole system", () => {
  let demo: string;
  let launcher: RunningProgram;
  let device: string;
  let hooks: string;
  let devicePort: number;
  let hooksPort: number;

  /** Runs a shell snippet from the README as written, with the default ports replaced by this test's. */
  const shell = (snippet: string): Promise<{ code: number | string; stdout: string; stderr: string }> =>
    run("sh", ["-c", snippet.replaceAll("127.0.0.1:9000", `127.0.0.1:${hooksPort}`).replaceAll("127.0.0.1:8080", `127.0.0.1:${devicePort}`)]);

  before(async () => {
    demo = await tempDir("framefi-demo-");
    const [ftpPort, setupPort] = [await freePort(), await freePort()];
    devicePort = await freePort();
    hooksPort = await freePort();
    device = `http://127.0.0.1:${devicePort}`;
    hooks = `http://127.0.0.1:${hooksPort}`;
    launcher = start(process.execPath, [join(repoRoot, "dist", "src", "start.js")], {
      env: {
        ...process.env,
        FRAMEFI_DEMO_DIR: demo,
        FRAMEFI_DEVICE_PORT: String(devicePort),
        FRAMEFI_HOOKS_PORT: String(hooksPort),
        FRAMEFI_FTP_PORT: String(ftpPort),
        FRAMEFI_SETUP_PORT: String(setupPort),
      },
    });
    await launcher.waitFor(/Ctrl-C stops both\./, 30_000);
  });
  after(async () => {
    await launcher?.stop();
    await removeDir(demo);
  });

  test("npm start runs this launcher", () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.start ?? "", /node dist\/src\/start\.js$/);
  });

  test("it prints what the README's quickstart shows, and the device has a card with sample pictures", async () => {
    const out = launcher.stdout();
    const printed = out.slice(out.indexOf("FrameFi is running:"), out.indexOf("Ctrl-C stops both.") + "Ctrl-C stops both.".length);
    const asInReadme = printed
      .replaceAll(`127.0.0.1:${devicePort}`, "127.0.0.1:8080")
      .replaceAll(`127.0.0.1:${hooksPort}`, "127.0.0.1:9000")
      .replaceAll(relative(process.cwd(), demo), "demo")
      .replace(/FTP port \d+/, "FTP port 2121");
    const [shown] = docBlocks("README.md", { heading: "Quickstart", lang: "text" }).map((b) => b.body);
    assert.equal(asInReadme, shown!.trimEnd());
    const status = (await (await fetch(`${device}/`)).json()) as { mode: string; sd_card: { file_count: number; total_size: number } };
    assert.equal(status.mode, "USB MSC");
    assert.equal(status.sd_card.file_count, 2);
    assert.equal(status.sd_card.total_size, 8 * 1024 ** 3, "an 8 GiB card");
    assert.equal((await fetch(`${device}/panel/`)).status, 200);
  });

  test("sync-frame with a wrong secret runs nothing", async () => {
    const cardBefore = await tree(join(demo, "sdcard"));
    for (const query of ["?secret=wrong-secret", "", "?secret="]) {
      const r = await fetch(`${hooks}/hooks/sync-frame${query}`, { method: "POST" });
      assert.equal(r.status, 403, query);
      assert.equal(await r.text(), "Hook rules were not satisfied.");
    }
    assert.deepEqual(await tree(join(demo, "sdcard")), cardBefore);
    assert.doesNotMatch(launcher.stdout(), /executing/);
    assert.equal(((await (await fetch(`${device}/`)).json()) as { mode: string }).mode, "USB MSC");
  });

  test("sync-frame with the right secret: the card holds the photos folder converted for the frame, the device is back in MSC mode", async () => {
    // The README's curl line, as written.
    const curlLine = readmeExamples().find((b) => b.includes("/hooks/sync-frame"));
    assert.ok(curlLine);
    const r = await shell(curlLine);
    assert.equal(r.code, 0, r.stderr);
    // The hook's profile (--fit 1024x600) makes every photo a JPEG named .jpg; the card's two originals are replaced.
    assert.match(r.stdout, /Sync done: 5 uploaded/);
    const photoNames = [...(await tree(join(demo, "photos"))).keys()].map((n) => n.replace(/\.[^.]*$/, ".jpg")).sort();
    const card = await tree(join(demo, "sdcard"));
    assert.deepEqual([...card.keys()].sort(), photoNames);
    for (const data of card.values()) assert.equal(Buffer.from(data, "base64").subarray(0, 3).toString("hex"), "ffd8ff", "a JPEG");
    // The samples are camera-sized (1600×1200): each lands made for the frame, smaller, and mountain.jpg — stored
    // sideways with EXIF orientation 6 — upright, without the tag.
    for (const [name, data] of card) {
      const made = await sharp(Buffer.from(data, "base64")).metadata();
      assert.ok(made.width <= 1024 && made.height <= 600, `${name}: ${made.width}×${made.height}`);
      assert.equal(made.orientation, undefined, name);
    }
    const sideways = await sharp(join(repoRoot, "examples", "pictures", "mountain.jpg")).metadata();
    assert.deepEqual([sideways.width, sideways.height, sideways.orientation], [1200, 1600, 6]);
    const upright = await sharp(Buffer.from(card.get("mountain.jpg")!, "base64")).metadata();
    assert.deepEqual([upright.width, upright.height], [800, 600]);
    const status = (await (await fetch(`${device}/`)).json()) as { mode: string; sd_card: { file_count: number } };
    assert.equal(status.mode, "USB MSC");
    assert.equal(status.sd_card.file_count, 5);
  });

  test("frame-display turns the display off and on from a JSON field; other values run nothing", async () => {
    const post = (body: object, secret = SECRET): Promise<Response> =>
      fetch(`${hooks}/hooks/frame-display?secret=${secret}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const displayStatus = async (): Promise<string> => ((await (await fetch(`${device}/display/status`)).json()) as { display_status: string }).display_status;
    const off = await shell(readmeExamples().find((b) => b.includes("/hooks/frame-display"))!);
    assert.equal(off.code, 0, off.stderr);
    assert.equal(off.stdout, "Display turned off.\n");
    assert.equal(await displayStatus(), "off");
    let r: Response;
    r = await post({ display: "on" }, "wrong-secret");
    assert.equal(r.status, 403);
    r = await post({ display: "sideways" });
    assert.equal(r.status, 403);
    assert.equal(await displayStatus(), "off");
    r = await post({ display: "on" });
    assert.equal(r.status, 200, await r.text());
    assert.equal(await displayStatus(), "on");
  });

  test("frame-push: a GitHub-signed push syncs; a bad signature runs nothing", async () => {
    await copyFile(join(repoRoot, "examples", "pictures", "sunset.jpg"), join(demo, "photos", "sunset-2.jpg"));
    const body = JSON.stringify({ ref: "refs/heads/main", commits: [] });
    const sign = (secret: string): string => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
    const push = (signature: string): Promise<Response> =>
      fetch(`${hooks}/hooks/frame-push`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-GitHub-Event": "push", "X-Hub-Signature-256": signature },
        body,
      });
    const bad = await push(sign("not-the-secret"));
    // The rules were checked before this answer: a refused request starts nothing, now or later.
    assert.notEqual(bad.status, 200);
    assert.equal(await bad.text(), "Error occurred while evaluating hook rules.");
    assert.equal((await tree(join(demo, "sdcard"))).has("sunset-2.jpg"), false, "nothing ran");

    // The README's signed push, as written.
    const good = await shell(readmeExamples().find((b) => b.includes("/hooks/frame-push"))!);
    assert.equal(good.code, 0, good.stderr);
    assert.equal(good.stdout, "Push received: syncing the frame.\n");
    const photos = await tree(join(demo, "photos"));
    await eventually(async () => {
      const card = await tree(join(demo, "sdcard"));
      const mode = ((await (await fetch(`${device}/`)).json()) as { mode: string }).mode;
      return card.size === photos.size && card.has("sunset-2.jpg") && mode === "USB MSC";
    }, 30_000); // the hook's debounce waits 5 s before the sync starts
  });

  test("Ctrl-C stops both programs cleanly", async () => {
    launcher.child.kill("SIGINT");
    assert.equal(await launcher.exited, 0);
    assert.match(launcher.stdout(), /Stopped\.\n$/);
    await assert.rejects(fetch(`${device}/`));
    await assert.rejects(fetch(`${hooks}/`));
  });
});
