/**
 * One self-contained HTML file: inline CSS and SVG, no scripts, no network (a CSP forbids both).
 * Swimlanes per resource (one lane per owner): lease bars from grant to end (logged ends solid,
 * inferred ends dashed), keepalive ticks, writes coloured by result and labelled with their token;
 * the events findings are about are ringed in red and link to the finding. Every piece of log
 * content goes through escapeHtml.
 */
import { byReadiness, type Finding, type Report, type ResourceTimelineView, type TimelineEvent } from '../model/report.js';
import { gather } from './chunks.js';
import { escapeHtml as h } from './escape.js';
import { readinessCounts } from './headline.js';
import { relative, renderStory } from './story.js';
import { minOf, maxOf } from '../model/stats.js';

const W = 960; // drawing width
const LEFT = 150; // lane label width
const LANE = 46;
const TOP = 26;

const COLOR = {
  accepted: '#2e7d32',
  'rejected-stale-fence': '#1565c0',
  rejected: '#ef6c00',
  error: '#ef6c00',
  timeout: '#8d6e63',
} as Record<string, string>;

export function renderHtml(report: Report): string {
  return [...renderHtmlChunks(report)].join('');
}

/** The same HTML in pieces of bounded size: a finding's evidence and a timeline's marks are written one by one. */
export function renderHtmlChunks(report: Report): Generator<string> {
  return gather(htmlPieces(report));
}

