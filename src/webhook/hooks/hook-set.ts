// One version of the served hooks, as a load or reload publishes it: the hooks by id, and what their
// trigger rules compare with (regular expressions compiled, `value` digests computed), made with the
// set and dropped with it.
import { ConfiguredSecrets } from "../../shared/secret.js";
import type { Hook, MatchRule, Rule } from "./hook.js";
import { GoRegexes } from "./regex.js";
import { matchValues } from "./match-files.js";

/** What rule evaluation needs prepared: the compiled patterns and the configured values' digests. */
export interface PreparedRules {
  readonly regexes: GoRegexes;
  readonly secrets: ConfiguredSecrets;
}

/** Every match of a rule tree. */
export function* matches(rule: Rule | undefined): Generator<MatchRule> {
  if (!rule) return;
  for (const sub of [...(rule.and ?? []), ...(rule.or ?? []), ...(rule.not ? [rule.not] : [])]) yield* matches(sub);
  if (rule.match) yield rule.match;
}

export class HookSet implements PreparedRules {
  readonly regexes: GoRegexes;
  readonly secrets: ConfiguredSecrets;

  constructor(private readonly byId: ReadonlyMap<string, Hook> = new Map()) {
    const all = [...byId.values()].flatMap((h) => [...matches(h["trigger-rule"])]);
    this.regexes = new GoRegexes(all.filter((m) => m.type === "regex").map((m) => m.regex ?? ""));
    this.secrets = new ConfiguredSecrets(all.filter((m) => m.type === "value").flatMap(matchValues));
  }

  get(id: string): Hook | undefined {
    return this.byId.get(id);
  }

  get size(): number {
    return this.byId.size;
  }

  values(): IterableIterator<Hook> {
    return this.byId.values();
  }
}
