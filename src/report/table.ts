/** The terminal report: findings, per-resource readiness and input health, as cli-table3 tables. */
import Table from 'cli-table3';
import type { Finding, Readiness, Report, ResourceSummary } from '../model/report.js';
import { escapeTerminal as t } from './escape.js';

export interface TableOptions {
  /** ANSI colours (only on a TTY without NO_COLOR). */
  color: boolean;
  /** Terminal width to wrap to; no wrapping when undefined (files, pipes). */
  width?: number;
  /** Resources listed at most. */
  maxResources?: number;
  /** Invalid lines listed at most. */
  maxProblems?: number;
}

const ORDER: Record<Readiness, number> = { violated: 0, verified: 1, untested: 2 };

export function renderTable(report: Report, options: TableOptions): string {
  const c = colors(options.color);
  const style = options.color ? {} : { head: [] as string[], border: [] as string[] };
  const out: string[] = [];
  const s = report.summary;

  out.push(c.bold(`stalewrite: ${c.verdict(s.verdict, s.verdict.toUpperCase())}`) +
    ` (${s.findings} finding${s.findings === 1 ? '' : 's'}: ${s.bySeverity.error} error, ${s.bySeverity.warning} warning, ${s.bySeverity.info} info; ` +
    `${s.resources} resource${s.resources === 1 ? '' : 's'}: ${s.byReadiness.violated} violated, ${s.byReadiness.verified} verified, ${s.byReadiness.untested} untested)`);
  out.push('');

  if (report.findings.length > 0) {
    const table = new Table({ head: ['#', 'severity', 'rule', 'resource', 'finding', 'evidence'], style, ...fit(options.width, [5, 10, 22, 18, 44, 40]) });
    for (const f of report.findings) {
      table.push([f.id, c.severity(f.severity), f.rule, t(f.resource), `${t(f.message)}\n(${f.certainty})`, evidenceCell(f)]);
    }
    out.push(table.toString());
    if (s.findingsOmitted > 0) out.push(`… ${s.findingsOmitted} more findings not listed (raise --max-findings)`);
    out.push('');
  } else {
    out.push('No findings.');
    out.push('');
  }

  const max = options.maxResources ?? 50;
  const sorted = report.resources.slice().sort((a, b) => ORDER[a.readiness] - ORDER[b.readiness] || cmp(a.resource, b.resource));
  if (sorted.length > 0) {
    const table = new Table({ head: ['resource', 'readiness', 'highest token', 'writes\nacc/stale/other', 'why'], style, ...fit(options.width, [24, 11, 22, 17, 46]) });
    for (const r of sorted.slice(0, max)) table.push(resourceRow(r, c));
    out.push(table.toString());
    if (sorted.length > max) out.push(`… ${sorted.length - max} more resources (see --format json)`);
    out.push('');
  }

  const i = report.input;
  out.push(`input: ${i.files.length} file${i.files.length === 1 ? '' : 's'}, ${i.lines} lines = ${i.events} events + ${i.blank} blank + ${i.ignored} ignored + ${i.invalid} invalid`);
  const maxProblems = options.maxProblems ?? 10;
  for (const p of i.problems.slice(0, maxProblems)) out.push(`  ${t(p.file)}:${p.line}: ${t(p.reason)}`);
  const more = i.invalid - Math.min(i.problems.length, maxProblems);
  if (more > 0) out.push(`  … ${more} more invalid lines (see --format json)`);
  for (const f of i.files) if (f.error !== undefined) out.push(c.red(`  ${t(f.file)}: read stopped early: ${t(f.error)}`));
  return out.join('\n') + '\n';
}

/**
 * Column widths for a terminal of `width` columns: the two widest columns shrink to fit.
 * No fixed widths (and no wrapping) when not writing to a terminal.
 */
function fit(width: number | undefined, widths: number[]): { colWidths?: number[]; wordWrap?: boolean } {
  if (width === undefined) return {};
  const total = widths.reduce((a, b) => a + b, 0) + widths.length + 1;
  const w = widths.slice();
  let excess = total - width;
  const order = w.map((_, i) => i).sort((a, b) => w[b]! - w[a]!).slice(0, 2);
  for (const i of order) {
    if (excess <= 0) break;
    const cut = Math.min(excess, w[i]! - 16);
    if (cut > 0) {
      w[i]! -= cut;
      excess -= cut;
    }
  }
  return { colWidths: w, wordWrap: true };
}

function evidenceCell(f: Finding): string {
  return f.evidence.map((e) => `${t(e.file)}:${e.line} ${t(e.role)}`).join('\n');
}

function resourceRow(r: ResourceSummary, c: Colors): string[] {
  return [t(r.resource), c.verdict(r.readiness, r.readiness), r.highestAcceptedToken ?? '-', `${r.writes.accepted}/${r.writes.rejectedStaleFence}/${r.writes.rejectedOther}`, r.reason];
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface Colors {
  bold(s: string): string;
  red(s: string): string;
  severity(s: string): string;
  verdict(v: Readiness, s: string): string;
}

function colors(on: boolean): Colors {
  const wrap = (code: string) => (s: string) => (on ? `\u001b[${code}m${s}\u001b[0m` : s);
  const red = wrap('31');
  const yellow = wrap('33');
  const green = wrap('32');
  const dim = wrap('2');
  return {
    bold: wrap('1'),
    red,
    severity: (s) => (s === 'error' ? red(s) : s === 'warning' ? yellow(s) : dim(s)),
    verdict: (v, s) => (v === 'violated' ? red(s) : v === 'verified' ? green(s) : yellow(s)),
  };
}
