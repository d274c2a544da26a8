// Go (RE2) regular expressions in hooks files, run with JavaScript's RegExp. Covers what hooks
// files use: leading inline flags such as (?i), (?P<name>…) groups, \A and \z. Matching is
// unanchored, as Go's regexp.MatchString. Compiled once per pattern.
const cache = new Map<string, RegExp>();

export function compileGoRegex(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (re) return re;
  let source = pattern;
  let flags = "";
  const lead = /^\(\?([imsU]+)\)/.exec(source);
  if (lead) {
    source = source.slice(lead[0].length);
    for (const f of lead[1]!) if (f !== "U" && !flags.includes(f)) flags += f;
  }
  source = source.replace(/\(\?P</g, "(?<").replace(/\\A/g, "^").replace(/\\z/g, "$(?![\\s\\S])");
  try {
    re = new RegExp(source, flags);
  } catch (e) {
    throw new Error(`error parsing regexp: ${(e as Error).message}`);
  }
  cache.set(pattern, re);
  return re;
}
