/**
 * `stalewrite timeline`: every event of one resource in merged order, article-style, with
 * relative times, the highest accepted token as it evolves, and markers on the events that
 * findings point at. Returns raw text: the caller escapes it for the terminal.
 */
import type { ReportView } from '../model/report.js';
import { eventText, relative } from './story.js';
import { minOf, maxOf } from '../model/stats.js';

export function renderTimeline(report: ReportView, resource: string): string[] {
  const view = report.timelines?.find((t) => t.resource === resource);
  if (view === undefined || view.events.length === 0) return [];
  const byId = new Map(report.findings.map((f) => [f.id, f]));
  // Relative to the earliest event, so a clock that went back never shows a negative time.
  const t0 = minOf(view.events.map((e) => Date.parse(e.ts)));
  const lastOfFile = new Map<string, number>();
  const rows = view.events.map((e) => {
    const ms = Date.parse(e.ts);
    const marks = (e.findings ?? []).map((id) => {
      const f = byId.get(id)!;
      return `${e.decisiveFor?.includes(id) ? '<-' : '<.'} ${id} ${f.rule}`;
    });
    const before = lastOfFile.get(e.file);
    if (before !== undefined && ms < before) marks.unshift(`<< clock went back ${relative(before - ms)}`);
    lastOfFile.set(e.file, ms);
    return {
      t: `t=${relative(ms - t0)}`,
      text: eventText(e, resource),
      where: `${e.file}:${e.line}`,
      highest: e.highestAccepted === undefined ? '' : `highest=${e.highestAccepted}`,
      marks: marks.join('  '),
    };
  });
  const w = (k: 't' | 'text' | 'highest' | 'where') => maxOf(rows.map((r) => r[k].length), 0) + 2;
  const [tw, xw, hw, ww] = [w('t'), w('text'), w('highest'), w('where')];
  const out = [`${resource} (${view.readiness}): ${view.events.length} events${view.omitted > 0 ? `, ${view.omitted} in the middle not shown` : ''}`, ''];
  for (const r of rows) out.push(`${r.t.padEnd(tw)}${r.text.padEnd(xw)}${r.highest.padEnd(hw)}${r.where.padEnd(ww)}${r.marks}`.trimEnd());
  const cited = report.findings.filter((f) => f.resource === resource);
  if (cited.length > 0) {
    out.push('', 'findings (<- the event a finding is about, <. other evidence):');
    for (const f of cited) out.push(`  ${f.id} ${f.severity} ${f.rule} (${f.certainty}): ${f.message}`);
  }
  return out;
}
