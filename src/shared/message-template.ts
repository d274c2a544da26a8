// The message templates of the three programs' errors tables (src/*/errors.ts): `{name}` marks a part the thrower
// fills in, and the type of a template's parts is read from the template itself, so a throw that misses a part or
// adds one does not compile.

/** The names of the parts in a template (braces around text with spaces or quotes, such as JSON, are no part). */
export type PartNames<T> = T extends `${string}{${infer P}}${infer R}` ? (P extends `${string}${" " | '"'}${string}` ? never : P) | PartNames<R> : never;

/** `template` with each `{name}` replaced by its part. */
export function fill(template: string, parts: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(parts[name]));
}
