// -secure and its companions: Go's TLS names (versions, cipher suites) turned into Node's TLS
// options, with the reference's choices — curves P-521, P-384, P-256, HTTP/1.1 only. Go always
// enables every TLS 1.3 suite; -cipher-suites picks among the others. Whatever the list's order,
// Go's server picks by its own preference (ECDHE before RSA key exchange, AEAD before CBC), and
// prefers ChaCha20 when the client lists it first (a client without AES hardware).
import { constants } from "node:crypto";
import { readFileSync } from "node:fs";
import type { SecureVersion, TlsOptions } from "node:tls";
import { type ErrorArgs, WebhookError } from "../errors.js";

interface Suite {
  /** Go's name, as -cipher-suites and -list-cipher-suites spell it. */
  go: string;
  /** OpenSSL's name, as Node's `ciphers` option spells it. */
  openssl: string;
  /** Highest TLS version the suite works with, as Go's SupportedVersions; TLS 1.3 suites need 1.3. */
  versions: SecureVersion[];
}

const UP_TO_12: SecureVersion[] = ["TLSv1", "TLSv1.1", "TLSv1.2"];
const ONLY_12: SecureVersion[] = ["TLSv1.2"];
const ONLY_13: SecureVersion[] = ["TLSv1.3"];

/** Go's tls.CipherSuites(), in its order. */
const SUITES: Suite[] = [
  { go: "TLS_RSA_WITH_AES_128_CBC_SHA", openssl: "AES128-SHA", versions: UP_TO_12 },
  { go: "TLS_RSA_WITH_AES_256_CBC_SHA", openssl: "AES256-SHA", versions: UP_TO_12 },
  { go: "TLS_RSA_WITH_AES_128_GCM_SHA256", openssl: "AES128-GCM-SHA256", versions: ONLY_12 },
  { go: "TLS_RSA_WITH_AES_256_GCM_SHA384", openssl: "AES256-GCM-SHA384", versions: ONLY_12 },
  { go: "TLS_AES_128_GCM_SHA256", openssl: "TLS_AES_128_GCM_SHA256", versions: ONLY_13 },
  { go: "TLS_AES_256_GCM_SHA384", openssl: "TLS_AES_256_GCM_SHA384", versions: ONLY_13 },
  { go: "TLS_CHACHA20_POLY1305_SHA256", openssl: "TLS_CHACHA20_POLY1305_SHA256", versions: ONLY_13 },
  { go: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", openssl: "ECDHE-ECDSA-AES128-SHA", versions: UP_TO_12 },
  { go: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", openssl: "ECDHE-ECDSA-AES256-SHA", versions: UP_TO_12 },
  { go: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", openssl: "ECDHE-RSA-AES128-SHA", versions: UP_TO_12 },
  { go: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", openssl: "ECDHE-RSA-AES256-SHA", versions: UP_TO_12 },
  { go: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", openssl: "ECDHE-ECDSA-AES128-GCM-SHA256", versions: ONLY_12 },
  { go: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", openssl: "ECDHE-ECDSA-AES256-GCM-SHA384", versions: ONLY_12 },
  { go: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", openssl: "ECDHE-RSA-AES128-GCM-SHA256", versions: ONLY_12 },
  { go: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", openssl: "ECDHE-RSA-AES256-GCM-SHA384", versions: ONLY_12 },
  { go: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", openssl: "ECDHE-RSA-CHACHA20-POLY1305", versions: ONLY_12 },
  { go: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", openssl: "ECDHE-ECDSA-CHACHA20-POLY1305", versions: ONLY_12 },
];

/** Go's cipherSuitesPreferenceOrder (on a machine with AES hardware), TLS 1.3 first. */
const PREFERENCE: string[] = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
  "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
  "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
  "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
  "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
  "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
  "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
  "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
  "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
  "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
  "TLS_RSA_WITH_AES_128_GCM_SHA256",
  "TLS_RSA_WITH_AES_256_GCM_SHA384",
  "TLS_RSA_WITH_AES_128_CBC_SHA",
  "TLS_RSA_WITH_AES_256_CBC_SHA",
];

const VERSIONS: Record<string, SecureVersion> = { "1.0": "TLSv1", "1.1": "TLSv1.1", "1.2": "TLSv1.2", "": "TLSv1.2", "1.3": "TLSv1.3" };
const ORDER: SecureVersion[] = ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

export class TlsConfigError extends WebhookError {
  override readonly name = "TlsConfigError";
  constructor(...args: ErrorArgs<"WEBHOOK_TLS_MIN_VERSION" | "WEBHOOK_TLS_CIPHER_SUITE" | "WEBHOOK_TLS_FILE">) {
    super(...args);
  }
}

/** -tls-min-version's value as Node's name; throws the reference's message for anything else. */
export function minVersion(v: string): SecureVersion {
  const version = VERSIONS[v];
  if (!version) throw new TlsConfigError("WEBHOOK_TLS_MIN_VERSION", { version: v });
  return version;
}

/** -list-cipher-suites: Go's names of the suites usable at or above the minimum version, one per line. */
export function listCipherSuites(min: SecureVersion): string {
  const floor = ORDER.indexOf(min);
  return SUITES.filter((s) => s.versions.some((v) => ORDER.indexOf(v) >= floor))
    .map((s) => `${s.go}\n`)
    .join("");
}

/** -cipher-suites (comma-separated Go names; "" for all) as an OpenSSL cipher string, in Go's preference order. */
function cipherString(list: string, min: SecureVersion): string {
  const chosen =
    list === ""
      ? SUITES
      : list.split(",").map((name) => {
          const suite = SUITES.find((s) => s.go === name);
          if (!suite) throw new TlsConfigError("WEBHOOK_TLS_CIPHER_SUITE", { name });
          return suite;
        });
  const tls13 = SUITES.filter((s) => s.versions === ONLY_13);
  const rank = (s: Suite): number => PREFERENCE.indexOf(s.go);
  const names = [...new Set([...tls13, ...chosen].sort((a, b) => rank(a) - rank(b)).map((s) => s.openssl))];
  // OpenSSL 3 refuses TLS 1.0/1.1 at its default security level; -tls-min-version 1.0 or 1.1 asks for them.
  const legacy = ORDER.indexOf(min) < ORDER.indexOf("TLSv1.2");
  return names.join(":") + (legacy ? ":@SECLEVEL=0" : "");
}

export interface TlsFlags {
  cert: string;
  key: string;
  tlsMinVersion: string;
  cipherSuites: string;
}

/** Node TLS server options for -secure; throws TlsConfigError naming what is wrong. */
export function tlsOptions(flags: TlsFlags): TlsOptions {
  const read = (what: string, path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const reason = err.code === "ENOENT" ? "no such file or directory" : err.message;
      throw new TlsConfigError("WEBHOOK_TLS_FILE", { what, path, reason }, { cause: e });
    }
  };
  const min = minVersion(flags.tlsMinVersion);
  return {
    cert: read("certificate", flags.cert),
    key: read("private key", flags.key),
    minVersion: min,
    ciphers: cipherString(flags.cipherSuites, min),
    ecdhCurve: "P-521:P-384:P-256",
    honorCipherOrder: true,
    secureOptions: constants.SSL_OP_PRIORITIZE_CHACHA,
    ALPNProtocols: ["http/1.1"],
  };
}
