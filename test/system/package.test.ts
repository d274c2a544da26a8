// The package as npm installs it: `npm pack`, then `npm install -g` of the tarball into a temporary prefix gives
// three working commands (webhook, framefi-device, framefi), and the typed client library imports with its types.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readdir, writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { eventually, freePort, removeDir, repoRoot, run, start, tempDir } from "../helpers.js";
import { docBlocks } from "../fixtures/docs.js";

/** The shell blocks of the README's example hooks. */
const readmeExamples = (): string[] => docBlocks("README.md", { heading: "Example hooks (`examples/hooks.json`)", lang: "sh" }).map((b) => b.body);

describe("npm pack, then npm install -g of the tarball", () => {
  let dir: string;
  let prefix: string;
  let installed: string;
  let tarball: string;
  const inPrefix = (name: string): string => join(prefix, "bin", name);

  before(async () => {
    dir = await tempDir("framefi-pack-");
    prefix = join(dir, "prefix");
    // --ignore-scripts: the suite has compiled already (a plain `npm pack` compiles through `prepare`).
    const pack = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], { timeoutMs: 120_000 });
    assert.equal(pack.code, 0, pack.stderr);
    tarball = join(dir, (await readdir(dir)).find((n) => n.endsWith(".tgz"))!);
    // The README's line for a tarball, as written, in the folder that holds it (into this test's prefix).
    const line = docBlocks("README.md", { heading: "Install", lang: "sh" })
      .flatMap((b) => b.body.split("\n"))
      .find((l) => l.startsWith("npm install -g --allow-scripts="));
    assert.ok(line, "the README says how to install the tarball");
    const sh = line.replace("npm install -g ", `npm install -g --prefix '${prefix}' --prefer-offline --no-audit --no-fund `);
    const install = await run("sh", ["-c", sh], { cwd: dir, timeoutMs: 180_000 });
    assert.equal(install.code, 0, install.stderr);
    // npm 11's four lines asking to allow the install step: the README's line allows it, so they never show.
    assert.doesNotMatch(install.stderr, /install-scripts/);
    installed = join(prefix, "lib", "node_modules", "framefi-system");
  });
  after(async () => {
    await removeDir(dir);
  });

  test("the tarball holds the compiled programs, not the tests", async () => {
    const list = await run("tar", ["tzf", tarball]);
    assert.match(list.stdout, /^package\/dist\/src\/client\/api\/index\.js$/m);
    assert.match(list.stdout, /^package\/dist\/src\/client\/api\/index\.d\.ts$/m);
    assert.match(list.stdout, /^package\/native\/spawn-helper\.c$/m);
    assert.doesNotMatch(list.stdout, /^package\/dist\/test\//m);
    assert.doesNotMatch(list.stdout, /^package\/dist\/native\//m, "no binary built on another machine");
  });

  test("the three commands are on the prefix's PATH and run", async () => {
    const webhook = await run(inPrefix("webhook"), ["-version"]);
    assert.equal(webhook.code, 0, webhook.stderr);
    assert.match(webhook.stdout, /^webhook version \d+\.\d+\.\d+\n$/);
    const device = await run(inPrefix("framefi-device"), ["--version"]);
    assert.equal(device.code, 0, device.stderr);
    assert.match(device.stdout, /^framefi-device \d+\.\d+\.\d+\n$/);
    const client = await run(inPrefix("framefi"), ["--version"]);
    assert.equal(client.code, 0, client.stderr);
    assert.match(client.stdout, /^framefi \d+\.\d+\.\d+\n$/);
    for (const [name, flag] of [
      ["webhook", "-help"],
      ["framefi-device", "--help"],
      ["framefi", "--help"],
    ] as const) {
      const help = await run(inPrefix(name), [flag]);
      assert.match(help.stdout + help.stderr, /Usage/, name);
    }
  });

  test("the install built the native helpers where a C compiler is; without one it says so and the programs still work", async () => {
    const cc = await run("sh", ["-c", "command -v cc"]);
    if (cc.code === 0) for (const helper of ["spawn-helper", "sendfile-helper"]) assert.ok(existsSync(join(installed, "dist", "native", helper)), helper);
    const fallback = await run("sh", [join(installed, "native", "build.sh")], { env: { ...process.env, CC: "no-such-compiler" } });
    assert.equal(fallback.code, 0);
    assert.match(fallback.stdout, /no C compiler \(no-such-compiler\) found; the hook server starts commands through child_process\.spawn/);
    assert.match(fallback.stdout, /no C compiler \(no-such-compiler\) found; the device sends large FTP downloads through Node/);
    const webhook = await run(inPrefix("webhook"), ["-version"]);
    assert.equal(webhook.code, 0);
  });

  test("the README's hooks line outside npm start, with the installed commands on PATH, syncs the device", async () => {
    const line = readmeExamples().find((b) => b.includes("webhook -hooks examples/hooks.json"));
    assert.ok(line, "the examples section has the line");
    const [devicePort, ftpPort, hooksPort] = [await freePort(), await freePort(), await freePort()];
    const card = join(dir, "card");
    const photos = join(dir, "photos");
    await mkdir(photos);
    // Real photos: the example hooks prepare them for the frame (--fit).
    await copyFile(join(repoRoot, "examples", "pictures", "forest.jpg"), join(photos, "a.jpg"));
    await copyFile(join(repoRoot, "examples", "pictures", "sea.jpg"), join(photos, "b.jpg"));
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(prefix, "bin")}${delimiter}${process.env.PATH ?? ""}` };
    delete env.FRAMEFI_FTP_PORT;
    const device = start(
      inPrefix("framefi-device"),
      [
        "--host",
        "127.0.0.1",
        "--port",
        String(devicePort),
        "--ftp-port",
        String(ftpPort),
        "--card",
        card,
        "--state",
        join(dir, "state"),
        "--setup-port",
        String(await freePort()),
      ],
      { env },
    );
    const sh = line
      .replaceAll("FRAMEFI_HOOK_SECRET=…", "FRAMEFI_HOOK_SECRET=a-long-hook-secret")
      .replaceAll("FRAMEFI_GITHUB_SECRET=…", "FRAMEFI_GITHUB_SECRET=a-long-github-secret")
      .replace("/srv/photos", photos)
      .replace("frame.local:8080", `127.0.0.1:${devicePort}`)
      .replace("-port 9000", `-ip 127.0.0.1 -port ${hooksPort}`);
    // As typed in the clone, in its own process group so the test can stop the whole line.
    const hooks = spawn("sh", ["-c", sh], { cwd: repoRoot, env, stdio: "ignore", detached: true });
    try {
      await device.waitFor(/web API listening/, 15_000);
      await eventually(async () => (await fetch(`http://127.0.0.1:${hooksPort}/`)).ok, 15_000);
      const r = await fetch(`http://127.0.0.1:${hooksPort}/hooks/sync-frame?secret=a-long-hook-secret`, { method: "POST" });
      const out = await r.text();
      assert.equal(r.status, 200, out);
      assert.match(out, /Waiting for the FTP server at 127\.0\.0\.1:\d+…/);
      assert.match(out, /Sync done: 2 uploaded .*The device is in USB MSC mode\./);
      assert.deepEqual((await readdir(card)).sort(), ["a.jpg", "b.jpg"]);
    } finally {
      process.kill(-hooks.pid!, "SIGTERM");
      await device.stop();
    }
  });

  test("the typed client library imports by the package's name, with its types", async () => {
    const lib = join(prefix, "lib");
    await writeFile(
      join(lib, "check.ts"),
      [
        'import { FrameFiClient, DeviceUnreachableError, type DeviceStatus } from "framefi-system";',
        'const client = new FrameFiClient({ host: "127.0.0.1:1", timeoutMs: 500 });',
        "const status: Promise<DeviceStatus> = client.status();",
        'status.catch((e: unknown) => console.log(e instanceof DeviceUnreachableError ? "unreachable" : String(e)));',
        "",
      ].join("\n"),
    );
    await writeFile(
      join(lib, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          strict: true,
          types: ["node"],
          typeRoots: [join(repoRoot, "node_modules", "@types")],
          skipLibCheck: true,
        },
        files: ["check.ts"],
      }),
    );
    await writeFile(join(lib, "package.json"), JSON.stringify({ type: "module" }));
    const tsc = await run(join(repoRoot, "node_modules", ".bin", "tsc"), ["-p", lib], { timeoutMs: 120_000 });
    assert.equal(tsc.code, 0, tsc.stdout + tsc.stderr);
    const ran = await run(process.execPath, [join(lib, "check.js")]);
    assert.equal(ran.stdout, "unreachable\n", ran.stderr);
  });
});
