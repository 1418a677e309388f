/** A postmortem-ready Markdown report: summary, readiness, findings by rule with stories, input health. */
import { byReadiness, type EvidenceItem, type Finding, type Report } from '../model/report.js';
import { escapeMarkdown as md, escapeTerminal, markdownFence } from './escape.js';
import { readinessCounts, reasonLines } from './headline.js';
import { renderStory } from './story.js';

export interface MarkdownOptions {
  /** Resources listed in the readiness table at most (violated first). */
  maxResources?: number;
  /** Invalid lines listed at most. */
  maxProblems?: number;
  /** Findings shown in full per rule (the rest are counted). */
  maxFindingsPerRule?: number;
}


export function renderMarkdown(report: Report, options: MarkdownOptions = {}): string {
  const out: string[] = [];
  const s = report.summary;
  out.push(`# stalewrite report: ${s.verdict.toUpperCase()}`, '');
  out.push(
    `**${s.findings}** finding${s.findings === 1 ? '' : 's'} (${s.bySeverity.error} error, ${s.bySeverity.warning} warning, ${s.bySeverity.info} info` +
      `${s.possibleBySeverity.error + s.possibleBySeverity.warning + s.possibleBySeverity.info > 0 ? `; ${s.possibleBySeverity.error + s.possibleBySeverity.warning + s.possibleBySeverity.info} only possible` : ''}) ` +
      `on ${readinessCounts(report)}.`,
    '',
  );
  const reasons = reasonLines(report);
  if (reasons.length > 0) out.push(...reasons.map((r) => `- ${md(r)}`), '');
  const rules = Object.entries(s.byRule);
  if (rules.length > 0) {
    out.push('| rule | severity | findings |', '|---|---|---|');
    for (const [rule, n] of rules) {
      const sev = [...new Set(report.findings.filter((f) => f.rule === rule).map((f) => f.severity))].join(', ');
      out.push(`| [\`${rule}\`](#rule-${rule}) | ${sev} | ${n} |`);
    }
    out.push('');
  }
  if (s.findingsOmitted > 0) out.push(`> ${s.findingsOmitted} findings are not listed (past --max-findings).`, '');
  if (s.untrackedEvents > 0) out.push(`> **Limit reached:** ${s.untrackedEvents} events of resources past --max-resources were NOT analysed.`, '');

  out.push('## Readiness', '');
  out.push(
    'The article\'s criterion: once token 2 is accepted, every request with token 1 gets an explicit stale result, the value stays token 2\'s, and an old release does not change lease B.',
    '',
  );
  const max = options.maxResources ?? 100;
  const sorted = report.resources.slice().sort(byReadiness);
  out.push('| resource | readiness | highest accepted token | writes accepted / stale-rejected / other | findings | why |', '|---|---|---|---|---|---|');
  for (const r of sorted.slice(0, max)) {
    out.push(`| ${md(r.resource)} | **${r.readiness}** | ${r.highestAcceptedToken ?? '–'} | ${r.writes.accepted} / ${r.writes.rejectedStaleFence} / ${r.writes.rejectedOther} | ${r.findings} | ${md(r.reason)} |`);
  }
  if (sorted.length > max) out.push('', `${sorted.length - max} more resources are not listed (see the JSON report).`);
  out.push('');

  if (report.findings.length > 0) {
    out.push('## Findings', '');
    const perRule = options.maxFindingsPerRule ?? 20;
    const byRule = new Map<string, Finding[]>();
    for (const f of report.findings) {
      let list = byRule.get(f.rule);
      if (list === undefined) byRule.set(f.rule, (list = []));
      list.push(f);
    }
    for (const [rule, list] of byRule) {
      const first = list[0]!;
      out.push(`<a id="rule-${rule}"></a>`, '', `### \`${rule}\` (${first.severity}): ${list.length} finding${list.length === 1 ? '' : 's'}`, '');
      out.push('| symptom | cause | check | action |', '|---|---|---|---|', `| ${md(first.symptom)} | ${md(first.cause)} | ${md(first.check)} | ${md(first.action)} |`, '');
      out.push(`See [docs/rules/${rule}.md](docs/rules/${rule}.md).`, '');
      for (const f of list.slice(0, perRule)) renderFinding(out, f);
      if (list.length > perRule) out.push(`${list.length - perRule} more \`${rule}\` findings are not shown (see the JSON report).`, '');
    }
  }

  const i = report.input;
  out.push('## Input health', '');
  out.push('| file | lines | events | blank | ignored | invalid |', '|---|---|---|---|---|---|');
  for (const f of i.files) out.push(`| ${md(f.file)}${f.sameAs !== undefined ? ` (the same file as ${md(f.sameAs)}, read once)` : ''}${f.error !== undefined ? ` (read stopped early: ${md(f.error)})` : ''} | ${f.lines} | ${f.events} | ${f.blank} | ${f.ignored} | ${f.invalid} |`);
  if (i.files.length > 1) out.push(`| **total** | ${i.lines} | ${i.events} | ${i.blank} | ${i.ignored} | ${i.invalid} |`);
  if (i.duplicates > 0) out.push('', `${i.duplicates} duplicate events (copies of events already read, as at-least-once delivery makes them) were counted once and not analysed again.`);
  out.push('');
  const maxProblems = options.maxProblems ?? 20;
  if (i.problems.length > 0) {
    out.push('First invalid lines:', '');
    for (const p of i.problems.slice(0, maxProblems)) out.push(`- \`${codeSpan(`${p.file}:${p.line}`)}\` ${md(p.reason)}`);
    const more = i.invalid - Math.min(i.problems.length, maxProblems);
    if (more > 0) out.push(`- … and ${more} more`);
    out.push('');
  }
  out.push(`<sub>stalewrite ${md(report.tool.version)}</sub>`, '');
  return out.join('\n');
}

function renderFinding(out: string[], f: Finding): void {
  out.push(`#### ${f.id} on ${md(f.resource)} (${f.certainty})`, '', md(f.message), '');
  if (f.uncertainty !== undefined) out.push(`*Certainty ${f.certainty}:* ${md(f.uncertainty.decide)}`, '');
  const story = renderStory(f).map(escapeTerminal).join('\n');
  const fence = markdownFence(story);
  out.push(`${fence}text`, story, fence, '');
  out.push('| where | role | ts | type | owner | lease | token | result |', '|---|---|---|---|---|---|---|---|');
  for (const e of f.evidence) out.push(evidenceRow(e));
  out.push('');
}

function evidenceRow(e: EvidenceItem): string {
  const cell = (v: string | undefined) => (v === undefined ? '' : md(v));
  return `| ${md(`${e.file}:${e.line}`)}${e.inferred ? ' (inferred)' : ''} | ${md(e.role)} | ${md(e.ts)} | ${e.type} | ${cell(e.ownerId)} | ${cell(e.leaseId)} | ${e.fenceToken ?? ''} | ${md(e.result)} |`;
}

/** Text for inside a single-backtick code span: backticks cannot close it. */
function codeSpan(text: string): string {
  return escapeTerminal(text).replace(/`/g, "'");
}
