/** The terminal report: findings, per-resource readiness and input health, as cli-table3 tables. */
import Table from 'cli-table3';
import { worstResources, type Finding, type Readiness, type ReportView, type ResourceSummary } from '../model/report.js';
import { gather, joinLines } from './chunks.js';
import { escapeTerminal as t } from './escape.js';
import { readinessCounts, reasonLines } from './headline.js';
import { renderStory } from './story.js';
import { maxOf } from '../model/stats.js';

export interface TableOptions {
  /** ANSI colours (only on a TTY without NO_COLOR). */
  color: boolean;
  /** Terminal width to wrap to; no wrapping when undefined (files, pipes). */
  width?: number;
  /** Resources listed at most. */
  maxResources?: number;
  /** Finding stories printed at most. */
  maxStories?: number;
  /** Findings listed in the findings table at most (default 200); the rest are counted. */
  maxFindings?: number;
  /** Invalid lines listed at most. */
  maxProblems?: number;
}


export function renderTable(report: ReportView, options: TableOptions): string {
  return [...renderTableChunks(report, options)].join('');
}

/**
 * The same text in pieces of bounded size. Each of the two tables is one piece: cli-table3 lays a
 * table out from all its rows (column widths, wrapping), so rows written in groups would not line
 * up. They stay bounded as they are capped: maxFindings and maxResources rows, cells elided to
 * MAX_CELL characters (an evidence cell has a
 * line pair per evidence item of its finding).
 */
export function renderTableChunks(report: ReportView, options: TableOptions): Generator<string> {
  return gather(joinLines(tableLines(report, options)));
}

/** The report's lines (joined with newlines; the last is empty, so the text ends with one). */
function* tableLines(report: ReportView, options: TableOptions): Generator<string> {
  const c = colors(options.color);
  const style = options.color ? {} : { head: [] as string[], border: [] as string[] };
  const s = report.summary;

  yield c.bold(`stalewrite: ${c.verdict(s.verdict, s.verdict.toUpperCase())}`) +
    ` (${s.findings} finding${s.findings === 1 ? '' : 's'}: ${s.bySeverity.error} error, ${s.bySeverity.warning} warning, ${s.bySeverity.info} info; ` +
    `${readinessCounts(report)})`;
  for (const line of reasonLines(report)) yield `  ${t(line)}`;
  yield '';

  if (report.findings.length > 0) {
    const head = ['#', 'severity', 'rule', 'resource', 'finding', 'evidence'];
    const maxRows = options.maxFindings ?? 200;
    const rows = report.findings.slice(0, maxRows).map((f) => [f.id, f.severity, f.rule, elide(t(f.resource)), `${elide(t(f.message))}\n(${f.certainty})`, evidenceCell(f)]);
    const table = new Table({ head, style, ...fit(options.width, [head, ...rows], [3, 4]) });
    for (const r of rows) table.push([r[0]!, c.severity(r[1]!), ...r.slice(2)]);
    yield table.toString();
    if (report.findings.length > maxRows) yield `… ${report.findings.length - maxRows} more findings in --format json, markdown or html`;
    if (s.findingsOmitted > 0) yield `… ${s.findingsOmitted} more findings not listed (raise --max-findings)`;
    yield '';
    const maxStories = options.maxStories ?? 20;
    for (const f of report.findings.slice(0, maxStories)) {
      yield `${f.id} ${f.rule} on ${t(f.resource)}:`;
      for (const line of renderStory(f)) yield `  ${t(line)}`;
      if (f.uncertainty !== undefined) yield `  (${f.certainty}: ${t(f.uncertainty.decide)})`;
      yield '';
    }
    if (report.findings.length > maxStories) yield* [`… stories of ${report.findings.length - maxStories} more findings in --format json`, ''];
  } else {
    yield s.findingsOmitted > 0 ? `No findings listed: ${s.findingsOmitted} found, past --max-findings (raise it to list them).` : 'No findings.';
    yield '';
  }

  const max = options.maxResources ?? 50;
  const total = report.resources.length;
  if (total > 0) {
    const head = ['resource', 'readiness', 'highest token', 'writes\nacc/stale/other', 'why'];
    const rows = worstResources(report.resources, max).map(resourceRow);
    const table = new Table({ head, style, ...fit(options.width, [head, ...rows], [0, 4]) });
    for (const r of rows) table.push([r[0]!, c.verdict(r[1] as Readiness, r[1]!), ...r.slice(2)]);
    yield table.toString();
    if (total > max) yield `… ${total - max} more resources (see --format json)`;
    yield '';
  }

  const i = report.input;
  yield `input: ${i.files.length} file${i.files.length === 1 ? '' : 's'}, ${i.lines} lines${i.expanded > 0 ? ` + ${i.expanded} more records in batches` : ''} = ${i.events} events + ${i.blank} blank + ${i.ignored} ignored + ${i.invalid} invalid${i.joined > 0 ? ` + ${i.joined} joined (partial container log lines)` : ''}${i.duplicates > 0 ? ` + ${i.duplicates} duplicates (copies of events already read, counted once)` : ''}`;
  for (const f of i.files) if (f.sameAs !== undefined) yield `  ${t(f.file)}: the same file as ${t(f.sameAs)}, read once`;
  const maxProblems = options.maxProblems ?? 10;
  for (const p of i.problems.slice(0, maxProblems)) yield `  ${t(p.file)}:${p.line}: ${t(p.reason)}`;
  const more = i.invalid - Math.min(i.problems.length, maxProblems);
  if (more > 0) yield `  … ${more} more invalid lines (see --format json)`;
  for (const f of i.files) if (f.error !== undefined) yield c.red(`  ${t(f.file)}: read stopped early: ${t(f.error)}`);
  if (s.untrackedEvents > 0) yield c.red(`LIMIT: more than ${s.resources} resources; ${s.untrackedEvents} events of further resources were NOT analysed (raise --max-resources)`);
  yield '';
}

