// `webhook -validate`: load every hooks file as the server would (with -template when given) and
// print each problem as "file:line: hook #n (id "x"): what is wrong", for CI and pre-commit hooks.
// Beyond what stops a start, it reports what the reference accepts silently but is almost always
// a mistake: keys no field reads (a typo such as "trigger_rule" drops the rule), match types that
// do not exist (never true), a hook without id or command, an id defined twice.
import { Composer, isSeq, Parser, type Document } from "yaml";
import { type Hook, MATCH_TYPES as REFERENCE_MATCH_TYPES, type Rule } from "../hooks/hook.js";
import { HooksFileError, decodeHooksText, readHooksFile, toHook, unknownFields, type LoadOptions } from "../hooks/config.js";
import { isSignatureType } from "../hooks/signatures.js";

const MATCH_TYPES = new Set<string>(REFERENCE_MATCH_TYPES);

export interface ValidationResult {
  problems: string[];
  hooks: number;
}

/** Checks every hooks file; the problems are ready to print, one per line. */
export function validateHooksFiles(paths: string[], options: LoadOptions): ValidationResult {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  let count = 0;
  for (const path of paths) {
    let decoded: ReturnType<typeof decodeHooksText>;
    let source = "";
    try {
      source = readHooksFile(path);
      decoded = decodeHooksText(path, source, options);
    } catch (e) {
      if (!(e instanceof HooksFileError)) throw e;
      problems.push(e.message + templateHint(source, options));
      continue;
    }
    const { text, data } = decoded;
    if (data === null) continue;
    if (!Array.isArray(data)) {
      problems.push(`${path}:1: the hooks file must hold a list (array) of hooks`);
      continue;
    }
    const lines = hookLines(text);
    data.forEach((raw, i) => {
      const at = `${path}:${lines[i] ?? 1}`;
      let hook: Hook;
      try {
        hook = toHook(raw, i);
      } catch (e) {
        if (!(e instanceof HooksFileError)) throw e;
        problems.push(`${at}: ${e.message}`);
        return;
      }
      count++;
      const label = `hook #${i + 1} (id ${JSON.stringify(hook.id)})`;
      for (const key of unknownFields(raw)) problems.push(`${at}: ${label}: "${key}" is not a hook field, so it is ignored (a typo?)`);
      for (const type of matchTypes(hook["trigger-rule"])) {
        if (!MATCH_TYPES.has(type) && !isSignatureType(type))
          problems.push(`${at}: ${label}: match type ${JSON.stringify(type)} does not exist, so the match is never true`);
      }
      if (hook.id === "") problems.push(`${at}: ${label}: the hook has no "id"`);
      if (hook["execute-command"] === "") problems.push(`${at}: ${label}: the hook has no "execute-command"`);
      const first = seen.get(hook.id);
      if (first !== undefined) problems.push(`${at}: ${label}: the id is already defined at ${first}`);
      else seen.set(hook.id, at);
    });
  }
  return { problems, hooks: count };
}

/** What to do about a file that did not decode but holds template actions ({{ … }}) while -template is off. */
function templateHint(source: string, options: LoadOptions): string {
  return !options.template && /\{\{[\s\S]*?\}\}/.test(source) ? " (the file holds {{ }} template actions: validate it with -template)" : "";
}

function matchTypes(r: Rule | undefined): string[] {
  if (!r) return [];
  return [...(r.and ?? []).flatMap(matchTypes), ...(r.or ?? []).flatMap(matchTypes), ...matchTypes(r.not), ...(r.match ? [r.match.type] : [])];
}

/** The line (1-based) where each top-level list item of a YAML or JSON text starts. */
function hookLines(text: string): number[] {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  let doc: Document.Parsed | undefined;
  for (const d of new Composer({ version: "1.1", uniqueKeys: false }).compose(new Parser().parse(body), true)) {
    doc = d as Document.Parsed;
    break;
  }
  if (!doc || !isSeq(doc.contents)) return [];
  return doc.contents.items.map((item) => {
    const offset = (item as { range?: [number, number, number] } | null)?.range?.[0] ?? 0;
    return body.slice(0, offset).split("\n").length;
  });
}
