// Go's regular expressions (RE2 syntax and semantics, linear-time matching) through re2js, a
// port of Go's regexp package. Matching is unanchored, as Go's regexp.MatchString. Compiled once
// per pattern; a pattern Go refuses throws Go's "error parsing regexp: …" message.
import { RE2JS } from "re2js";
import { encodeBytes, hasRawBytes } from "../go/bytes.js";

const cache = new Map<string, RE2JS>();

function compileGoRegex(pattern: string): RE2JS {
  let re = cache.get(pattern);
  if (re) return re;
  re = RE2JS.compile(pattern);
  if (cache.size < 10_000) cache.set(pattern, re);
  return re;
}

/** regexp.MatchString(pattern, s); bytes that are not UTF-8 match as Go sees them (one U+FFFD each). */
export function matchGoRegex(pattern: string, s: string): boolean {
  const re = compileGoRegex(pattern);
  return hasRawBytes(s) ? re.test(encodeBytes(s)) : re.test(s);
}
