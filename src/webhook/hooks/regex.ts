// Go's regular expressions (RE2 syntax and semantics, linear-time matching) through re2js, a
// port of Go's regexp package. Matching is unanchored, as Go's regexp.MatchString.
import { RE2JS } from "re2js";
import { encodeBytes, hasRawBytes } from "../go/bytes.js";

function compile(pattern: string): RE2JS | Error {
  try {
    return RE2JS.compile(pattern);
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

/**
 * The patterns of a hook set's regex rules, each compiled once when the set is made. A pattern Go
 * refuses keeps its error ("error parsing regexp: …"), thrown when a request needs it: the reference
 * compiles at request time, so a bad pattern fails its requests, not the load.
 */
export class GoRegexes {
  private readonly compiled = new Map<string, RE2JS | Error>();

  constructor(patterns: Iterable<string>) {
    for (const p of patterns) if (!this.compiled.has(p)) this.compiled.set(p, compile(p));
  }

  /** regexp.MatchString(pattern, s); bytes that are not UTF-8 match as Go sees them (one U+FFFD each). */
  match(pattern: string, s: string): boolean {
    // A pattern of another set (a request routed just before a reload) is compiled for this match alone.
    const re = this.compiled.get(pattern) ?? compile(pattern);
    if (re instanceof Error) throw re;
    return hasRawBytes(s) ? re.test(encodeBytes(s)) : re.test(s);
  }
}
