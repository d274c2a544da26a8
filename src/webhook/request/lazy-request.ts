// The request as rules and commands read it, each part decoded on first use.
import type { HookRequest } from "../hooks/hook.js";
import { parseFormPayload, parseHeaders, parseJsonPayload, parseQuery, parseXmlPayload, type Payload } from "./request.js";
import type { RequestHead } from "../http/contract.js";
import type { Log, LogFields } from "../log/log.js";

const EMPTY = Buffer.alloc(0);

export type BodyKind = "json" | "form" | "xml" | "multipart" | "other";

/** What the request is read from: its head, its id and query, the fields of its log lines. */
export interface RequestSource {
  rid: string;
  head: RequestHead;
  query: string;
  fields: LogFields;
}

/**
 * The request as rules and commands read it. Headers, query and payload are each decoded on
 * first use: many hooks read none of them (getters on the class, not per-request closures).
 */
export class LazyRequest implements HookRequest {
  readonly id: string;
  readonly method: string;
  readonly remoteAddr: string;
  /** The body as received, for every content type (the reference keeps none of a multipart body). */
  readonly rawBody: Buffer;
  private parsedHeaders: Record<string, unknown> | undefined;
  private parsedQuery: Record<string, unknown> | undefined;
  private parsedPayload: Payload;
  private payloadRead: boolean;
  private readonly payloadBody: Buffer;

  constructor(
    private readonly m: RequestSource,
    readonly contentType: string,
    private readonly kind: BodyKind,
    body: Buffer,
    readonly allowSignatureErrors: boolean,
    private readonly log: Log,
  ) {
    this.id = m.rid;
    this.method = m.head.method;
    this.remoteAddr = m.head.remoteAddr;
    this.rawBody = body;
    // Go does not read a body whose type starts with "multipart/form-data;" before parsing it.
    this.payloadBody = contentType.startsWith("multipart/form-data;") ? EMPTY : body;
    this.payloadRead = kind === "multipart";
  }

  get headers(): Record<string, unknown> {
    return (this.parsedHeaders ??= parseHeaders(this.m.head.rawHeaders));
  }

  get query(): Record<string, unknown> {
    return (this.parsedQuery ??= parseQuery(this.m.query).values);
  }

  get payload(): Payload {
    if (!this.payloadRead) {
      this.payloadRead = true;
      this.parsedPayload = this.readPayload();
    }
    return this.parsedPayload;
  }

  set payload(v: Payload) {
    this.payloadRead = true;
    this.parsedPayload = v;
  }

  private readPayload(): Payload {
    try {
      if (this.kind === "json") return parseJsonPayload(this.payloadBody);
      if (this.kind === "form") return parseFormPayload(this.payloadBody);
      if (this.kind === "xml") return parseXmlPayload(this.payloadBody);
      if (this.log.enabled)
        this.log.print(`[${this.id}] error parsing body payload due to unsupported content type header: ${this.contentType}`, this.m.fields);
    } catch (e) {
      this.log.print(`[${this.id}] ${(e as Error).message}`, this.m.fields);
    }
    return undefined;
  }
}
