/**
 * GitHub Actions workflow annotations: `::error file=…,line=…,title=…::message`, pointing at the
 * log line of the decisive evidence. GitHub shows 10 errors and 10 warnings per step, so the most
 * severe are printed first, up to a cap per level, and a notice says how many were left out.
 */
import type { Finding, ReportView } from '../model/report.js';
import { bySeverity } from '../model/policy.js';
import { gather } from './chunks.js';
import { escapeGithubData, escapeGithubProperty, escapeTerminal } from './escape.js';
import { readinessCounts } from './headline.js';
import { renderStory } from './story.js';

export interface GithubOptions {
  /** Annotations per level (error, warning, notice). Default 10. */
  maxPerLevel?: number;
}

const LEVEL = { error: 'error', warning: 'warning', info: 'notice' } as const;

export function renderGithub(report: ReportView, options: GithubOptions = {}): string {
  return [...renderGithubChunks(report, options)].join('');
}

/** The same annotations in pieces of bounded size (a story is written line by line). */
export function renderGithubChunks(report: ReportView, options: GithubOptions = {}): Generator<string> {
  return gather(githubPieces(report, options));
}

function* githubPieces(report: ReportView, options: GithubOptions): Generator<string> {
  const max = options.maxPerLevel ?? 10;
  const count = { error: 0, warning: 0, notice: 0 };
  let left = 0;
  for (const f of report.findings.slice().sort(bySeverity)) {
    const level = LEVEL[f.severity];
    if (count[level] >= max) {
      left++;
      continue;
    }
    count[level]++;
    yield* annotation(level, f);
    yield '\n';
  }
  left += report.summary.findingsOmitted;
  const s = report.summary;
  yield `::notice title=stalewrite::${escapeGithubData(`verdict ${s.verdict}: ${s.findings} findings (${s.bySeverity.error} error, ${s.bySeverity.warning} warning, ${s.bySeverity.info} info) on ${readinessCounts(report)}; ${report.input.invalid} invalid lines${left > 0 ? `; ${left} findings not annotated (see the step summary or --format json)` : ''}${s.reasons.length > 0 ? `\n${s.reasons.map((r) => escapeTerminal(r.message)).join('\n')}` : ''}`)}` + '\n';
}

function* annotation(level: string, f: Finding): Generator<string> {
  // The decisive evidence is the last event the finding rests on (the late write, the old release…).
  const decisive = f.evidence.find((e) => e.decisive) ?? f.evidence[f.evidence.length - 1];
  const props = [
    ...(decisive !== undefined && decisive.file !== 'stdin' ? [`file=${escapeGithubProperty(escapeTerminal(decisive.file))}`, `line=${decisive.line}`] : []),
    `title=${escapeGithubProperty(escapeTerminal(`stalewrite ${f.rule} on ${f.resource}`))}`,
  ].join(',');
  // The message line by line: escapeGithubData of the joined lines is the same, newlines becoming %0A.
  yield `::${level} ${props}::${escapeGithubData(`${escapeTerminal(f.message)} (${f.certainty})`)}`;
  for (const line of renderStory(f)) yield `%0A${escapeGithubData(escapeTerminal(line))}`;
  yield `%0A${escapeGithubData(`action: ${f.action}`)}`;
}
