// The Go values a template works with, and how they map to JavaScript:
//   string → string, int → bigint, float64 → number, bool → boolean,
//   []interface{} → array, map[string]interface{} → plain object,
//   nil interface → null, "no value" (an invalid reflect.Value) → undefined.
// Numbers in data passed from JavaScript are float64, as encoding/json would make them.

export type GoValue = undefined | null | string | boolean | bigint | number | GoValue[] | GoMap;
export interface GoMap {
  [key: string]: GoValue;
}

export const isMap = (v: GoValue): v is GoMap => typeof v === "object" && v !== null && !Array.isArray(v);

/** Go's reflect type name, as it appears in error messages and %T. */
export function typeName(v: GoValue): string {
  if (v === undefined || v === null) return "<nil>";
  if (Array.isArray(v)) return "[]interface {}";
  switch (typeof v) {
    case "string":
      return "string";
    case "bigint":
      return "int";
    case "number":
      return "float64";
    case "boolean":
      return "bool";
    default:
      return "map[string]interface {}";
  }
}

/** Go's template truth: false, 0, nil, and empty strings, slices and maps are false. */
export function isTrue(v: GoValue): boolean {
  if (v === undefined || v === null) return false;
  if (Array.isArray(v)) return v.length > 0;
  switch (typeof v) {
    case "string":
      return v.length > 0;
    case "bigint":
      return v !== 0n;
    case "number":
      return v !== 0;
    case "boolean":
      return v;
    default:
      return Object.keys(v).length > 0;
  }
}

/** Go compares strings byte by byte (UTF-8), not by UTF-16 units. */
export function compareStrings(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Map keys in the order Go's fmt and range visit them. */
export function sortedKeys(m: GoMap): string[] {
  return Object.keys(m).sort(compareStrings);
}

/** Checks that data handed in from JavaScript is made only of values a template can use. */
export function toGoValue(data: unknown, path = "data"): GoValue {
  if (data === undefined || data === null) return null;
  if (Array.isArray(data)) return data.map((d, i) => toGoValue(d, `${path}[${i}]`));
  switch (typeof data) {
    case "string":
    case "bigint":
    case "number":
    case "boolean":
      return data;
    case "object": {
      const proto = Object.getPrototypeOf(data) as unknown;
      if (proto === Object.prototype || proto === null) {
        const m: GoMap = {};
        for (const [k, v] of Object.entries(data)) m[k] = toGoValue(v, `${path}.${k}`);
        return m;
      }
    }
  }
  throw new TypeError(`template data at ${path} is not a string, number, boolean, array or plain object`);
}
