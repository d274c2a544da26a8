// In a real Chromium: a page of another origin (another loopback port, and the
// cross-site name "localhost") tries to switch the mode, darken the display, upload a file and rewrite the setup
// page's settings with no-cors requests, forms and <img>; a name rebound to 127.0.0.1 tries to read the API.
// The device's own panel keeps working.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually, freePort, startDevice, type RunningDevice } from "../helpers.js";
import { chromiumMissing, launchChromium, type Browser } from "./browser.js";

const skip = chromiumMissing();
if (skip) console.log(`# ${skip}`);

/** Serves one attacker page at / on 127.0.0.1:port. */
async function attackerSite(html: () => string): Promise<{ port: number; server: Server }> {
  const port = await freePort();
  const server = createServer((_req, res) => {
    const body = html();
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return { port, server };
}

/** An attacker page that fires no-cors requests at `target` and sets document.title to "done" when all settled. */
function noCorsPage(target: string): string {
  return `<!DOCTYPE html><title>working</title><script>
const go = (path, init) => fetch(${JSON.stringify(target)} + path, { mode: "no-cors", credentials: "include", ...init }).catch(() => undefined);
const fd = new FormData();
fd.append("file", new Blob(["pwned"]), "pwned.txt");
Promise.all([
  go("/mode/ftp", { method: "POST" }),
  go("/display/off", { method: "POST" }),
  go("/led/brightness", { method: "POST", body: "255" }),
  go("/upload", { method: "POST", body: fd }),
  go("/upload?filename=raw-pwned.txt", { method: "PUT", body: "pwned" }),
  go("/panel/button/click", { method: "POST" }),
]).then(() => { document.title = "done"; });
</script>`;
}

describe("cross-site requests from another origin in Chromium", { skip }, () => {
  let dev: RunningDevice;
  let browser: Browser;
  const sites: Server[] = [];

  before(async () => {
    dev = await startDevice();
    browser = await launchChromium(["--host-resolver-rules=MAP rebind.example 127.0.0.1"]);
  });
  after(async () => {
    await browser?.close();
    for (const s of sites) s.close();
    await dev?.stop();
  });

  const state = async (): Promise<string> => {
    const r = await fetch(`${dev.url}/`);
    const s = (await r.json()) as { mode: string; display: { status: string }; led: { brightness: number } };
    return `${s.mode} display ${s.display.status} brightness ${s.led.brightness}`;
  };

  for (const name of ["127.0.0.1", "localhost"]) {
    test(`a page on http://${name}:<other port> changes nothing (mode, display, brightness, uploads, button)`, async () => {
      // FTP mode first (as a script would), so an upload would land if it were let through.
      assert.equal((await fetch(`${dev.url}/mode/ftp`, { method: "POST" })).status, 200);
      await eventually(async () => (await state()).startsWith("Application (FTP Server)"), 5_000);
      const before = await state();
      const site = await attackerSite(() => noCorsPage(dev.url));
      sites.push(site.server);
      const page = await browser.context.newPage();
      const refused: number[] = [];
      page.on("response", (r) => {
        if (r.url().startsWith(dev.url)) refused.push(r.status());
      });
      await page.goto(`http://${name}:${site.port}/`);
      await page.waitForFunction(() => document.title === "done", undefined, { timeout: 30_000 });
      await page.close();
      assert.equal(await state(), before, "nothing changed");
      assert.deepEqual(await readdir(dev.card), [], "no file was uploaded");
      assert.ok(refused.length > 0 && refused.every((s) => s === 403), `every request was refused with 403: ${refused.join(", ")}`);
      assert.equal((await fetch(`${dev.url}/mode/msc`, { method: "POST" })).status, 200, "a script (no Origin) still switches the mode");
    });
  }

  test("a name rebound to 127.0.0.1 (DNS rebinding) gets 403 for the panel and the API; the device's own page works", async () => {
    const page = await browser.context.newPage();
    const rebound = await page.goto(`http://rebind.example:${dev.port}/panel/`);
    assert.equal(rebound?.status(), 403);
    assert.match(await page.content(), /does not name this device/);
    await page.goto(`http://rebind.example:${dev.port}/`);
    assert.doesNotMatch(await page.content(), /sd_card/, "the API's JSON is not readable under a foreign name");
    // The panel under the device's own address: its button (a same-origin POST) still works.
    await page.goto(`${dev.url}/panel/`);
    await page.click("#button");
    await eventually(async () => (await state()).startsWith("Application (FTP Server)"), 5_000);
    await page.click("#button");
    await eventually(async () => (await state()).startsWith("USB MSC"), 5_000);
    await page.close();
  });
});

describe("the setup page against a page of another origin", { skip }, () => {
  let dev: RunningDevice;
  let browser: Browser;
  let site: { port: number; server: Server };

  before(async () => {
    dev = await startDevice({ args: ["--web-user", "owner", "--web-password", "owner-pw"] });
    browser = await launchChromium();
    const r = await fetch(`${dev.url}/wifi/reset`, { method: "POST", headers: { authorization: "Basic " + Buffer.from("owner:owner-pw").toString("base64") } });
    assert.equal(r.status, 200);
    await eventually(async () => (await fetch(`http://127.0.0.1:${dev.setupPort}/`).catch(() => undefined))?.status === 200, 10_000, 100);
    const setup = `http://127.0.0.1:${dev.setupPort}`;
    site = await attackerSite(
      () => `<!DOCTYPE html><title>working</title>
<img src="${setup}/wifisave?s=EvilNet&p=x&web_user=attacker&web_pass=owned">
<iframe name="sink"></iframe>
<form id="f" method="POST" action="${setup}/wifisave" target="sink">
<input name="s" value="EvilNet"><input name="p" value="x"><input name="web_user" value="attacker"><input name="web_pass" value="owned">
</form>
<script>
// The parser may yield before this script: the <img> can have failed already (complete), or fail later.
const img = document.querySelector("img");
const post = () => {
  document.querySelector("iframe").onload = () => { document.title = "done"; };
  document.getElementById("f").submit();
};
if (img.complete) post();
else img.onerror = img.onload = post;
</script>`,
    );
  });
  after(async () => {
    await browser?.close();
    site?.server.close();
    await dev?.stop();
  });

  test("an <img> GET and a cross-site form POST to /wifisave are refused; setup mode and the settings stay", async () => {
    const page = await browser.context.newPage();
    const answers: string[] = [];
    page.on("response", (r) => {
      if (r.url().includes("/wifisave")) answers.push(`${r.request().method()} ${r.status()}`);
    });
    await page.goto(`http://localhost:${site.port}/`);
    await page.waitForFunction(() => document.title === "done", undefined, { timeout: 30_000 });
    await eventually(() => answers.includes("POST 403"), 5_000);
    await page.close();
    // (Chromium may not report the <img>'s answer to the page: opaque-response blocking.)
    assert.ok(answers.includes("POST 403"), `the form POST was refused: ${answers.join(", ")}`);
    assert.ok(
      answers.every((a) => / (403|405)$/.test(a)),
      answers.join(", "),
    );
    const img = await fetch(`http://127.0.0.1:${dev.setupPort}/wifisave?s=EvilNet&p=x&web_user=attacker&web_pass=owned`);
    assert.equal(img.status, 405, "what the <img> asked for: saving needs a POST");
    const form = await fetch(`http://127.0.0.1:${dev.setupPort}/`);
    assert.equal(form.status, 200, "still in setup mode");
    const saved = await readFile(join(dev.state, "settings.json"), "utf8").catch(() => "{}");
    assert.doesNotMatch(saved, /attacker|EvilNet/);
  });
});
