// --help lists every flag, each flag also works as a FRAMEFI_… environment variable,
// --config FILE, the card folder is created when missing.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { bin, freePort, removeDir, repoRoot, run, startDevice, tempDir } from "../helpers.js";
import { call } from "./fixtures/http.js";
import { api } from "./fixtures/device.js";

const FLAGS = [
  "--host",
  "--port",
  "--card",
  "--card-size",
  "--state",
  "--web-user",
  "--web-password",
  "--ftp-user",
  "--ftp-password",
  "--ftp-port",
  "--setup-port",
  "--mqtt-url",
  "--config",
  "--ftp-passive-ports",
  "--ftp-public-address",
  "--mqtt-user",
  "--mqtt-password",
  "--mqtt-client-id",
  "--mqtt-topic-prefix",
  "--mqtt-discovery-prefix",
];

const total = async (url: string, auth?: readonly [string, string]): Promise<number> => (await api(url, auth).status()).sd_card.total_size;

let folder: string;
before(async () => {
  folder = await tempDir("framefi-cli-");
});
after(async () => {
  await removeDir(folder);
});

describe("--help", () => {
  test("exits 0 and lists every flag", async () => {
    const r = await run(bin("framefi-device"), ["--help"], { timeoutMs: 10_000 });
    assert.equal(r.code, 0, r.stderr);
    for (const f of FLAGS) assert.match(r.stdout, new RegExp(`${f}(?![-\\w])`), `--help lists ${f}`);
  });

  test("bad FTP and MQTT values are refused with a clear error", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--ftp-passive-ports", "50100-50000"], /--ftp-passive-ports must be a range LOW-HIGH/],
      [["--ftp-passive-ports", "50000"], /--ftp-passive-ports must be a range LOW-HIGH/],
      [["--ftp-public-address", "frame.local"], /--ftp-public-address must be an IPv4 address/],
      [["--mqtt-topic-prefix", "frames/#"], /--mqtt-topic-prefix must be a non-empty MQTT topic without # or \+/],
      [["--mqtt-discovery-prefix", ""], /--mqtt-discovery-prefix must be a non-empty MQTT topic/],
    ];
    for (const [args, message] of cases) {
      const r = await run(bin("framefi-device"), args, { timeoutMs: 10_000 });
      assert.equal(r.code, 2, args.join(" "));
      assert.match(r.stderr, message);
    }
  });

  test("an unknown flag is refused with a clear error", async () => {
    const r = await run(bin("framefi-device"), ["--no-such-flag"], { timeoutMs: 10_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--no-such-flag/);
  });
});

describe("environment variables", () => {
  test("FRAMEFI_* set host, port, card, card size, state, web credentials, setup and FTP ports", async (t) => {
    const port = await freePort();
    const card = join(folder, "env-card/does/not/exist/yet");
    const dev = await startDevice({
      bare: true,
      port,
      env: {
        FRAMEFI_HOST: "127.0.0.1",
        FRAMEFI_PORT: String(port),
        FRAMEFI_CARD: card,
        FRAMEFI_CARD_SIZE: "16MiB",
        FRAMEFI_STATE: join(folder, "env-state"),
        FRAMEFI_WEB_USER: "envuser",
        FRAMEFI_WEB_PASSWORD: "envpass",
        FRAMEFI_SETUP_PORT: String(await freePort()),
        FRAMEFI_FTP_PORT: String(await freePort()),
        FRAMEFI_FTP_USER: "ftpenv",
        FRAMEFI_FTP_PASSWORD: "ftpenvpw",
        FRAMEFI_MQTT_URL: "mqtt://envmq:envmqpw@127.0.0.1:9",
      },
    });
    t.after(() => dev.stop());
    assert.ok((await stat(card)).isDirectory(), "card folder created");
    assert.equal((await call(dev.url, "GET", "/")).status, 401, "FRAMEFI_WEB_USER protects the API");
    assert.equal(await total(dev.url, ["envuser", "envpass"]), 16 * 1024 ** 2);
    // The broker attempt (port 9 refuses) is what could log the MQTT password: wait until it has logged its failure.
    await dev.program.waitFor(/MQTT connection to .* failed .*retrying every/, 10_000);
    const out = dev.program.stdout() + dev.program.stderr();
    for (const secret of ["envpass", "ftpenvpw", "envmqpw"]) assert.ok(!out.includes(secret), `${secret} logged`);
  });

  test("precedence: flag, then environment, then config file", async (t) => {
    const file = join(folder, "precedence.json");
    await writeFile(file, JSON.stringify({ "card-size": "48MiB", orientation: 2, brightness: 20 }));
    const dev = await startDevice({
      args: ["--config", file, "--card-size", "40MiB"],
      env: { FRAMEFI_CARD_SIZE: "16MiB", FRAMEFI_ORIENTATION: "3" },
    });
    t.after(() => dev.stop());
    const s = await api(dev).status();
    assert.equal(s.sd_card.total_size, 40 * 1024 ** 2, "flag over environment and file");
    assert.equal(s.display.orientation, 3, "environment over file (and --orientation/FRAMEFI_ORIENTATION shows in GET /)");
    assert.equal(s.led.brightness, 20, "file over default");
  });
});

