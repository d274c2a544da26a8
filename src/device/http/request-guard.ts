// What a browser could be tricked into: requests from a page of another site (CSRF) and pages of another site
// whose name was pointed at the device (DNS rebinding). Scripts, curl and Home Assistant send no Origin or
// Sec-Fetch-Site and name the device by its address or a name it knows, so they pass untouched.
import type { IncomingMessage, ServerResponse } from "node:http";
import { hostname } from "node:os";
import { isIP } from "node:net";
import { sendErrorEarly } from "./answers.js";

/** Which Host values name the device. */
export interface HostPolicy {
  /** Names (lower case, no port) the device answers besides IP literals and localhost names; "*" = any. */
  names: ReadonlySet<string>;
}

/**
 * The device's names: every IP literal (a rebinding attack needs a name), "localhost" and "*.localhost",
 * this machine's host name and its ".local" mDNS form, the listen address when it is a name, and `extra`
 * (--allowed-host; "*" turns the check off).
 */
export function hostPolicy(listenHost: string, extra: readonly string[]): HostPolicy {
  const own = hostname().toLowerCase();
  const names = new Set([own, `${own}.local`, ...extra.map((n) => n.toLowerCase().replace(/\.$/, ""))]);
  if (listenHost !== "" && isIP(listenHost) === 0) names.add(listenHost.toLowerCase());
  return { names };
}

/** The host part of a Host header or an origin's authority, lower case, without port or IPv6 brackets. */
function hostOf(authority: string): string {
  const a = authority.trim().toLowerCase();
  if (a.startsWith("[")) return a.slice(1, a.indexOf("]") < 0 ? undefined : a.indexOf("]"));
  const colon = a.lastIndexOf(":");
  return (colon >= 0 ? a.slice(0, colon) : a).replace(/\.$/, "");
}

/** Whether the request's Host header names the device (a request without one, HTTP/1.0 style, does). */
function namesDevice(policy: HostPolicy, host: string | undefined): boolean {
  if (host === undefined || policy.names.has("*")) return true;
  const h = hostOf(host);
  if (isIP(h) !== 0) return true;
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  return policy.names.has(h);
}

/** The Host header as a URL authority (lower case, default port dropped), "" when it is not one. */
function authorityOf(host: string): string {
  try {
    return new URL(`http://${host}`).host;
  } catch {
    return "";
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Why a browser-sent request that changes something must be refused, or undefined when it may pass: the
 * browser says it comes from another site (Sec-Fetch-Site), or its Origin is not the device's own.
 */
function crossSiteReason(req: IncomingMessage): string | undefined {
  if (SAFE_METHODS.has(req.method ?? "GET")) return undefined;
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none") return `the browser marks it as sent from another site (Sec-Fetch-Site: ${site})`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  let authority: string;
  try {
    authority = new URL(origin).host;
  } catch {
    return `it comes from an opaque origin (Origin: ${origin.slice(0, 100)})`;
  }
  if (authority !== authorityOf(req.headers.host ?? "")) return `it comes from another origin (Origin: ${origin.slice(0, 100)})`;
  return undefined;
}

/**
 * Answers 403 and returns true when the request does not name the device or is a browser's cross-site request
 * that would change something; returns false when it may go on.
 */
export function refuseForeign(req: IncomingMessage, res: ServerResponse, policy: HostPolicy): boolean {
  if (!namesDevice(policy, req.headers.host)) {
    const host = (req.headers.host ?? "").slice(0, 100);
    const name = hostOf(host).replace(/[^a-z0-9.-]/g, "") || "NAME";
    sendErrorEarly(req, res, 403, `Forbidden: the host name "${host}" does not name this device; use its IP address or start it with --allowed-host ${name}.`);
    return true;
  }
  const crossSite = crossSiteReason(req);
  if (crossSite) {
    sendErrorEarly(
      req,
      res,
      403,
      `Forbidden: a ${req.method} from a web page of another site is refused, since ${crossSite}; open the device's own page or call the API directly.`,
    );
    return true;
  }
  return false;
}