function* htmlPieces(report: Report): Generator<string> {
  const s = report.summary;
  yield `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
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
  yield `
<nav><b>Index:</b> <a href="#readiness">Readiness</a> · <a href="#timelines">Timelines</a> · <a href="#findings">Findings</a> · <a href="#input">Input health</a></nav></header>`;

  yield `\n<section id="readiness"><h2>Readiness</h2><table><thead><tr><th>resource</th><th>readiness</th><th>highest accepted token</th><th>findings</th><th>why</th></tr></thead><tbody>`;
  const resources = report.resources.slice().sort(byReadiness);
  const laneIds = new Map((report.timelines ?? []).map((t, i) => [t.resource, `lane-${i + 1}`]));
  for (const r of resources.slice(0, 200)) {
    const name = laneIds.has(r.resource) ? `<a href="#${laneIds.get(r.resource)}">${h(r.resource)}</a>` : h(r.resource);
    yield `\n<tr><td>${name}</td><td class="v-${r.readiness}">${r.readiness}</td><td>${h(r.highestAcceptedToken ?? '–')}</td><td>${r.findings}</td><td>${h(r.reason)}</td></tr>`;
  }
  yield `\n</tbody></table>${resources.length > 200 ? `<p class="note">${resources.length - 200} more resources are not listed (see the JSON report).</p>` : ''}</section>`;

  yield `\n<section id="timelines"><h2>Timelines</h2>`;
  yield `\n<p class="legend"><span class="sw acc"></span>accepted <span class="sw stale"></span>rejected-stale-fence <span class="sw rej"></span>rejected / error <span class="sw to"></span>timeout (#n: token) ▲ acquire ◇ expire/revoke ■ release <span class="sw ring"></span>what a finding is about <span class="bar"></span>lease <span class="bar inf"></span>lease end inferred from TTL <span class="bar open"></span>no end known</p>`;
  const timelines = report.timelines ?? [];
  if (timelines.length === 0) yield `\n<p class="note">No resource to draw${report.timelines === undefined ? '' : ' (only resources with findings are drawn by default; use --all-resources)'}.</p>`;
  for (let i = 0; i < timelines.length; i++) {
    yield '\n';
    yield* lane(timelines[i]!, `lane-${i + 1}`);
  }
  if ((report.timelinesOmitted ?? 0) > 0) yield `\n<p class="note">${report.timelinesOmitted} more resources are not drawn (raise --max-drawn).</p>`;
  yield `\n</section>`;

  yield `\n<section id="findings"><h2>Findings</h2>`;
  if (report.findings.length === 0) yield `\n<p>No findings.</p>`;
  else {
    yield `\n<ul class="toc">`;
    for (const f of report.findings) yield `\n<li><a href="#${f.id}">${f.id}</a> <span class="sev-${f.severity}">${f.severity}</span> <code>${h(f.rule)}</code> on ${h(f.resource)}</li>`;
    yield `\n</ul>`;
    for (const f of report.findings) {
      yield '\n';
      yield* finding(f, laneIds.get(f.resource));
    }
  }
  if (s.findingsOmitted > 0) yield `\n<p class="note">${s.findingsOmitted} more findings are not listed (raise --max-findings).</p>`;
  yield `\n</section>`;

  const i = report.input;
  yield `\n<section id="input"><h2>Input health</h2><p>${i.lines} lines = ${i.events} events + ${i.blank} blank + ${i.ignored} ignored + ${i.invalid} invalid${i.joined > 0 ? ` + ${i.joined} joined (partial container log lines)` : ''}${i.duplicates > 0 ? ` + ${i.duplicates} duplicates (copies of events already read, counted once)` : ''}</p><table><thead><tr><th>file</th><th>lines</th><th>events</th><th>blank</th><th>ignored</th><th>invalid</th></tr></thead><tbody>`;
  for (const f of i.files) yield `\n<tr><td>${h(f.file)}${f.sameAs !== undefined ? ` (the same file as ${h(f.sameAs)}, read once)` : ''}${f.error !== undefined ? ` <span class="sev-error">read stopped early: ${h(f.error)}</span>` : ''}</td><td>${f.lines}</td><td>${f.events}</td><td>${f.blank}</td><td>${f.ignored}</td><td>${f.invalid}</td></tr>`;
  yield `\n</tbody></table>`;
  if (i.problems.length > 0) {
    yield `\n<ul class="problems">`;
    for (const p of i.problems.slice(0, 50)) yield `\n<li><code>${h(p.file)}:${p.line}</code> ${h(p.reason)}</li>`;
    yield `\n</ul>`;
    if (i.invalid > Math.min(50, i.problems.length)) yield `\n<p class="note">${i.invalid - Math.min(50, i.problems.length)} more invalid lines.</p>`;
  }
  yield `\n</section><footer>stalewrite ${h(report.tool.version)}</footer></body></html>\n`;
}

function* finding(f: Finding, laneId: string | undefined): Generator<string> {
  yield `<article id="${f.id}" class="finding f-${f.severity}">
<h3>${f.id} <code>${h(f.rule)}</code> on ${laneId !== undefined ? `<a href="#${laneId}">${h(f.resource)}</a>` : h(f.resource)} <small class="sev-${f.severity}">${f.severity}, ${f.certainty}</small></h3>
<p>${h(f.message)}</p>${f.uncertainty !== undefined ? `\n<p class="note">Certainty ${f.certainty}: ${h(f.uncertainty.decide)}</p>` : ''}
<pre class="story">`;
  const story = renderStory(f);
  for (let k = 0; k < story.length; k++) yield (k > 0 ? '\n' : '') + h(story[k]!);
  yield `</pre>
<table class="row"><tr><th>symptom</th><td>${h(f.symptom)}</td></tr><tr><th>cause</th><td>${h(f.cause)}</td></tr><tr><th>check</th><td>${h(f.check)}</td></tr><tr><th>action</th><td>${h(f.action)}</td></tr></table>
<table><thead><tr><th>where</th><th>role</th><th>ts</th><th>type</th><th>owner</th><th>lease</th><th>token</th><th>result</th></tr></thead><tbody>`;
  for (const e of f.evidence) yield `<tr${e.decisive ? ' class="decisive"' : ''}><td><code>${h(`${e.file}:${e.line}`)}</code>${e.inferred ? ' (inferred)' : ''}</td><td>${h(e.role)}</td><td>${h(e.ts)}</td><td>${h(e.type)}</td><td>${h(e.ownerId ?? '')}</td><td>${h(e.leaseId ?? '')}</td><td>${h(e.fenceToken ?? '')}</td><td>${h(e.result)}</td></tr>`;
  yield `</tbody></table>
</article>`;
}

interface LeaseBar {
  lane: number;
  from: number;
  to: number;
  end: 'logged' | 'inferred' | 'open';
  label: string;
  keepalives: { t: number; ok: boolean }[];
}

/** One resource's swimlanes as inline SVG, an element at a time. */
function* lane(t: ResourceTimelineView, id: string): Generator<string> {
  const events = t.events.map((e) => ({ e, ms: Date.parse(e.ts) }));
  const t0 = minOf(events.map((x) => x.ms));
  const t1 = maxOf(events.map((x) => x.ms));
  const span = Math.max(1, t1 - t0);
  const x = (ms: number) => LEFT + 10 + ((ms - t0) / span) * (W - LEFT - 40);

  // Owners of leases, so lock events without an owner land in the right lane.
  const leaseOwner = new Map<string, string>();
  for (const { e } of events) if (e.type === 'acquire' && e.ownerId !== undefined && e.leaseId !== undefined) leaseOwner.set(e.leaseId, e.ownerId);
  const ownerOf = (e: TimelineEvent) => e.ownerId ?? (e.leaseId !== undefined ? leaseOwner.get(e.leaseId) : undefined) ?? (e.type === 'write' ? '(no owner)' : 'authority');
  const lanes: string[] = [];
  for (const { e } of events) {
    const o = ownerOf(e);
    if (!lanes.includes(o)) lanes.push(o);
  }
  const laneOf = (e: TimelineEvent) => lanes.indexOf(ownerOf(e));
  const y = (i: number) => TOP + i * LANE;

  // Lease bars: grant → first matching end; else last renewal + ttl (inferred); else open.
  const bars: LeaseBar[] = [];
  const open = new Map<string, { bar: LeaseBar; ttl?: number; lastRenew: number }>();
  const keyOf = (e: TimelineEvent) => e.leaseId ?? (e.fenceToken !== undefined ? `#${e.fenceToken}` : e.ownerId !== undefined ? `@${e.ownerId}` : undefined);
  for (const { e, ms } of events) {
    const key = keyOf(e);
    if (e.type === 'acquire' && e.result === 'granted' && key !== undefined) {
      const bar: LeaseBar = { lane: laneOf(e), from: ms, to: ms, end: 'open', label: [e.leaseId, e.fenceToken !== undefined ? `token ${e.fenceToken}` : undefined].filter(Boolean).join(', '), keepalives: [] };
      bars.push(bar);
      open.set(key, { bar, ttl: e.ttlMs, lastRenew: ms });
    } else if (key !== undefined && open.has(key)) {
      const o = open.get(key)!;
      if (e.type === 'keepalive') {
        o.bar.keepalives.push({ t: ms, ok: e.result === 'ok' });
        if (e.result === 'ok') {
          o.lastRenew = ms;
          if (e.ttlMs !== undefined) o.ttl = e.ttlMs;
        }
      } else if (e.type === 'expire' || e.type === 'revoke' || (e.type === 'release' && e.result === 'released')) {
        o.bar.to = ms;
        o.bar.end = 'logged';
        open.delete(key);
      }
    }
  }
  for (const o of open.values()) {
    if (o.ttl !== undefined) {
      o.bar.to = Math.min(o.lastRenew + o.ttl, t1 + span * 0.05);
      o.bar.end = 'inferred';
    } else o.bar.to = t1;
  }

  const height = TOP + lanes.length * LANE + 24;
  yield `<div class="res" id="${id}"><h3>${h(t.resource)} <span class="v-${t.readiness}">${t.readiness}</span></h3>${t.omitted > 0 ? `<p class="note">${t.omitted} events in the middle of this history are not drawn.</p>` : ''}`;
  yield `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" role="img" aria-label="timeline of ${h(t.resource)}">`;
  for (let i = 0; i < lanes.length; i++) {
    yield `<rect x="0" y="${y(i) - 4}" width="${W}" height="${LANE - 4}" class="lane${i % 2}"/>`;
    yield `<text x="6" y="${y(i) + 20}" class="lname">${h(clip(lanes[i]!, 22))}</text>`;
  }
  for (const b of bars) {
    const cls = b.end === 'inferred' ? 'lease inf' : b.end === 'open' ? 'lease open' : 'lease';
    yield `<rect x="${x(b.from).toFixed(1)}" y="${y(b.lane) + 22}" width="${Math.max(2, x(b.to) - x(b.from)).toFixed(1)}" height="10" class="${cls}"><title>${h(b.label)}: ${b.end === 'logged' ? 'end logged' : b.end === 'inferred' ? 'end inferred (last renewal + ttl)' : 'no end known'}</title></rect>`;
    if (b.end === 'inferred') yield `<line x1="${x(b.to).toFixed(1)}" x2="${x(b.to).toFixed(1)}" y1="${y(b.lane) + 18}" y2="${y(b.lane) + 36}" class="infend"/>`;
    for (const k of b.keepalives) yield `<line x1="${x(k.t).toFixed(1)}" x2="${x(k.t).toFixed(1)}" y1="${y(b.lane) + 20}" y2="${y(b.lane) + 34}" class="${k.ok ? 'ka' : 'ka failed'}"><title>keepalive ${k.ok ? 'ok' : 'failed'}</title></line>`;
  }
  for (const { e, ms } of events) {
    const cx = x(ms).toFixed(1);
    const cy = y(laneOf(e)) + 12;
    const tip = `${e.file}:${e.line} ${e.ts} ${e.type} ${e.result}${e.fenceToken !== undefined ? ` token=${e.fenceToken}` : ''}${e.leaseId !== undefined ? ` lease=${e.leaseId}` : ''}${e.highestAccepted !== undefined ? ` highest=${e.highestAccepted}` : ''}`;
    let mark = '';
    if (e.type === 'write') {
      mark = `<circle cx="${cx}" cy="${cy}" r="6" fill="${COLOR[e.result] ?? '#757575'}" class="write"/>` + `<text x="${cx}" y="${cy - 9}" class="tok">${h(e.fenceToken !== undefined ? `#${clip(e.fenceToken, 12)}` : 'no token')}</text>`;
    } else if (e.type === 'release') {
      mark = `<rect x="${(Number(cx) - 5).toFixed(1)}" y="${cy - 5}" width="10" height="10" class="${e.result === 'released' ? 'rel' : 'rel rejected'}"/>`;
    } else if (e.type === 'acquire') {
      mark = e.result === 'busy' ? `<text x="${cx}" y="${cy + 4}" class="busy">×</text>` : `<polygon points="${cx},${cy - 6} ${(Number(cx) + 6).toFixed(1)},${cy + 5} ${(Number(cx) - 6).toFixed(1)},${cy + 5}" class="acq"/>`;
    } else if (e.type === 'expire' || e.type === 'revoke') {
      mark = `<polygon points="${cx},${cy - 6} ${(Number(cx) + 6).toFixed(1)},${cy} ${cx},${cy + 6} ${(Number(cx) - 6).toFixed(1)},${cy}" class="exp"/>`;
    } else continue; // keepalives are ticks on the bar
    let ring = '';
    if (e.decisiveFor !== undefined) ring = `<circle cx="${cx}" cy="${cy}" r="10" class="ring"/>`;
    const target = e.decisiveFor?.[0] ?? e.findings?.[0];
    yield `${target !== undefined ? `<a href="#${target}">` : ''}<g class="ev${e.findings !== undefined ? ' cited' : ''}"><title>${h(tip)}`;
    // The ids citing an event one by one (escaped apart, as escapeHtml reads no further than a character).
    if (e.findings !== undefined) {
      yield ' — ';
      for (let k = 0; k < e.findings.length; k++) yield (k === 0 ? '' : ', ') + h(e.findings[k]!);
    }
    yield `</title>${mark}${ring}</g>${target !== undefined ? '</a>' : ''}`;
  }
  // Time axis.
  const axisY = TOP + lanes.length * LANE + 8;
  yield `<line x1="${LEFT}" x2="${W - 20}" y1="${axisY}" y2="${axisY}" class="axis"/>`;
  for (let k = 0; k <= 4; k++) {
    const ms = t0 + (span * k) / 4;
    yield `<text x="${x(ms).toFixed(1)}" y="${axisY + 14}" class="tick">t=${relative(Math.round(ms - t0))}</text>`;
  }
  yield '</svg></div>';
}

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:16px;color:#212121}
h1{font-size:22px}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
code,pre{font-family:ui-monospace,monospace}pre.story{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px}
.v-violated,.sev-error{color:#c62828;font-weight:600}.v-verified{color:#2e7d32;font-weight:600}.v-untested{color:#616161;font-weight:600}.v-inconclusive,.v-unconfirmed{color:#9e6a00;font-weight:600}.sev-warning{color:#9e6a00}.sev-info{color:#616161}
.note{color:#616161;font-style:italic}.finding{border-left:4px solid #bbb;padding-left:10px;margin:18px 0}.finding.f-error{border-color:#c62828}.finding.f-warning{border-color:#f9a825}
tr.decisive{background:#ffebee}.legend{font-size:12px}.sw{display:inline-block;width:10px;height:10px;border-radius:5px;margin:0 3px 0 10px}
.sw.acc{background:#2e7d32}.sw.stale{background:#1565c0}.sw.rej{background:#ef6c00}.sw.to{background:#8d6e63}.sw.ring{border:2px solid #d50000;background:none;width:8px;height:8px}
.bar{display:inline-block;width:24px;height:8px;background:#90a4ae;margin:0 3px 0 10px}.bar.inf{background:repeating-linear-gradient(90deg,#90a4ae 0 4px,#fff 4px 7px)}.bar.open{background:linear-gradient(90deg,#90a4ae,#fff)}
svg{display:block;margin:6px 0 18px;max-width:100%;height:auto}.lane0{fill:#fafafa}.lane1{fill:#f1f3f4}.lname{font-size:12px;fill:#37474f}
.lease{fill:#90a4ae}.lease.inf{fill:#cfd8dc;stroke:#607d8b;stroke-dasharray:4 3}.lease.open{fill:#cfd8dc}.infend{stroke:#607d8b;stroke-width:2;stroke-dasharray:3 2}
.ka{stroke:#263238;stroke-width:1.5}.ka.failed{stroke:#c62828}.write{stroke:#fff;stroke-width:1}.tok{font-size:10px;text-anchor:middle;fill:#263238}
.rel{fill:#546e7a}.rel.rejected{fill:#fff;stroke:#546e7a}.acq{fill:#37474f}.busy{font-size:14px;text-anchor:middle;fill:#9e9e9e}.exp{fill:#fff;stroke:#6d4c41;stroke-width:2}
.ring{fill:none;stroke:#d50000;stroke-width:3}.axis{stroke:#9e9e9e}.tick{font-size:10px;fill:#616161;text-anchor:middle}`;