describe("--config FILE", () => {
  test("a JSON config file sets the same settings as the flags", async (t) => {
    const port = await freePort();
    const file = join(folder, "device.json");
    await writeFile(
      file,
      JSON.stringify({
        host: "127.0.0.1",
        port,
        card: join(folder, "cfg-card"),
        "card-size": "48MiB",
        state: join(folder, "cfg-state"),
        "web-user": "cfguser",
        "web-password": "cfgpass",
        "setup-port": await freePort(),
        "ftp-port": await freePort(),
      }),
    );
    const dev = await startDevice({ bare: true, port, args: ["--config", file] });
    t.after(() => dev.stop());
    assert.equal((await call(dev.url, "GET", "/")).status, 401);
    assert.equal(await total(dev.url, ["cfguser", "cfgpass"]), 48 * 1024 ** 2);
    assert.ok((await stat(join(folder, "cfg-card"))).isDirectory());
  });

  test("a missing or broken config file is refused with a clear error naming it", async () => {
    const broken = join(folder, "broken.json");
    await writeFile(broken, "{ not json");
    for (const f of [join(folder, "missing.json"), broken]) {
      const r = await run(bin("framefi-device"), ["--config", f, "--port", "0", "--card", join(folder, "x"), "--state", join(folder, "y")], {
        timeoutMs: 10_000,
      });
      assert.notEqual(r.code, 0, `--config ${f} should fail`);
      assert.ok(r.stderr.includes(f), `error names the file: ${r.stderr}`);
    }
  });
});

describe("secrets in a broken config file", () => {
  test("the parse error does not quote the file's text (it may hold passwords)", async () => {
    const file = join(folder, "leaky.json");
    await writeFile(file, '{"web-user": "admin", "web-password": hunter2-secret}');
    const r = await run(bin("framefi-device"), ["--config", file, "--port", "0", "--card", join(folder, "lk"), "--state", join(folder, "lks")], {
      timeoutMs: 10_000,
    });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(file), "names the file");
    assert.ok(!(r.stdout + r.stderr).includes("hunter2"), `the password leaks into the error: ${r.stderr}`);
  });
});

describe("secrets in a bad --mqtt-url", () => {
  test("the error does not echo the URL's password", async () => {
    for (const url of ["mqtt://u:mq-secret-pw@host:notaport", "http://u:mq-secret-pw@host:1883"]) {
      const r = await run(bin("framefi-device"), ["--mqtt-url", url, "--port", "0", "--card", join(folder, "mq"), "--state", join(folder, "mqs")], {
        timeoutMs: 10_000,
      });
      assert.notEqual(r.code, 0, `${url} should be refused`);
      assert.match(r.stderr, /mqtt-url/);
      assert.ok(!(r.stdout + r.stderr).includes("mq-secret-pw"), `the password leaks: ${r.stderr}`);
    }
  });
});

describe("display orientation", () => {
  test("an orientation outside 0–3 is refused", async () => {
    const r = await run(bin("framefi-device"), ["--orientation", "7", "--port", "0", "--card", join(folder, "o"), "--state", join(folder, "os")], {
      timeoutMs: 10_000,
    });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /orientation/);
  });
});

describe("defaults", () => {
  test("the card folder defaults to ./sdcard, created if missing", async (t) => {
    const cwd = join(folder, "cwd");
    await mkdir(cwd);
    const port = await freePort();
    const dev = await startDevice({
      bare: true,
      cwd,
      port,
      args: [
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--state",
        join(folder, "d-state"),
        "--setup-port",
        String(await freePort()),
        "--ftp-port",
        String(await freePort()),
      ],
    });
    t.after(() => dev.stop());
    assert.ok((await stat(join(cwd, "sdcard"))).isDirectory());
  });
});

describe("a fault nobody catches", () => {
  const preload = pathToFileURL(join(repoRoot, "dist/test/device/fixtures/fault-on-signal.js")).href;
  for (const [fault, said] of [
    ["throw", /framefi-device: unexpected error, exiting: Error: an exception nobody catches \(injected by the test\)\n/],
    ["reject", /framefi-device: unhandled promise rejection, exiting: Error: a rejection nobody handles \(injected by the test\)\n/],
  ] as const) {
    test(`${fault}: the device says why and exits 1 (a supervisor restarts it), instead of running on in an unknown state`, async (t) => {
      const dev = await startDevice({ env: { FAULT: fault, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${preload}`.trim() } });
      t.after(() => dev.stop());
      dev.program.child.kill("SIGUSR2");
      await dev.program.waitFor(said);
      assert.equal(await dev.program.exited, 1);
    });
  }
});
