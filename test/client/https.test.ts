// `framefi --host https://…`: a device behind an HTTPS reverse proxy whose certificate a private CA signed. Node
// trusts such a CA through NODE_EXTRA_CA_CERTS, but reads that file at start, before any JavaScript, on every
// command; bin/framefi hands it on to the https requests instead (its first lines), so a command to a device on
// plain http never loads it. The certificates are made here with the openssl CLI; the proxy forwards to the real
// device.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { FrameFiClient } from "../../src/client/api/index.js";
import { bin, removeDir, run, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { cleanEnv, framefi } from "./fixtures/cli.js";

describe("framefi against a device behind https", () => {
  let dev: RunningDevice;
  let dir: string;
  let proxy: Server;
  let ca: string;
  let otherCa: string;
  let httpsUrl: string;

  before(async () => {
    dev = await startDevice();
    dir = await tempDir("framefi-https-");
    ca = join(dir, "ca.pem");
    const [caKey, key, csr, cert, ext] = ["ca.key", "key.pem", "server.csr", "cert.pem", "san.cnf"].map((f) => join(dir, f));
    const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    execFileSync("openssl", ["req", "-x509", ...ecKey, "-keyout", caKey!, "-out", ca, "-days", "2", "-subj", "/CN=framefi test CA"], { stdio: "ignore" });
    otherCa = join(dir, "other-ca.pem");
    execFileSync("openssl", ["req", "-x509", ...ecKey, "-keyout", join(dir, "other-ca.key"), "-out", otherCa, "-days", "2", "-subj", "/CN=another CA"], {
      stdio: "ignore",
    });
    execFileSync("openssl", ["req", ...ecKey, "-keyout", key!, "-out", csr!, "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
    writeFileSync(ext!, "subjectAltName=IP:127.0.0.1\n");
    execFileSync("openssl", ["x509", "-req", "-in", csr!, "-CA", ca, "-CAkey", caKey!, "-CAcreateserial", "-out", cert!, "-days", "2", "-extfile", ext!], {
      stdio: "ignore",
    });
    proxy = createServer({ key: readFileSync(key!), cert: readFileSync(cert!) }, (req, res) => {
      const upstream = request(`${dev.url}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on("error", () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    httpsUrl = `https://127.0.0.1:${(proxy.address() as { port: number }).port}`;
  });
  after(async () => {
    proxy?.close();
    await dev?.stop();
    await removeDir(dir);
  });

  test("NODE_EXTRA_CA_CERTS naming the CA: the device answers over https", async () => {
    const r = await framefi(["--host", httpsUrl, "status"], { env: { NODE_EXTRA_CA_CERTS: ca } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Mode: +USB MSC$/m);
  });

  test("without it the certificate is not trusted, and the command says so", async () => {
    const r = await framefi(["--host", httpsUrl, "status"], { env: { NODE_EXTRA_CA_CERTS: undefined } });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /^framefi: The device at https:\/\/127\.0\.0\.1:\d+ answered with a certificate that is not trusted here \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)\. If a private CA signed it, name that CA.s certificate file in NODE_EXTRA_CA_CERTS\.$/m,
    );
    assert.equal(r.stdout, "");
  });

  test("with --use-openssl-ca, OpenSSL's store (here SSL_CERT_FILE) stays trusted next to the file, as in Node", async () => {
    const r = await framefi(["--host", httpsUrl, "status"], { env: { NODE_OPTIONS: "--use-openssl-ca", SSL_CERT_FILE: ca, NODE_EXTRA_CA_CERTS: otherCa } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Mode: +USB MSC$/m);
  });

  test("a certificate for another name is not a CA problem: the message does not point at NODE_EXTRA_CA_CERTS", async () => {
    const r = await framefi(["--host", httpsUrl.replace("127.0.0.1", "localhost"), "status"], { env: { NODE_EXTRA_CA_CERTS: ca } });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /answered with a certificate that does not check out \(ERR_TLS_CERT_ALTNAME_INVALID\): check the address, and the certificate's names and dates\./,
    );
    assert.doesNotMatch(r.stderr, /NODE_EXTRA_CA_CERTS/);
  });

  test("the launcher passes every argument on unchanged, run through a symlink (as npm installs it) or by node", async () => {
    const link = join(dir, "framefi-link");
    symlinkSync(bin("framefi"), link);
    const odd = 'a b $HOME "q" * \\ `x`';
    const message = `framefi: --host: "${odd}" is not a device address; use host, host:port or http://host:port.\n`;
    for (const [program, args] of [
      [link, []],
      [process.execPath, [bin("framefi")]],
    ] as const) {
      const r = await run(program, [...args, "--host", odd, "status"], { env: cleanEnv({ NODE_EXTRA_CA_CERTS: ca }) });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr, message);
    }
  });

  test("the library: a client that trusts the file does not lend that trust to another (TLS sessions stay with it)", async () => {
    process.env.FRAMEFI_EXTRA_CA_CERTS = ca;
    try {
      assert.equal((await new FrameFiClient({ host: httpsUrl }).status()).mode, "USB MSC");
    } finally {
      delete process.env.FRAMEFI_EXTRA_CA_CERTS;
    }
    await assert.rejects(new FrameFiClient({ host: httpsUrl }).status(), /answered with a certificate that is not trusted here/);
  });

  test("the file is read for https only: a missing one is a warning there, and nothing at all on plain http", async () => {
    const missing = join(dir, "no-such-ca.pem");
    const plain = await framefi(["--host", dev.url, "status"], { env: { NODE_EXTRA_CA_CERTS: missing } });
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stderr, "", "Node itself warns at start when it reads a missing NODE_EXTRA_CA_CERTS");
    const secure = await framefi(["--host", httpsUrl, "status"], { env: { NODE_EXTRA_CA_CERTS: missing } });
    assert.notEqual(secure.code, 0);
    assert.ok(secure.stderr.includes(`Warning: Ignoring extra certs from \`${missing}\`, load failed: ENOENT`), secure.stderr);
    const notPem = join(dir, "notes.txt");
    writeFileSync(notPem, "not a certificate\n");
    const text = await framefi(["--host", httpsUrl, "status"], { env: { NODE_EXTRA_CA_CERTS: notPem } });
    assert.ok(text.stderr.includes(`Warning: Ignoring extra certs from \`${notPem}\`, load failed: no PEM certificate in it`), text.stderr);
  });
});
