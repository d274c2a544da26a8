// What the HTTP transport and the application behind it share. The transport parses a request's
// head and asks the application to route it; only a request the application accepts has its body
// read (up to -max-body), then handed over; the answer comes back as an HttpResponse.

/** What the transport knows before reading the body. */
export interface RequestHead {
  method: string;
  /** The request target as sent: path and query. */
  url: string;
  /** Node's flat [name, value, name, value, …] list, names as sent. */
  rawHeaders: string[];
  /** "ip:port", IPv6 in brackets. */
  remoteAddr: string;
}

export interface HttpResponse {
  status: number;
  headers: [string, string][];
  /** A message, or a command's output kept byte for byte; an async iterable is streamed (chunked). */
  body: string | Buffer | AsyncIterable<Buffer>;
  /** A 1xx answer sent before this one, with the headers set when it was sent. */
  informational?: { status: number; headers: [string, string][] };
  /** The request's body is still in use until this settles (a command that runs after the answer). */
  bodyInUse?: Promise<unknown>;
}

/** A request the application takes: the transport reads its body and hands it to `handle`. */
export interface Accepted {
  kind: "accepted";
}

export type Routed<A extends Accepted = Accepted> = { kind: "response"; response: HttpResponse } | A;

/** The application behind the transport. */
export interface HttpApp<A extends Accepted = Accepted> {
  /** Step one: decide from the head alone (an answer now, or accept the request and read its body). */
  route(head: RequestHead): Routed<A>;
  /** The answer when an accepted request's body is larger than `limit` bytes. */
  tooLarge(accepted: A, limit: number): HttpResponse;
  /** Step two: the accepted request's body has arrived. */
  handle(accepted: A, body: Buffer): HttpResponse | Promise<HttpResponse>;
}
