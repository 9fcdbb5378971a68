/**
 * The studio's stylesheet and its one script, served from the handler itself (no CDN, no build
 * step, nothing fetched at run time). The pages are complete without the script; it adds the live
 * updates (a server-sent event stream per tab, the page fetched again and its `<main>` swapped
 * when the server says it changed) and the confirmation of actions. The Content-Security-Policy
 * allows only these two files, so markup in a payload could not run a script even if escaping
 * failed.
 */

export const STUDIO_CSS = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #667085; --bg: #fff; --panel: #f5f6f8;
  --line: #d9dde3; --accent: #2457d6; --ok: #137333; --bad: #b3261e; --warn: #8a5a00; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8ec; --muted: #98a2b3; --bg: #14171c;
  --panel: #1d2128; --line: #343a44; --accent: #7aa2ff; --ok: #5fd38d; --bad: #ff8a80; --warn: #f0c060; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.2em; align-items: center; padding: .6em 1.2em; border-bottom: 1px solid var(--line); background: var(--panel); }
header .brand { font-weight: 700; }
header nav a { margin-right: 1em; }
header .badge { margin-left: auto; }
main { padding: 1em 1.2em 3em; max-width: 1400px; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
h1 { font-size: 1.35em; margin: .2em 0 .6em; } h2 { font-size: 1.1em; margin: 1.4em 0 .5em; }
table { border-collapse: collapse; width: 100%; margin: .4em 0; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono, .json-view { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.status { display: inline-block; padding: 0 .5em; border-radius: 1em; border: 1px solid var(--line); white-space: nowrap; }
.status.succeeded { color: var(--ok); } .status.failed, .status.defect { color: var(--bad); }
.status.interrupted, .status.interrupting { color: var(--warn); } .status.running { color: var(--accent); }
.badge { padding: .1em .6em; border-radius: 1em; background: var(--line); font-size: 12px; }
.cards { display: flex; flex-wrap: wrap; gap: .8em; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .6em .9em; min-width: 12em; }
.card .figure { font-size: 1.5em; font-weight: 600; }
form.filters { display: flex; flex-wrap: wrap; gap: .5em .8em; align-items: end; background: var(--panel); padding: .6em .8em; border: 1px solid var(--line); border-radius: 6px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
input, select, button { font: inherit; padding: .25em .45em; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
button { cursor: pointer; } button.danger { border-color: var(--bad); color: var(--bad); }
form.inline { display: inline; }
.actions { display: flex; gap: .6em; margin: .6em 0; }
.notice { background: var(--panel); border-left: 3px solid var(--accent); padding: .5em .8em; margin: .5em 0; }
.error { border-left-color: var(--bad); }
dl.header { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1.2em; margin: 0; }
dl.header dt { color: var(--muted); } dl.header dd { margin: 0; }
.json-view ul { list-style: none; margin: 0; padding-left: 1.3em; }
.json-view details > summary { cursor: pointer; list-style: none; display: inline; }
.json-view details > summary::before { content: "▸ "; color: var(--muted); }
.json-view details[open] > summary::before { content: "▾ "; }
.json-string { color: var(--ok); } .json-number, .json-boolean { color: var(--accent); } .json-null { color: var(--muted); }
.bars { display: block; width: 100%; height: 60px; border-bottom: 1px solid var(--line); }
.bars rect { fill: var(--accent); }
.live { font-size: 12px; color: var(--muted); }
`

export const STUDIO_JS = `
"use strict";
(function () {
  var body = document.body;
  var base = body.getAttribute("data-base") || "";
  var watch = body.getAttribute("data-watch");
  var indicator = document.getElementById("live");
  function confirmForms(root) {
    root.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
      });
    });
  }
  confirmForms(document);
  if (!watch || !window.EventSource) return;
  var url = base + "/events" + (watch === "list" ? "" : "?execution=" + encodeURIComponent(watch));
  var source = new EventSource(url);
  var fetching = false, pending = false;
  function refresh() {
    if (fetching) { pending = true; return; }
    fetching = true;
    fetch(window.location.href, { headers: { "x-studio-refresh": "1" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var next = new DOMParser().parseFromString(text, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (next && main) {
          main.replaceWith(next);
          confirmForms(next);
          body.setAttribute("data-refreshed", String(Number(body.getAttribute("data-refreshed") || 0) + 1));
        }
      })
      .catch(function () {})
      .finally(function () { fetching = false; if (pending) { pending = false; refresh(); } });
  }
  source.addEventListener("open", function () { if (indicator) indicator.textContent = "live"; });
  source.addEventListener("error", function () { if (indicator) indicator.textContent = "reconnecting"; });
  source.addEventListener("change", refresh);
})();
`
