// The message templates of the three programs' errors tables (src/*/errors.ts): `{name}` marks a part the thrower
// fills in, and the type of a template's parts is read from the template itself, so a throw that misses a part or
// adds one does not compile.

/** The names of the parts in a template (braces around text with spaces or quotes, such as JSON, are no part). */
export type PartNames<T> = T extends `${string}{${infer P}}${infer R}` ? (P extends `${string}${" " | '"'}${string}` ? never : P) | PartNames<R> : never;

/** `template` with each `{name}` replaced by its part. */
export function fill(template: string, parts: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(parts[name]));
}

/** An errors table: rows by code, each with its message template. */
type Table = Readonly<Record<string, { readonly message: string }>>;

/** The parts the message of `table`'s row `code` names, each a string or a number. */
export type TableParts<T extends Table, C extends keyof T> = Readonly<Record<PartNames<T[C]["message"]>, string | number>>;

/** A code of `table` with the parts its message names (a union of tuples, so that each code checks its own parts). */
export type TableArgs<T extends Table, C extends keyof T = keyof T> = { [K in C]: [code: K, parts: TableParts<T, K>, options?: ErrorOptions] }[C];

/** The `messageOf` of a table: the message of `code`'s row with its parts filled in. */
export function messagesOf<T extends Table>(table: T): <C extends keyof T>(code: C, parts: TableParts<T, C>) => string {
  return (code, parts) => fill(table[code]!.message, parts);
}
