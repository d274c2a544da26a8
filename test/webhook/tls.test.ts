// HTTPS: -secure, -cert, -key, -tls-min-version, -cipher-suites, -list-cipher-suites.
// A certificate is generated here with the openssl CLI; requests are real TLS handshakes.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bin, freePort, removeDir, run, tempDir } from "../helpers.js";
import { fixture, writeHooks } from "./fixtures/harness.js";
import { httpsSend, startWebhook, type Webhook } from "./fixtures/flags.js";

let dir = "";
let cert = "";
let key = "";
let ca: Buffer;
let hooks = "";

before(async () => {
  dir = await tempDir("webhook-tls-");
  cert = join(dir, "cert.pem");
  key = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "2",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { stdio: "ignore" },
  );
  ca = readFileSync(cert);
  hooks = await writeHooks(dir, [
    {
      id: "echo",
      "execute-command": fixture("echo.sh"),
      "include-command-output-in-response": true,
      "pass-arguments-to-command": [{ source: "string", name: "over-tls" }],
    },
  ]);
});
after(() => removeDir(dir));

async function secureServer(extra: string[] = []): Promise<{ w: Webhook; base: string }> {
  const port = await freePort();
  const w = await startWebhook(["-verbose", "-ip", "127.0.0.1", "-port", String(port), "-hooks", hooks, "-secure", "-cert", cert, "-key", key, ...extra]);
  return { w, base: `https://127.0.0.1:${port}` };
}

/** The suite `openssl s_client` (Debian's OpenSSL) negotiates with the server at `base`. */
async function negotiated(base: string, args: string[]): Promise<string> {
  const r = await run("openssl", ["s_client", "-connect", base.replace("https://", ""), ...args], { input: "" });
  // "New, TLSv1.2, Cipher is …" is printed for every handshake (the session block may not be, for TLS 1.3);
  // the version there is the suite's own ("SSLv3" for AES128-SHA).
  const m = /^New, [^,]+, Cipher is (\S+)$/m.exec(r.stdout);
  assert.ok(m, `no suite negotiated:\n${r.stdout}\n${r.stderr}`);
  return m[1]!;
}

