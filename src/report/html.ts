/**
 * One self-contained HTML file, strict and offline: inline CSS and one inline script, each allowed
 * by its sha256 hash in the Content-Security-Policy (nothing else runs, nothing is fetched). The
 * script is a constant (src/report/client/page.js); everything about the incident is data, in JSON
 * blocks it reads (html-data.ts). It draws each resource's card when it scrolls into view: the
 * picture (see picture.ts) opened on the findings' evidence, with details of every mark on hover,
 * focus or click, then each finding's story and evidence next to it. Filters by rule, severity,
 * certainty and readiness, and a search by resource. What is written as HTML here (headline,
 * what was left out, readiness, input health) goes through escapeHtml.
 */
import { createHash } from 'node:crypto';
import { READINESS, SEVERITIES, worstResources, type ReportView, type ResourceSummary } from '../model/report.js';
import { SCRIPT } from '../generated/html-page.js';
import { gather } from './chunks.js';
import { escapeHtml as h } from './escape.js';
import { readinessCounts } from './headline.js';
import { cardsOf, dataBlocks, ruleTexts } from './html-data.js';
import { GEOMETRY } from './picture.js';

/** Readiness rows written in the page (the cards and the JSON report have every resource). */
const READINESS_ROWS = 200;

export function renderHtml(report: ReportView): string {
  return [...renderHtmlChunks(report)].join('');
}

