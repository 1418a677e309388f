/** A postmortem-ready Markdown report: summary, readiness, findings by rule with stories, input health. */
import { worstResources, type EvidenceItem, type Finding, type ReportView } from '../model/report.js';
import { escapeMarkdown as md, escapeTerminal, markdownFence } from './escape.js';
import { gather, joinLines } from './chunks.js';
import { readinessCounts, reasonLines } from './headline.js';
import { renderStory } from './story.js';
import { MAX_DIAGRAMS, MAX_LABEL, sequenceDiagram } from './mermaid.js';
import { checkWhole } from '../model/options.js';

export interface MarkdownOptions {
  /** Resources listed in the readiness table at most (violated first). */
  maxResources?: number;
  /** Invalid lines listed at most. */
  maxProblems?: number;
  /** Findings shown in full per rule (the rest are counted). */
  maxFindingsPerRule?: number;
  /** Findings given a Mermaid sequence diagram, in the order shown (default MAX_DIAGRAMS; the rest say they have none). */
  maxDiagrams?: number;
}


export function renderMarkdown(report: ReportView, options: MarkdownOptions = {}): string {
  return [...renderMarkdownChunks(report, options)].join('');
}

/** The same Markdown in pieces of bounded size, gathered from its lines. */
export function renderMarkdownChunks(report: ReportView, options: MarkdownOptions = {}): Generator<string> {
  checkWhole(options as Readonly<Record<string, unknown>>, [['maxDiagrams', 0]]);
  return gather(joinLines(markdownLines(report, options)));
}

/** The report's lines (joined with newlines; the last is empty, so the text ends with one). */
function* markdownLines(report: ReportView, options: MarkdownOptions): Generator<string> {
  const s = report.summary;
  yield* [`# stalewrite report: ${s.verdict.toUpperCase()}`, ''];
  yield* [
    `**${s.findings}** finding${s.findings === 1 ? '' : 's'} (${s.bySeverity.error} error, ${s.bySeverity.warning} warning, ${s.bySeverity.info} info` +
      `${s.possibleBySeverity.error + s.possibleBySeverity.warning + s.possibleBySeverity.info > 0 ? `; ${s.possibleBySeverity.error + s.possibleBySeverity.warning + s.possibleBySeverity.info} only possible` : ''}) ` +
      `on ${readinessCounts(report)}.`,
    '',
  ];
  const reasons = reasonLines(report);
  if (reasons.length > 0) yield* [...reasons.map((r) => `- ${md(r)}`), ''];
  const rules = Object.entries(s.byRule);
  if (rules.length > 0) {
    yield* ['| rule | severity | findings |', '|---|---|---|'];
    for (const [rule, n] of rules) {
      const sev = [...new Set(report.findings.filter((f) => f.rule === rule).map((f) => f.severity))].join(', ');
      yield `| [\`${rule}\`](#rule-${rule}) | ${sev} | ${n} |`;
    }
    yield '';
  }
  if (s.findingsOmitted > 0) yield* [`> ${s.findingsOmitted} findings are not listed (past --max-findings).`, ''];
  if (s.untrackedEvents > 0) yield* [`> **Limit reached:** ${s.untrackedEvents} events of resources past --max-resources were NOT analysed.`, ''];

  yield* ['## Readiness', ''];
  yield* [
    'The article\'s criterion: once token 2 is accepted, every request with token 1 gets an explicit stale result, the value stays token 2\'s, and an old release does not change lease B.',
    '',
  ];
  const max = options.maxResources ?? 100;
  yield* ['| resource | readiness | highest accepted token | writes accepted / stale-rejected / other | findings | why |', '|---|---|---|---|---|---|'];
  for (const r of worstResources(report.resources, max)) {
    yield `| ${md(r.resource)} | **${r.readiness}** | ${r.highestAcceptedToken ?? '–'} | ${r.writes.accepted} / ${r.writes.rejectedStaleFence} / ${r.writes.rejectedOther} | ${r.findings} | ${md(r.reason)} |`;
  }
  if (report.resources.length > max) yield* ['', `${report.resources.length - max} more resources are not listed (see the JSON report).`];
  yield '';

  if (report.findings.length > 0) {
    yield* ['## Findings', ''];
    const perRule = options.maxFindingsPerRule ?? 20;
    const byRule = new Map<string, Finding[]>();
    for (const f of report.findings) {
      let list = byRule.get(f.rule);
      if (list === undefined) byRule.set(f.rule, (list = []));
      list.push(f);
    }
    const shown = [...byRule.values()].reduce((n, list) => n + Math.min(list.length, perRule), 0);
    const diagrams = { left: options.maxDiagrams ?? MAX_DIAGRAMS, max: options.maxDiagrams ?? MAX_DIAGRAMS };
    if (shown > diagrams.max) yield* [`> Sequence diagrams are drawn for the first ${diagrams.max} of the ${shown} findings shown; the other ${shown - diagrams.max} have none (raise --max-diagrams).`, ''];
    for (const [rule, list] of byRule) {
      const first = list[0]!;
      yield* [`<a id="rule-${rule}"></a>`, '', `### \`${rule}\` (${first.severity}): ${list.length} finding${list.length === 1 ? '' : 's'}`, ''];
      yield* ['| symptom | cause | check | action |', '|---|---|---|---|', `| ${md(first.symptom)} | ${md(first.cause)} | ${md(first.check)} | ${md(first.action)} |`, ''];
      yield* [`See [docs/rules/${rule}.md](docs/rules/${rule}.md).`, ''];
      for (const f of list.slice(0, perRule)) yield* findingLines(f, diagrams.left-- > 0 ? 'draw' : diagrams.max);
      if (list.length > perRule) yield* [`${list.length - perRule} more \`${rule}\` findings are not shown (see the JSON report).`, ''];
    }
  }

  const i = report.input;
  yield* ['## Input health', ''];
  yield* ['| file | lines | events | blank | ignored | invalid |', '|---|---|---|---|---|---|'];
  for (const f of i.files) yield `| ${md(f.file)}${f.sameAs !== undefined ? ` (the same file as ${md(f.sameAs)}, read once)` : ''}${f.error !== undefined ? ` (read stopped early: ${md(f.error)})` : ''} | ${f.lines} | ${f.events} | ${f.blank} | ${f.ignored} | ${f.invalid} |`;
  if (i.files.length > 1) yield `| **total** | ${i.lines} | ${i.events} | ${i.blank} | ${i.ignored} | ${i.invalid} |`;
  if (i.duplicates > 0) yield* ['', `${i.duplicates} duplicate events (copies of events already read, as at-least-once delivery makes them) were counted once and not analysed again.`];
  yield '';
  const maxProblems = options.maxProblems ?? 20;
  if (i.problems.length > 0) {
    yield* ['First invalid lines:', ''];
    for (const p of i.problems.slice(0, maxProblems)) yield `- \`${codeSpan(`${p.file}:${p.line}`)}\` ${md(p.reason)}`;
    const more = i.invalid - Math.min(i.problems.length, maxProblems);
    if (more > 0) yield `- … and ${more} more`;
    yield '';
  }
  yield* [`<sub>stalewrite ${md(report.tool.version)}</sub>`, ''];
}