describe("-secure", () => {
  let w: Webhook;
  let base = "";
  before(async () => ({ w, base } = await secureServer()));
  after(() => w?.stop());

  test("serves HTTPS with the given certificate and says so", async () => {
    assert.match(w.logs(), /serving hooks on https:\/\/127\.0\.0\.1:\d+\/hooks\/\{id\}/);
    const root = await httpsSend(base + "/", { ca, method: "GET" });
    assert.equal(root.status, 200);
    assert.equal(root.text, "OK");
    const hook = await httpsSend(base + "/hooks/echo", { ca });
    assert.equal(hook.status, 200);
    assert.match(hook.text, /arg1=over-tls/);
  });

  test("the default minimum is TLS 1.2: a 1.2 client is served, a 1.1-only client is refused", async () => {
    const r = await httpsSend(base + "/", { ca, method: "GET", maxVersion: "TLSv1.2" });
    assert.equal(r.tls?.version, "TLSv1.2");
    await assert.rejects(httpsSend(base + "/", { ca, method: "GET", minVersion: "TLSv1", maxVersion: "TLSv1.1", ciphers: "DEFAULT:@SECLEVEL=0" }));
  });

  test("a TLS 1.2 client gets ECDHE with an AEAD suite, in Go's preference order (openssl s_client)", async () => {
    assert.equal(await negotiated(base, ["-tls1_2"]), "ECDHE-RSA-AES128-GCM-SHA256");
    // Listed in the weakest-first order of tls.CipherSuites(): the server's order still wins.
    assert.equal(
      await negotiated(base, ["-tls1_2", "-cipher", "AES128-SHA:AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-GCM-SHA384"]),
      "ECDHE-RSA-AES256-GCM-SHA384",
    );
    // A client that lists ChaCha20 first (no AES hardware) gets it, as from Go.
    assert.equal(await negotiated(base, ["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256"]), "ECDHE-RSA-CHACHA20-POLY1305");
    assert.equal(await negotiated(base, ["-tls1_3"]), "TLS_AES_128_GCM_SHA256");
  });

  test("a client offering only AES128-SHA (RSA key exchange, CBC) is still served, as by the reference", async () => {
    assert.equal(await negotiated(base, ["-tls1_2", "-cipher", "AES128-SHA"]), "AES128-SHA");
  });

  test("speaks HTTP/1.1 only (ALPN), like the reference with HTTP/2 disabled", async () => {
    const out = execFileSync("curl", ["-sS", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_version}", base + "/"], { encoding: "utf8" });
    assert.equal(out, "1.1");
  });

  test("a plain-HTTP request to the HTTPS port gets no hook answer", async () => {
    const r = await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", base.replace("https", "http") + "/hooks/echo"]);
    assert.notEqual(r.stdout, "200");
  });
});

describe("-tls-min-version 1.3", () => {
  let w: Webhook;
  let base = "";
  before(async () => ({ w, base } = await secureServer(["-tls-min-version", "1.3"])));
  after(() => w?.stop());

  test("a TLS 1.3 client is served, a TLS 1.2 client is refused", async () => {
    const ok = await httpsSend(base + "/", { ca, method: "GET" });
    assert.equal(ok.tls?.version, "TLSv1.3");
    await assert.rejects(httpsSend(base + "/", { ca, method: "GET", maxVersion: "TLSv1.2" }));
  });
});

describe("-tls-min-version 1.0", () => {
  let w: Webhook;
  let base = "";
  before(async () => ({ w, base } = await secureServer(["-tls-min-version", "1.0"])));
  after(() => w?.stop());

  test("an old TLS 1.1 client is served", async () => {
    const r = await httpsSend(base + "/", { ca, method: "GET", minVersion: "TLSv1", maxVersion: "TLSv1.1", ciphers: "DEFAULT:@SECLEVEL=0" });
    assert.equal(r.status, 200);
    assert.equal(r.tls?.version, "TLSv1.1");
  });
});

describe("-cipher-suites", () => {
  let w: Webhook;
  let base = "";
  before(async () => ({ w, base } = await secureServer(["-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"])));
  after(() => w?.stop());

  test("TLS 1.2 uses only the named suite (Go name mapped to OpenSSL's)", async () => {
    const r = await httpsSend(base + "/", { ca, method: "GET", maxVersion: "TLSv1.2" });
    assert.equal(r.tls?.cipher, "ECDHE-RSA-AES128-GCM-SHA256");
    await assert.rejects(httpsSend(base + "/", { ca, method: "GET", maxVersion: "TLSv1.2", ciphers: "ECDHE-RSA-AES256-GCM-SHA384" }));
  });

  test("TLS 1.3 suites stay enabled, as in Go", async () => {
    const r = await httpsSend(base + "/", { ca, method: "GET" });
    assert.equal(r.tls?.version, "TLSv1.3");
  });
});

describe("-list-cipher-suites", () => {
  const tls12AndUp = [
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
  ];

  test("prints Go's suite names, one per line, and exits 0", async () => {
    const r = await run(bin("webhook"), ["-list-cipher-suites"]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, tls12AndUp.join("\n") + "\n");
  });

  test("with -tls-min-version 1.3 only the TLS 1.3 suites", async () => {
    const r = await run(bin("webhook"), ["-list-cipher-suites", "-tls-min-version", "1.3"]);
    assert.equal(r.stdout, "TLS_AES_128_GCM_SHA256\nTLS_AES_256_GCM_SHA384\nTLS_CHACHA20_POLY1305_SHA256\n");
  });

  test("every listed suite is accepted by -cipher-suites (each maps to an OpenSSL suite)", async () => {
    const { w } = await secureServer(["-cipher-suites", tls12AndUp.join(",")]);
    await w.stop();
  });
});

describe("bad TLS settings stop the start with a clear message", () => {
  const port = "1"; // never reached: the check comes first

  test("an unknown minimum version", async () => {
    const r = await run(bin("webhook"), ["-hooks", hooks, "-secure", "-cert", cert, "-key", key, "-tls-min-version", "1.4", "-port", port]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error: unknown minimum TLS version: 1\.4/);
  });

  test("an unknown cipher suite", async () => {
    const r = await run(bin("webhook"), ["-hooks", hooks, "-secure", "-cert", cert, "-key", key, "-cipher-suites", "TLS_NOPE", "-port", port]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error: unknown TLS cipher suite: TLS_NOPE/);
  });

  test("a missing certificate file", async () => {
    const r = await run(bin("webhook"), ["-hooks", hooks, "-secure", "-cert", join(dir, "nope.pem"), "-key", key, "-port", port]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error loading the HTTPS certificate .*nope\.pem: no such file or directory/);
  });

  test("a key that does not belong to the certificate", async () => {
    const other = join(dir, "other-key.pem");
    execFileSync("openssl", ["genrsa", "-out", other, "2048"], { stdio: "ignore" });
    const r = await run(bin("webhook"), ["-hooks", hooks, "-secure", "-cert", cert, "-key", other, "-port", port]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error loading the HTTPS certificate and key/);
  });
});
