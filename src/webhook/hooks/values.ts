// Reading request values the way the reference's Argument.Get does: headers by canonical MIME
// name, query and payload by dot paths (a literal key containing dots wins), and the special
// sources (string, request, raw-request-body, entire-*).
import type { Argument, HookRequest } from "./hook.js";
import { JsonNumber, marshalJson, valueToString } from "../go/json.js";
import { decodeBytes } from "../go/bytes.js";
import { canonicalHeaderKey } from "../go/header.js";
import { type ErrorArgs, WebhookError } from "../errors.js";

/** A referenced node does not exist: rules treat it as "no match", never as a failure. */
export class ParameterNodeError extends Error {
  override readonly name = "ParameterNodeError";
  constructor(readonly key: string) {
    super(`parameter node not found: ${key}`);
  }
}

const has = (o: object, k: string): boolean => Object.hasOwn(o, k);

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}

const INDEX = /^\d+$/;

/** Walks `params` along the dot path `s` (GetParameter in the reference). */
function getParameter(s: string, params: unknown): unknown {
  if (Array.isArray(params)) {
    if (params.length === 0) throw new ParameterNodeError(s);
    const dot = s.indexOf(".");
    const head = dot === -1 ? s : s.slice(0, dot);
    if (!INDEX.test(head)) throw new ParameterNodeError(s);
    const idx = Number(head);
    if (idx >= params.length) throw new ParameterNodeError(s);
    return dot === -1 ? params[idx] : getParameter(s.slice(dot + 1), params[idx]);
  }
  if (isMap(params)) {
    if (has(params, s)) return params[s];
    const dot = s.indexOf(".");
    if (dot !== -1) {
      const head = s.slice(0, dot);
      if (has(params, head)) return getParameter(s.slice(dot + 1), params[head]);
    }
  }
  throw new ParameterNodeError(s);
}

/** Replaces an existing node at dot path `s` with `value`; false when the path does not exist. */
export function replaceParameter(s: string, params: unknown, value: unknown): boolean {
  const dot = s.indexOf(".");
  if (Array.isArray(params)) {
    if (dot === -1 || params.length === 0) return false;
    const head = s.slice(0, dot);
    if (!INDEX.test(head) || Number(head) >= params.length) return false;
    return replaceParameter(s.slice(dot + 1), params[Number(head)], value);
  }
  if (!isMap(params)) return false;
  if (dot === -1) {
    if (!has(params, s)) return false;
    params[s] = value;
    return true;
  }
  const head = s.slice(0, dot);
  return has(params, head) ? replaceParameter(s.slice(dot + 1), params[head], value) : false;
}

/**
 * The parts of `payload` that getParameter and replaceParameter reach along `paths`, in the same
 * shape (arrays keep their length, with holes where nothing is read): reading those paths gives
 * what reading them in the whole payload gives.
 */
export function payloadPart(payload: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of paths) copyPath(p, payload, out);
  return out;
}

function copyPath(s: string, from: unknown, to: Record<string, unknown> | unknown[]): void {
  const dot = s.indexOf(".");
  const head = dot === -1 ? s : s.slice(0, dot);
  const step = (key: string | number, value: unknown): void => {
    if (dot === -1) return define(to, key, value);
    const into = Object.hasOwn(to, key) ? (to as Record<string, unknown>)[key] : Array.isArray(value) ? new Array(value.length) : isMap(value) ? {} : value;
    define(to, key, into);
    if (typeof into === "object" && into !== null) copyPath(s.slice(dot + 1), value, into as Record<string, unknown>);
  };
  if (Array.isArray(from)) {
    if (INDEX.test(head) && Number(head) < from.length) step(Number(head), from[Number(head)]);
  } else if (isMap(from)) {
    if (has(from, s)) define(to, s, from[s]); // a literal key with dots: getParameter reads it whole
    if (dot !== -1 && has(from, head)) step(head, from[head]);
  }
}

function define(o: object, k: string | number, value: unknown): void {
  Object.defineProperty(o, k, { value, enumerable: true, writable: true, configurable: true });
}

/** Thrown for a source or request key the reference does not know; rules turn it into a 500. */
class SourceError extends WebhookError {
  override readonly name = "SourceError";
  constructor(...args: ErrorArgs<"WEBHOOK_UNKNOWN_REQUEST_KEY" | "WEBHOOK_NO_SOURCE">) {
    super(...args);
  }
}

/** Returns the argument's value as a string, or throws ParameterNodeError / SourceError. */
export function getArgument(arg: Argument, r: HookRequest): string {
  const name = arg.name ?? "";
  switch (arg.source) {
    case "header":
      return valueToString(getParameter(canonicalHeaderKey(name), r.headers));
    case "url":
    case "query":
      return valueToString(getParameter(name, r.query));
    case "payload":
      return valueToString(getParameter(name, r.payload ?? {}));
    case "string":
      return name;
    case "raw-request-body":
      return decodeBytes(r.rawBody);
    case "request":
      switch (name.toLowerCase()) {
        case "remote-addr":
          return r.remoteAddr;
        case "method":
          return r.method;
        default:
          throw new SourceError("WEBHOOK_UNKNOWN_REQUEST_KEY", { key: JSON.stringify(name) });
      }
    case "entire-payload":
      return marshalJson(r.payload ?? null);
    case "entire-headers":
      return marshalJson(r.headers);
    case "entire-query":
      return marshalJson(r.query);
    default:
      throw new SourceError("WEBHOOK_NO_SOURCE", {});
  }
}

/** Go's "%+v" of an Argument, as the reference prints it in its log lines. */
export function describeArgument(a: Argument): string {
  return `{Source:${a.source ?? ""} Name:${a.name ?? ""} EnvName:${a.envname ?? ""} Base64Decode:${a.base64decode === true}}`;
}