/**
 * Column widths for a terminal of `width` columns: columns start at their content's width and the
 * `flexible` ones (prose) shrink, widest first, down to 20, until the table fits. Other columns
 * (ids, file:line) keep their width so nothing is cut. No fixed widths when not on a terminal.
 */
function fit(width: number | undefined, rows: string[][], flexible: number[]): { colWidths?: number[]; wordWrap?: boolean } {
  if (width === undefined) return {};
  const w = rows[0]!.map((_, c) => 2 + maxOf(rows.map((r) => maxOf(r[c]!.split('\n').map((l) => l.length), 0)), 0));
  const MIN = 20;
  let excess = w.reduce((a, b) => a + b, 0) + w.length + 1 - width;
  while (excess > 0) {
    let widest = -1;
    for (const c of flexible) if (w[c]! > MIN && (widest === -1 || w[c]! > w[widest]!)) widest = c;
    if (widest === -1) break;
    const next = Math.max(MIN, ...flexible.filter((c) => c !== widest).map((c) => w[c]!));
    const cut = Math.min(excess, Math.max(1, w[widest]! - next));
    w[widest]! -= cut;
    excess -= cut;
  }
  return { colWidths: w, wordWrap: true };
}

function evidenceCell(f: Finding): string {
  return f.evidence.map((e) => `${elide(t(e.file))}:${e.line}\n  ${elide(t(e.role))}`).join('\n');
}

function resourceRow(r: ResourceSummary): string[] {
  return [elide(t(r.resource)), r.readiness, elide(r.highestAcceptedToken ?? '-'), `${r.writes.accepted}/${r.writes.rejectedStaleFence}/${r.writes.rejectedOther}`, elide(t(r.reason))];
}

/** Longest text put in a table cell: the table's layout costs grow faster than its text (an 8 KB owner id took seconds). */
const MAX_CELL = 300;

/** A cell's text, with the middle of a very long text elided (the JSON report keeps it whole). */
function elide(s: string): string {
  if (s.length <= MAX_CELL) return s;
  return `${s.slice(0, 200)}…(${s.length - 260} more characters)…${s.slice(-60)}`;
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
    verdict: (v, s) => (v === 'violated' ? red(s) : v === 'verified' ? green(s) : v === 'untested' ? dim(s) : yellow(s)),
  };
}