/** The same HTML in pieces of bounded size: a card, a row, a slice of a data block at a time. */
export function renderHtmlChunks(report: ReportView): Generator<string> {
  return gather(htmlPieces(report));
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
let csp: string | undefined;
/** The policy: the page's own script and style by hash, images only as data: URLs, nothing else. */
export function contentSecurityPolicy(): string {
  csp ??= `default-src 'none'; script-src ${sha256(SCRIPT)}; style-src ${sha256(CSS)}; img-src data:; base-uri 'none'; form-action 'none'`;
  return csp;
}

function* htmlPieces(report: ReportView): Generator<string> {
  const s = report.summary;
  const cards = cardsOf(report);
  const facts = resourceFacts(report);
  const cardOf = new Map(cards.map((c) => [c.summary.resource, c.id]));
  yield `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy()}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>stalewrite report: ${s.verdict}</title>
<style>${CSS}</style></head><body>`;
  yield `\n<header><h1>stalewrite report: <span class="v-${s.verdict}">${s.verdict.toUpperCase()}</span></h1>
<p>${s.findings} finding${s.findings === 1 ? '' : 's'} (${s.bySeverity.error} error, ${s.bySeverity.warning} warning, ${s.bySeverity.info} info) on ${h(readinessCounts(report))}.</p>
`;
  if (s.reasons.length > 0) {
    yield `<ul class="reasons">`;
    for (const r of s.reasons) yield `<li>${h(r.message)}</li>`;
    yield `</ul>`;
  }
  const left = leftOut(report, facts, cards.filter((c) => c.view !== undefined && c.view.omitted > 0).length);
  if (left.length > 0) {
    yield `\n<div class="left-out" id="left-out"><b>Left out of this page:</b><ul>`;
    for (const l of left) yield `<li>${l}</li>`;
    yield `</ul></div>`;
  }
  yield `
<nav><b>Index:</b> <a href="#readiness">Readiness</a> · <a href="#incidents">Resources and findings</a> · <a href="#input">Input health</a></nav></header>`;

  yield `\n<section id="readiness"><h2>Readiness</h2><div class="scroll"><table><thead><tr><th>resource</th><th>readiness</th><th>highest accepted token</th><th>findings</th><th>why</th></tr></thead><tbody>`;
  for (const r of facts.worst) {
    const id = cardOf.get(r.resource);
    const name = id !== undefined ? `<a href="#${id}">${h(r.resource)}</a>` : h(r.resource);
    yield `\n<tr><td class="nw">${name}</td><td class="v-${r.readiness}">${r.readiness}</td><td class="nw">${h(r.highestAcceptedToken ?? '–')}</td><td>${r.findings}</td><td>${h(r.reason)}</td></tr>`;
  }
  yield `\n</tbody></table></div>${report.resources.length > READINESS_ROWS ? `<p class="note">${report.resources.length - READINESS_ROWS} more resources are not listed here (the JSON report lists every one; resources with findings have their cards below).</p>` : ''}</section>`;

  yield `\n<section id="incidents"><h2>Resources and findings</h2>`;
  yield `\n<noscript><p class="warn">This page draws its timelines and findings with its own inline script, which is not running here. Open the file in a browser with scripts allowed, or read the same findings with <code>--format markdown</code>.</p></noscript>`;
  yield filters(report, facts, cards.length);
  yield LEGEND;
  if (cards.length === 0) yield `\n<p class="note">No resource to show: no findings${report.timelines === undefined ? '' : ', and only resources with findings are drawn (use --all-resources to draw every resource)'}.</p>`;
  yield `\n<div id="cards" data-cards="${cards.length}"></div></section>`;

  const i = report.input;
  yield `\n<section id="input"><h2>Input health</h2><p>${i.lines} lines = ${i.events} events + ${i.blank} blank + ${i.ignored} ignored + ${i.invalid} invalid${i.joined > 0 ? ` + ${i.joined} joined (partial container log lines)` : ''}${i.duplicates > 0 ? ` + ${i.duplicates} duplicates (copies of events already read, counted once)` : ''}</p><div class="scroll"><table><thead><tr><th>file</th><th>lines</th><th>events</th><th>blank</th><th>ignored</th><th>invalid</th></tr></thead><tbody>`;
  for (const f of i.files) yield `\n<tr><td class="nw">${h(f.file)}${f.sameAs !== undefined ? ` (the same file as ${h(f.sameAs)}, read once)` : ''}${f.error !== undefined ? ` <span class="sev-error">read stopped early: ${h(f.error)}</span>` : ''}</td><td>${f.lines}</td><td>${f.events}</td><td>${f.blank}</td><td>${f.ignored}</td><td>${f.invalid}</td></tr>`;
  yield `\n</tbody></table></div>`;
  if (i.problems.length > 0) {
    yield `\n<ul class="problems">`;
    for (const p of i.problems.slice(0, 50)) yield `\n<li><code>${h(p.file)}:${p.line}</code> ${h(p.reason)}</li>`;
    yield `\n</ul>`;
    if (i.invalid > Math.min(50, i.problems.length)) yield `\n<p class="note">${i.invalid - Math.min(50, i.problems.length)} more invalid lines.</p>`;
  }
  yield `\n</section><footer>stalewrite ${h(report.tool.version)}</footer>`;
  const notDrawn = report.timelines === undefined ? 'Not drawn: this report was made without event histories (analyze with timelines, as -f html does).' : 'Not drawn: past --max-drawn, or its history was not captured (see "Left out" at the top).';
  yield* dataBlocks(cards, { geometry: GEOMETRY, verdict: s.verdict, short: shortNames(report) }, notDrawn, ruleTexts(report.findings));
  yield `\n<script>${SCRIPT}</script>\n</body></html>\n`;
}

/** Input files by their base names, when no two share one (the full path stays in the title and the tooltip). */
function shortNames(report: ReportView): Record<string, string> {
  const base = (f: string) => f.slice(f.lastIndexOf('/') + 1);
  const names = report.input.files.map((f) => f.file);
  const bases = new Set(names.map(base));
  if (bases.size !== names.length) return {};
  return Object.fromEntries(names.filter((f) => base(f) !== f && base(f) !== '').map((f) => [f, base(f)]));
}

/** What the page says of the resources, from one pass over them: the readiness table's rows, how many have no finding, how many have each readiness. */
interface ResourceFacts {
  worst: ResourceSummary[];
  quiet: number;
  readiness: Map<string, number>;
}

function resourceFacts(report: ReportView): ResourceFacts {
  let quiet = 0;
  const readiness = new Map<string, number>();
  function* counted(): Generator<ResourceSummary> {
    for (const r of report.resources) {
      if (r.findings === 0) quiet++;
      readiness.set(r.readiness, (readiness.get(r.readiness) ?? 0) + 1);
      yield r;
    }
  }
  const worst = worstResources(counted(), READINESS_ROWS);
  return { worst, quiet, readiness };
}

/** Everything the page leaves out, each with the option that would bring it in. */
function leftOut(report: ReportView, facts: ResourceFacts, thinned: number): string[] {
  const out: string[] = [];
  const s = report.summary;
  if (s.findingsOmitted > 0) out.push(`${s.findingsOmitted} more finding${s.findingsOmitted === 1 ? ' is' : 's are'} not listed (raise --max-findings); ${report.findings.length} are.`);
  const omitted = report.timelinesOmitted ?? 0;
  if (omitted > 0) out.push(`${omitted} more resource${omitted === 1 ? ' is' : 's are'} not drawn (raise --max-drawn). Their findings are still listed.`);
  if (report.timelines !== undefined) {
    const drawn = report.timelines.length + omitted;
    const quiet = facts.quiet;
    const cited = new Set(report.findings.map((f) => f.resource));
    const quietDrawn = report.timelines.filter((t) => !cited.has(t.resource)).length;
    // None drawn and none past the cap: --all-resources was off.
    if (quiet > 0 && quietDrawn === 0 && omitted === 0 && drawn < report.resources.length) out.push(`${quiet} resource${quiet === 1 ? '' : 's'} without findings ${quiet === 1 ? 'is' : 'are'} not drawn (add --all-resources).`);
  } else out.push('No timelines: this report was made without event histories.');
  if (thinned > 0) out.push(`In ${thinned} drawn resource${thinned === 1 ? '' : 's'}, events in the middle of a long history were not kept (each keeps its first and latest events, 1000 by default); stalewrite timeline RESOURCE --max-events N lists more.`);
  if (report.resources.length > READINESS_ROWS) out.push(`The readiness table lists the ${READINESS_ROWS} worst of ${report.resources.length} resources (--format json lists all).`);
  if (s.untrackedEvents > 0) out.push(`${s.untrackedEvents} events of resources past --max-resources were counted but not analysed (raise --max-resources).`);
  return out;
}

function filters(report: ReportView, facts: ResourceFacts, cards: number): string {
  const count = (key: 'rule' | 'severity' | 'certainty') => {
    const m = new Map<string, number>();
    for (const f of report.findings) m.set(f[key], (m.get(f[key]) ?? 0) + 1);
    return m;
  };
  const opts = (m: Map<string, number>, order?: readonly string[]) => {
    const keys = order !== undefined ? order.filter((k) => m.has(k)) : [...m.keys()].sort();
    return keys.map((k) => `<option value="${h(k)}">${h(k)} (${m.get(k)})</option>`).join('');
  };
  const readiness = facts.readiness;
  return `\n<form id="filters" class="controls" hidden role="search" aria-label="Filter resources and findings">
<label>Rule <select name="rule"><option value="">all</option>${opts(count('rule'))}</select></label>
<label>Severity <select name="severity"><option value="">all</option>${opts(count('severity'), SEVERITIES)}</select></label>
<label>Certainty <select name="certainty"><option value="">all</option>${opts(count('certainty'), ['definite', 'likely', 'possible'])}</select></label>
<label>Readiness <select name="readiness"><option value="">all</option>${opts(readiness, READINESS)}</select></label>
<label>Resource <input type="search" name="q" placeholder="name contains…" autocomplete="off"></label>
<button type="reset">Show all</button>
<output id="shown" aria-live="polite">${cards} resource${cards === 1 ? '' : 's'}</output>
</form>`;
}

const LEGEND = `\n<details class="legend" open><summary>How to read the pictures</summary><ul>
<li data-glyph="wa"><span>a write the resource <b>accepted</b></span></li>
<li data-glyph="ws"><span>a write the resource <b>rejected as stale</b> (the fencing token did its job)</span></li>
<li data-glyph="wr"><span>a write rejected for another reason, or that failed</span></li>
<li data-glyph="wt"><span>a write that timed out (its outcome is unknown)</span></li>
<li data-glyph="tok"><span>above a write or a grant: its fencing token (<code>#2</code>), or <code>no token</code></span></li>
<li data-glyph="aq"><span>lease granted (acquire)</span></li>
<li data-glyph="ab"><span>acquire refused: the lock was busy</span></li>
<li data-glyph="ko"><span>keepalive: the lease was renewed</span></li>
<li data-glyph="kf"><span>keepalive failed</span></li>
<li data-glyph="xe"><span>the lock service expired or revoked the lease</span></li>
<li data-glyph="xi"><span>the lease ended here by its TTL: last renewal + ttl (no line logged it)</span></li>
<li data-glyph="xl"><span>the worker logged that it lost its lease (its own view, often late)</span></li>
<li data-glyph="rl"><span>lease released</span></li>
<li data-glyph="rn"><span>release refused (not the holder any more)</span></li>
<li data-glyph="ring"><span>red ring: the event a finding is about</span></li>
<li data-glyph="gr"><span>several events at one spot: hover, focus or click for the list</span></li>
<li data-glyph="bar"><span>lease held, from its grant to its end</span></li>
<li data-glyph="inf"><span>dashed end: the end was inferred from the TTL</span></li>
<li data-glyph="open"><span>arrow: the lease goes on past the view, or no end is known</span></li>
<li data-glyph="tail"><span>dotted: the worker went on as holder after its lease had ended</span></li>
<li data-glyph="lead"><span>thin line: a mark moved aside so it does not cover its neighbour; the line points at its time</span></li>
<li data-glyph="brk"><span>zigzag band: a quiet stretch left out of the axis; the label under the axis says how long</span></li>
</ul><p>Hover or focus a mark (Tab moves between marks) for its time, <code>file:line</code> and fields; click or press Enter to pin it. <kbd>Esc</kbd> unpins.</p></details>`;

const LIGHT = '--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;--lane0:#fafbfc;--lane1:#f0f3f6;--acc:#2e7d32;--stale:#1565c0;--rej:#e65100;--to:#8d6e63;--other:#757575;--ink:#37474f;--bar:#90a4ae;--barlight:#cfd8dc;--ring:#d50000;--bad:#c62828;--warn:#9e6a00;--good:#2e7d32;--hl:#fff3bf;--dec:#ffebee';

const CSS = `:root{color-scheme:light dark;${LIGHT}}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#161b22;--line:#3d444d;--lane0:#11161d;--lane1:#171d25;--acc:#57ab5a;--stale:#539bf5;--rej:#f69d50;--to:#b0906f;--other:#9e9e9e;--ink:#adbac7;--bar:#62727b;--barlight:#37474f;--ring:#ff5252;--bad:#ff6b6b;--warn:#e3b341;--good:#57ab5a;--hl:#4d3f00;--dec:#3b1d22}}
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1010px;padding:16px;color:var(--fg);background:var(--bg)}
a{color:var(--stale)}h1{font-size:22px}h2{border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:28px}h3{font-size:16px;margin:0 0 4px}h4{font-size:14px;margin:14px 0 4px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}td,th{border:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}
.scroll{overflow-x:auto;max-width:100%}.nw,table.ev td,table.ev th{white-space:nowrap}table.ev td.role{white-space:normal;min-width:10em}
code,pre,kbd{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}pre.story{background:var(--panel);padding:8px;overflow-x:auto;font-size:12px;margin:6px 0}
.v-violated,.sev-error{color:var(--bad);font-weight:600}.v-verified{color:var(--good);font-weight:600}.v-untested{color:var(--muted);font-weight:600}.v-inconclusive,.v-unconfirmed{color:var(--warn);font-weight:600}.sev-warning{color:var(--warn);font-weight:600}.sev-info{color:var(--muted)}
.note{color:var(--muted);font-style:italic}.warn{border:1px solid var(--warn);padding:8px}.left-out{border-left:4px solid var(--warn);background:var(--panel);padding:6px 10px;margin:10px 0}.left-out ul{margin:4px 0;padding-left:20px}
.controls{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;background:var(--panel);padding:8px 10px;border:1px solid var(--line);position:sticky;top:0;z-index:2}.controls label{font-size:13px}.controls select,.controls input,.controls button{font:inherit;font-size:13px}
.legend{font-size:13px;margin:10px 0}.legend ul{columns:2;column-gap:28px;padding-left:0;list-style:none;margin:6px 0}.legend li{break-inside:avoid;margin:2px 0;display:flex;gap:6px;align-items:flex-start}.legend li svg{flex:none}
.card{border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:14px 0;background:var(--bg)}.card.f-error{border-left:5px solid var(--bad)}.card.f-warning{border-left:5px solid var(--warn)}.card .meta{color:var(--muted);font-size:13px;margin:0 0 6px}
.views{display:flex;gap:6px;align-items:center;flex-wrap:wrap;font-size:13px;margin:4px 0}.views button{font:inherit;font-size:12px;border:1px solid var(--line);background:var(--panel);color:var(--fg);border-radius:4px;padding:2px 8px;cursor:pointer}.views button[aria-pressed=true]{background:var(--fg);color:var(--bg)}
.finding{border-top:1px solid var(--line);margin-top:10px;padding-top:4px}tr.decisive td{background:var(--dec)}tr.flash td,.flash{outline:3px solid var(--ring);outline-offset:1px}
button.goto{font:inherit;font-size:11px;border:1px solid var(--line);background:var(--panel);color:var(--fg);border-radius:3px;padding:0 4px;margin-right:4px;cursor:pointer}
svg.pic{display:block;margin:4px 0 8px;max-width:100%;height:auto}svg.pic,svg.icon{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.lane0{fill:var(--lane0)}.lane1{fill:var(--lane1)}.lname{font-size:11px;fill:var(--ink)}.axis{stroke:var(--muted);stroke-width:1}.tick{font-size:10px;fill:var(--muted);text-anchor:middle}.tick.brl{fill:var(--ink)}
.brk{fill:var(--bg);stroke:var(--muted);stroke-width:.8;stroke-dasharray:3 3}.zig{fill:none;stroke:var(--muted);stroke-width:1.2}
.lease{fill:var(--bar)}.lease.inf{fill:var(--barlight);stroke:var(--ink);stroke-dasharray:4 3;stroke-width:1}.lease.open{fill:var(--barlight)}.infend{stroke:var(--ink);stroke-width:2;stroke-dasharray:3 2}.cont{fill:var(--ink)}.tail{stroke:var(--bad);stroke-width:2;stroke-dasharray:1 3}
.lead{stroke:var(--muted);stroke-width:.8}.lbl{font-size:10px;text-anchor:middle;fill:var(--ink)}.cnt{font-size:10px;text-anchor:middle;fill:var(--bg);font-weight:600}
.mk{cursor:pointer;outline:none}.mk:focus-visible .gl,.mk:hover .gl,.mk.on .gl{filter:drop-shadow(0 0 2px var(--stale))}.mk.flash .gl{filter:drop-shadow(0 0 3px var(--ring))}
.g-wa{fill:var(--acc)}.g-ws{fill:var(--stale)}.g-wr{fill:var(--rej)}.g-wt{fill:var(--to)}.g-wx{fill:var(--other)}.gw{stroke:var(--bg);stroke-width:1}
.g-aq{fill:var(--ink)}.g-ab{stroke:var(--other);stroke-width:2}.g-xe{fill:var(--bg);stroke:var(--ink);stroke-width:2}.g-xi{fill:var(--bg);stroke:var(--ink);stroke-width:1.5;stroke-dasharray:2 2}.g-xl{fill:var(--bg);stroke:var(--bad);stroke-width:1.5;stroke-dasharray:3 1.5}
.g-rl{fill:var(--ink)}.g-rn{fill:var(--bg);stroke:var(--ink);stroke-width:1.5}.g-ko{stroke:var(--ink);stroke-width:2.5}.g-kf{stroke:var(--bad);stroke-width:2.5}.g-gr{fill:var(--ink)}.hit{fill:transparent}
.ring{fill:none;stroke:var(--ring);stroke-width:3}
#tip{position:absolute;z-index:5;max-width:440px;background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:6px;box-shadow:0 4px 14px rgba(0,0,0,.25);padding:8px 10px;font-size:12px}#tip[hidden]{display:none}#tip h5{font-size:13px;margin:0 0 4px}#tip dl{display:grid;grid-template-columns:auto 1fr;gap:1px 10px;margin:4px 0}#tip dt{color:var(--muted)}#tip dd{margin:0;overflow-wrap:anywhere}#tip .x{float:right;font:inherit;border:0;background:none;color:var(--muted);cursor:pointer}#tip ul{margin:4px 0;padding-left:16px}#tip .sub{color:var(--muted);border-top:1px solid var(--line);margin-top:4px;padding-top:3px}
footer{margin-top:30px;color:var(--muted);font-size:12px}
@media print{:root{${LIGHT}}body{max-width:none;padding:0;font-size:11px}.scroll{overflow:visible}table.ev td,table.ev th{white-space:normal;font-size:10px}pre.story{white-space:pre-wrap;overflow:visible;font-size:10px}.controls,#tip,nav,.views button,button.goto,.legend>p{display:none!important}.card{break-inside:avoid-page;border-color:#999}svg.pic{break-inside:avoid}a{color:inherit;text-decoration:none}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}.legend ul{columns:3}}`;