/** A finding in full; `diagram` is 'draw', or the --max-diagrams it is past. */
function* findingLines(f: Finding, diagram: 'draw' | number): Generator<string> {
  yield* [`#### ${f.id} on ${md(f.resource)} (${f.certainty})`, '', md(f.message), ''];
  if (f.uncertainty !== undefined) yield* [`*Certainty ${f.certainty}:* ${md(f.uncertainty.decide)}`, ''];
  // Line by line: a backtick run never spans a newline, so the longest fence of a line is the story's.
  const story = renderStory(f).map(escapeTerminal);
  const fence = story.map(markdownFence).reduce((a, b) => (b.length > a.length ? b : a), markdownFence(''));
  yield* [`${fence}text`, ...story, fence, ''];
  yield* diagramLines(f, diagram);
  yield* ['| where | role | ts | type | owner | lease | token | result |', '|---|---|---|---|---|---|---|---|'];
  for (const e of f.evidence) yield evidenceRow(e);
  yield '';
}

/** The finding's sequence diagram in a `mermaid` fence (its text has no backtick), and what it leaves out. */
function* diagramLines(f: Finding, diagram: 'draw' | number): Generator<string> {
  if (diagram !== 'draw') {
    yield* [`*No sequence diagram: past the first ${diagram} findings (--max-diagrams).*`, ''];
    return;
  }
  const d = sequenceDiagram(f);
  if (d === undefined) return;
  yield* ['```mermaid', ...d.lines, '```', ''];
  const notes = [
    d.omitted > 0 ? `The diagram leaves out ${d.omitted} of the ${d.drawn + d.omitted} events, to stay under Mermaid's text size limit; the evidence table lists them all.` : undefined,
    d.clipped ? `Names and values longer than ${MAX_LABEL} characters are shortened in the diagram; the evidence table has them in full.` : undefined,
  ].filter((n) => n !== undefined);
  if (notes.length > 0) yield* [`*${notes.join(' ')}*`, ''];
}

function evidenceRow(e: EvidenceItem): string {
  const cell = (v: string | undefined) => (v === undefined ? '' : md(v));
  return `| ${md(`${e.file}:${e.line}`)}${e.inferred ? ' (inferred)' : ''} | ${md(e.role)} | ${md(e.ts)} | ${e.type} | ${cell(e.ownerId)} | ${cell(e.leaseId)} | ${e.fenceToken ?? ''} | ${md(e.result)} |`;
}

/** Text for inside a single-backtick code span: backticks cannot close it. */
function codeSpan(text: string): string {
  return escapeTerminal(text).replace(/`/g, "'");
}
