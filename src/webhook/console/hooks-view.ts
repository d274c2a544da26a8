// The console's list of the hooks loaded: id, trigger rule in words, limits, and from the jobs
// kept, the last run and the success rate.
import type { Argument, Hook, Rule } from "../hooks/hook.js";
import type { HookSet } from "../hooks/hook-set.js";
import { tokenCarrier } from "../hooks/config.js";
import type { Job } from "../jobs/job.js";

export interface HookView {
  id: string;
  rule: string;
  limits: string[];
  lastRun?: { id: string; state: string; created: string };
  /** Finished runs kept, and how many succeeded. */
  finished: number;
  succeeded: number;
}

/** The hooks in id order; `jobs` newest first. */
export function hookViews(hooks: HookSet, jobs: Job[]): HookView[] {
  const views: HookView[] = [];
  for (const hook of hooks.values()) {
    const own = jobs.filter((j) => j.hook === hook.id);
    const last = own[0];
    const finished = own.filter((j) => j.state !== "queued" && j.state !== "running" && j.state !== "dropped");
    views.push({
      id: hook.id,
      rule: hook["trigger-rule"] ? ruleWords(hook["trigger-rule"]) : "always (no trigger rule)",
      limits: limitWords(hook),
      ...(last ? { lastRun: { id: last.id, state: last.state, created: last.created } } : {}),
      finished: finished.length,
      succeeded: finished.filter((j) => j.state === "succeeded").length,
    });
  }
  return views.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A rule in words: "header X-Token equals the value set in the hooks file", "all of (…; …)". Values and secrets are never shown. */
export function ruleWords(rule: Rule): string {
  if (rule.and) return `all of (${rule.and.map(ruleWords).join("; ")})`;
  if (rule.or) return `any of (${rule.or.map(ruleWords).join("; ")})`;
  if (rule.not) return `not (${ruleWords(rule.not)})`;
  const m = rule.match;
  if (!m) return "nothing";
  const p = m.parameter ? argWords(m.parameter) : "";
  switch (m.type) {
    case "value":
      // The value may be a token: never shown.
      return `${p} equals the value set in the hooks file`;
    case "regex":
      // A pattern matched against a token may be the token itself: shown as the rule explanations show it.
      return (m.redact ?? tokenCarrier(m.parameter)) ? `${p} matches a pattern set in the hooks file` : `${p} matches /${m.regex ?? ""}/`;
    case "ip-whitelist":
      return `the client address is in ${m["ip-list-file"] !== undefined ? `the ranges of ${m["ip-list-file"]}` : (m["ip-range"] ?? "")}`;
    default:
      return `${p ? `${p} holds ` : ""}a valid ${m.type} signature`;
  }
}

function argWords(a: Argument): string {
  return a.source === "entire-payload" || a.source === "entire-headers" || a.source === "entire-query"
    ? a.source.replace("-", " ")
    : `${a.source} ${a.name ?? ""}`;
}

function limitWords(h: Hook): string[] {
  const out: string[] = [];
  if (h["max-concurrency"] !== undefined) out.push(`max-concurrency ${h["max-concurrency"]}`);
  if (h["max-queue"] !== undefined) out.push(`max-queue ${h["max-queue"]}`);
  if (h["command-timeout"]) out.push(`command-timeout ${h["command-timeout"]}`);
  const rate = h["rate-limit"];
  if (rate) out.push(`rate-limit ${rate.requests ?? 0} per ${rate.period ?? "1s"}`);
  if (h.debounce) out.push(`debounce ${h.debounce}`);
  if (h.retry) out.push(`retry ${h.retry.attempts ?? 1} attempts`);
  return out;
}
