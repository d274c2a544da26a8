// The console's page, script and style: plain HTML, CSS and JS served from here (no framework, no
// third-party asset), fit for the Content-Security-Policy of routes.ts (no inline script or style).
// The script writes what it shows with textContent only, never as HTML.

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>webhook console</title>
<link rel="stylesheet" href="/console/app.css">
<script src="/console/app.js" defer></script>
</head>
<body>
<header><h1><a href="#/">webhook console</a></h1><span id="problem" role="alert"></span></header>
<main id="list" hidden>
<section>
<h2>Hooks</h2>
<table id="hooks"><thead><tr><th>Hook</th><th>Trigger rule</th><th>Limits</th><th>Last run</th><th>Succeeded</th></tr></thead><tbody></tbody></table>
</section>
<section>
<h2>Runs</h2>
<form id="filters">
<label>Hook <select name="hook"><option value="">any</option></select></label>
<label>State <select name="state"><option value="">any</option><option>queued</option><option>running</option><option>succeeded</option><option>failed</option><option>timed-out</option><option>dropped</option></select></label>
<label>Exit code <input name="exit" inputmode="numeric" size="4"></label>
<label>From <input name="since" type="datetime-local"></label>
<label>To <input name="until" type="datetime-local"></label>
<label>Output contains <input name="q" type="search"></label>
</form>
<table id="runs"><thead><tr><th>Created</th><th>Hook</th><th>Job</th><th>State</th><th>Exit</th><th>Duration</th></tr></thead><tbody></tbody></table>
<p id="more" hidden>More runs match: narrow the filters.</p>
</section>
</main>
<main id="run" hidden>
<p><a href="#/">&larr; all runs</a></p>
<h2 id="run-title"></h2>
<dl id="run-meta"></dl>
<p><button id="replay" type="button" hidden>Replay</button> <span id="replay-status"></span></p>
<h3>Output</h3>
<pre id="run-output"></pre>
<h3>Request</h3>
<pre id="run-request"></pre>
</main>
</body>
</html>
`;

const CSS = `body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #1d2330; background: #fafbfc; }
header { display: flex; align-items: baseline; gap: 1em; }
h1 { font-size: 1.3em; } h1 a { color: inherit; text-decoration: none; }
h2 { font-size: 1.1em; margin-top: 1.4em; }
#problem { color: #b3261e; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
th { font-weight: 600; background: #f0f2f5; }
form { display: flex; flex-wrap: wrap; gap: .6em 1.2em; margin: .6em 0; }
label { display: flex; flex-direction: column; font-size: .85em; color: #555; }
input, select, button { font: inherit; }
.state { font-weight: 600; }
.succeeded { color: #1b7f3b; } .failed, .timed-out { color: #b3261e; } .running, .queued { color: #9a6700; } .dropped { color: #666; }
pre { background: #14181f; color: #e6e9ef; padding: .8em; border-radius: 4px; overflow: auto; max-height: 28em; white-space: pre-wrap; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dt { color: #555; } dd { margin: 0; }
button { padding: .3em 1em; }
`;

const JS = `"use strict";
const $ = (s) => document.querySelector(s);
let replayOn = false;
let source;
let listTimer;

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.append(td);
  return td;
}
function linkCell(row, id) {
  const td = cell(row, "");
  const a = document.createElement("a");
  a.href = "#/run/" + encodeURIComponent(id);
  a.textContent = id;
  td.append(a);
}
function when(iso) { return iso ? new Date(iso).toLocaleString() : ""; }
function problem(text) { $("#problem").textContent = text || ""; }

async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
  return body;
}

async function loadHooks() {
  const d = await getJson("/console/api/hooks");
  replayOn = d.replay === true;
  const body = $("#hooks tbody");
  body.replaceChildren();
  const select = $("#filters select[name=hook]");
  const chosen = select.value;
  select.replaceChildren(new Option("any", ""));
  for (const h of d.hooks) {
    const row = document.createElement("tr");
    cell(row, h.id);
    cell(row, h.rule);
    cell(row, h.limits.join(", ") || "defaults");
    if (h.lastRun) linkCell(row, h.lastRun.id); else cell(row, "never");
    cell(row, h.finished ? Math.round((100 * h.succeeded) / h.finished) + "% of " + h.finished : "");
    body.append(row);
    select.append(new Option(h.id, h.id));
  }
  select.value = chosen;
}

function filterQuery() {
  const f = new FormData($("#filters"));
  const p = new URLSearchParams();
  for (const [k, v] of f) {
    if (!v) continue;
    p.set(k, k === "since" || k === "until" ? new Date(v).toISOString() : v);
  }
  return p.toString();
}

async function loadRuns() {
  const d = await getJson("/console/api/runs?" + filterQuery());
  const body = $("#runs tbody");
  body.replaceChildren();
  for (const j of d.runs) {
    const row = document.createElement("tr");
    row.dataset.job = j.id;
    cell(row, when(j.created));
    cell(row, j.hook);
    linkCell(row, j.id);
    cell(row, j.state + (j.replayOf ? " (replay)" : ""), "state " + j.state);
    cell(row, j.exitCode === undefined || j.exitCode === null ? "" : String(j.exitCode));
    cell(row, j.durationMs === undefined ? "" : j.durationMs + " ms");
    body.append(row);
  }
  $("#more").hidden = !d.more;
}

function refreshList() {
  Promise.all([loadHooks(), loadRuns()]).then(() => problem(), (e) => problem(e.message));
}

function showList() {
  $("#run").hidden = true;
  $("#list").hidden = false;
  refreshList();
  listTimer = setInterval(refreshList, 2000);
}

function meta(job) {
  const dl = $("#run-meta");
  dl.replaceChildren();
  const add = (k, v) => {
    if (v === undefined || v === null || v === "") return;
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    if (v instanceof Node) dd.append(v); else dd.textContent = String(v);
    dl.append(dt, dd);
  };
  const state = document.createElement("span");
  state.className = "state " + job.state;
  state.id = "run-state";
  state.textContent = job.state;
  add("State", state);
  add("Hook", job.hook);
  if (job.replayOf) {
    const a = document.createElement("a");
    a.href = "#/run/" + encodeURIComponent(job.replayOf);
    a.textContent = job.replayOf;
    add("Replay of", a);
  }
  if (job.triggerRule === "skipped") add("Trigger rule", "skipped: replayed by the operator");
  add("Created", when(job.created));
  add("Started", when(job.started));
  add("Ended", when(job.ended));
  add("Duration", job.durationMs === undefined ? "" : job.durationMs + " ms");
  add("Exit code", job.exitCode);
  add("Error", job.error);
  add("Reason", job.reason);
  add("Attempts", job.attempts.length);
}

function request(job) {
  const r = job.request;
  if (!r) return "(not kept: start the server with -jobs-replay)";
  const lines = [r.method + " " + r.url];
  for (const [n, v] of r.headers) lines.push(n + ": " + v);
  if (r.redacted) lines.push("(left out: " + r.redacted.join(", ") + ")");
  if (r.signatureHeaders) lines.push("(signature headers kept: " + r.signatureHeaders.join(", ") + ")");
  lines.push("", r.bodyBytes !== undefined ? r.bodyBytes + " bytes of body kept" : "body of " + r.bodyCut + " bytes not kept (-jobs-request-max)");
  return lines.join("\\n");
}

function showRun(id) {
  $("#list").hidden = true;
  $("#run").hidden = false;
  $("#run-title").textContent = "Run " + id;
  $("#run-meta").replaceChildren();
  $("#replay-status").textContent = "";
  const out = $("#run-output");
  out.textContent = "";
  let live = false;
  let final = false;
  const button = $("#replay");
  button.hidden = true;
  button.onclick = () => replay(id);
  source = new EventSource("/console/api/runs/" + encodeURIComponent(id) + "/events");
  source.addEventListener("job", (e) => {
    const job = JSON.parse(e.data);
    final = !["queued", "running"].includes(job.state);
    meta(job);
    $("#run-request").textContent = request(job);
    button.hidden = !(replayOn && job.request && job.request.bodyBytes !== undefined);
    if (final || !live) out.textContent = job.output + (job.stderr ? job.stderr : "");
    if (final) source.close();
  });
  source.addEventListener("output", (e) => {
    if (!live) out.textContent = "";
    live = true;
    out.textContent += JSON.parse(e.data);
  });
  source.addEventListener("skipped", (e) => {
    out.textContent += "\\n[console: " + e.data + " bytes skipped: this page fell behind]\\n";
  });
  source.onerror = () => { if (!final) problem("the run's stream broke; reconnecting"); };
}

async function replay(id) {
  const status = $("#replay-status");
  status.textContent = "replaying…";
  const r = await fetch("/jobs/" + encodeURIComponent(id) + "/replay", { method: "POST" });
  const body = await r.json().catch(() => ({}));
  if (r.status !== 202) {
    status.textContent = body.error || "refused: HTTP " + r.status;
    return;
  }
  location.hash = "#/run/" + encodeURIComponent(body.id);
}

function route() {
  if (source) source.close();
  source = undefined;
  clearInterval(listTimer);
  problem();
  const m = /^#\\/run\\/(.+)$/.exec(location.hash);
  if (m) showRun(decodeURIComponent(m[1])); else showList();
}

$("#filters").addEventListener("submit", (e) => e.preventDefault());
$("#filters").addEventListener("input", () => loadRuns().catch((e) => problem(e.message)));
window.addEventListener("hashchange", route);
loadHooks().catch((e) => problem(e.message)).finally(route);
`;

export const ASSETS: ReadonlyMap<string, { type: string; body: string }> = new Map([
  ["/console/", { type: "text/html; charset=utf-8", body: HTML }],
  ["/console/app.css", { type: "text/css; charset=utf-8", body: CSS }],
  ["/console/app.js", { type: "text/javascript; charset=utf-8", body: JS }],
]);
